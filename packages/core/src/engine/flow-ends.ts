import { CHILD_FAILED_CODE, type ChildrenPageQuery, FLOW_CANCELLED_CODE } from './flow-store.ts';
import type { JobRead, JobRecord } from './store-records.ts';

/** What finding a flow's ends reads: a job by id, and a parent's children page by page (`FlowStore`). */
export interface FlowReader {
  getJob(id: string, read?: JobRead): Promise<JobRecord | null>;
  listChildren(parentId: string, page: ChildrenPageQuery): Promise<JobRecord[]>;
}

/** A job whose end may have ended others through its flow: what `flowEnds` reads of it. */
export type FlowMember = Pick<JobRecord, 'id'> & Partial<Pick<JobRecord, 'parentId' | 'onFailure' | 'childCount'>>;

/** The jobs one end ended through its flow: the parents it made dead, nearest first, and the jobs cancelled. */
export interface FlowEnds {
  dead: JobRecord[];
  cancelled: JobRecord[];
}

/**
 * Children read per request while walking a flow down, and the bytes of their results and errors that end a page
 * sooner: the walk holds one page at a time, whatever the children carry. Their payloads are left unread.
 */
const PAGE = { limit: 1_000, maxBytes: 16 * 1024 * 1024, withoutPayload: true };

/**
 * The jobs that the end of `ended` at `at` (dead or cancelled) ended through its flow in the same atomic step
 * (`FlowStore`, "A child's end" and "Cancelling a parent"), which the store makes but does not name. Up: each
 * parent made dead of a child (`CHILD_FAILED`, finished at `at`), for as long as each was itself a child under
 * `fail-parent`. Down from the highest of them (or `ended`): every job cancelled with the flow at `at`
 * (`FLOW_CANCELLED`), through the jobs that ended in this step. Read back after the change: a job that another
 * operation changed since is left out. A job with neither parent nor children reads nothing.
 */
export async function flowEnds(reader: FlowReader, ended: FlowMember, at: Date): Promise<FlowEnds> {
  const dead: JobRecord[] = [];
  let top: FlowMember = ended;
  while (top.parentId && (top.onFailure ?? 'fail-parent') === 'fail-parent') {
    // Its error and its flow links say whether it died of this end; its payload is left unread.
    const parent = await reader.getJob(top.parentId, { withoutPayload: true });
    if (!parent || !endedAt(parent, 'dead', CHILD_FAILED_CODE, at)) break;
    dead.push(parent);
    top = parent;
  }
  const through = new Set([ended.id, ...dead.map((job) => job.id)]);
  const cancelled: JobRecord[] = [];
  for (let parents = (top.childCount ?? 0) > 0 ? [top.id] : []; parents.length > 0; ) {
    const below: string[] = [];
    for (const parentId of parents) {
      for (let afterId: string | undefined; ; ) {
        const page = await reader.listChildren(parentId, { ...PAGE, ...(afterId ? { afterId } : {}) });
        // A page cut by its bytes may be short with more after it: only an empty page ends the children.
        if (page.length === 0) break;
        for (const child of page) {
          const withFlow = endedAt(child, 'cancelled', FLOW_CANCELLED_CODE, at);
          // Read without its payload: its notices and events read the rest, and a flow may hold many.
          if (withFlow) cancelled.push(child);
          if ((child.childCount ?? 0) > 0 && (withFlow || through.has(child.id))) below.push(child.id);
        }
        afterId = page[page.length - 1]?.id;
      }
    }
    parents = below;
  }
  return { dead, cancelled };
}

/** `job` is `state` with an error of `code`, and finished at `at`: ended by the step that ran at `at`. */
function endedAt(job: JobRecord, state: 'dead' | 'cancelled', code: string, at: Date): boolean {
  return job.state === state && job.error?.code === code && job.finishedAt?.getTime() === at.getTime();
}
