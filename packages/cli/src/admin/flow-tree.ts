import type { AdminApi, ChildSummary } from '@workq/sdk';

/** The most jobs of a flow one `workq jobs show` reads to draw it; past it, the rest are counted, not drawn. */
const MOST_NODES = 50;

/** A job as its flow's tree needs it: its own line, and its children (the first of `childCount`). */
interface FlowNode {
  id: string;
  name: string;
  state: string;
  children?: readonly ChildSummary[] | undefined;
  childCount?: number | undefined;
}

/**
 * `job`'s flow below it, one job a line, each with its type, id and state, children indented under their
 * parent in enqueue order:
 *
 *     buildReport 0193… waiting-children
 *     ├─ renderPage 0193… completed
 *     └─ renderPage 0193… ready
 *
 * Each child's own children are read with `admin.job`, at most `MOST_NODES` of them in all; the others, and
 * children past those a status lists, are counted on a last line.
 */
export async function drawFlow(admin: AdminApi, job: FlowNode): Promise<string> {
  const lines = [`${job.name} ${job.id} ${job.state}`];
  let read = 0;
  const draw = async (node: FlowNode, indent: string): Promise<void> => {
    const children = node.children ?? [];
    const unlisted = Math.max(0, (node.childCount ?? children.length) - children.length);
    for (const [i, child] of children.entries()) {
      const last = i === children.length - 1 && unlisted === 0;
      if (read >= MOST_NODES) {
        lines.push(`${indent}└─ … ${children.length - i + unlisted} more (workq jobs show <child id>)`);
        return;
      }
      lines.push(`${indent}${last ? '└─' : '├─'} ${child.name} ${child.id} ${child.state}`);
      read++;
      const status = await admin.job(child.id);
      if ((status.childCount ?? 0) > 0) await draw(status, `${indent}${last ? '   ' : '│  '}`);
    }
    if (unlisted > 0) lines.push(`${indent}└─ … ${unlisted} more`);
  };
  await draw(job, '');
  return `${lines.join('\n')}\n`;
}
