import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * What a fenced block in the README or docs claims, from the `<!-- code: … -->` comment on the line before it:
 * - `fragment`: an excerpt that needs context it does not show; not compiled;
 * - `check`: a whole module that compiles as written;
 * - `file <path>`: a whole module, to be saved at `<path>` of the reader's project (others import it);
 * - `run sh`: shell commands to run in order, as written;
 * - `terminals`: shell commands each run in a terminal of its own, all but the last left running.
 */
export type CodeClaim =
  | { kind: 'fragment' }
  | { kind: 'check' }
  | { kind: 'file'; path: string }
  | { kind: 'run' }
  | { kind: 'terminals' };

export interface CodeBlock {
  /** The document, relative to the repository root, and the line its opening fence is on. */
  doc: string;
  line: number;
  /** The fence's info string: `ts`, `sh`, … */
  lang: string;
  code: string;
  /** `undefined`: no `<!-- code: … -->` comment precedes the block. */
  claim: CodeClaim | undefined;
}

/** Fences whose code is TypeScript or JavaScript: each must say what it claims. */
export const SCRIPT_LANGS = new Set(['ts', 'typescript', 'js', 'javascript', 'tsx', 'mjs']);

function parseClaim(comment: string, where: string): CodeClaim {
  const [kind, ...rest] = comment.trim().split(/\s+/);
  if (kind === 'fragment' || kind === 'check' || kind === 'terminals') return { kind };
  if (kind === 'run' && rest.join(' ') === 'sh') return { kind };
  if (kind === 'file' && rest.length === 1 && rest[0]) return { kind, path: rest[0] };
  throw new Error(`${where}: unknown code claim "${comment.trim()}"`);
}

/** The fenced blocks of one Markdown text, each with the claim written before it. */
export function codeBlocksOf(doc: string, text: string): CodeBlock[] {
  const lines = text.split('\n');
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*$/.exec(lines[i] ?? '');
    if (!open) continue;
    const end = lines.findIndex((line, j) => j > i && line.startsWith('```'));
    if (end < 0) throw new Error(`${doc}:${i + 1}: a fence that is never closed`);
    const comment = /^<!-- code: (.*) -->$/.exec(lines[i - 1] ?? '')?.[1];
    blocks.push({
      doc,
      line: i + 1,
      lang: open[1] ?? '',
      code: `${lines.slice(i + 1, end).join('\n')}\n`,
      claim: comment === undefined ? undefined : parseClaim(comment, `${doc}:${i}`),
    });
    i = end;
  }
  return blocks;
}

/** The blocks of README.md and every Markdown file under docs/. */
export function repositoryCodeBlocks(root: string): CodeBlock[] {
  const docs = readdirSync(join(root, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.md'))
    .map((file) => join(root, 'docs', file))
    .sort();
  return [join(root, 'README.md'), ...docs].flatMap((file) =>
    codeBlocksOf(relative(root, file), readFileSync(file, 'utf8')),
  );
}
