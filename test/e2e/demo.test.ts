import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, expect, it } from 'vitest';
import { ChildProcesses, exited, REPO_ROOT, RUN_TYPESCRIPT } from '../support/processes.ts';

// The quick start's demo (`npm run demo` runs examples/quick-start after installing and building) as a
// newcomer meets it: from a directory with no data yet, on the embedded default store, on a free port.

const DEMO = join(REPO_ROOT, 'examples', 'quick-start', 'src', 'main.ts');
const children = new ChildProcesses();
const directories: string[] = [];

afterEach(() => children.killAll());
afterAll(() => Promise.all(directories.map((dir) => rm(dir, { recursive: true, force: true }))));

/** Starts the demo in a fresh working directory (its data goes to `.workq` there). */
async function startDemo(args: readonly string[] = []) {
  const cwd = await mkdtemp(join(tmpdir(), 'workq-demo-'));
  directories.push(cwd);
  const child = children.spawn(process.execPath, [...RUN_TYPESCRIPT, DEMO, ...args], {
    cwd,
    env: { WORKQ_PORT: '0', NO_COLOR: '1' },
  });
  return { child, cwd };
}

/** Resolves once the child's output matches `pattern`; rejects if it exits first. */
async function waitForOutput(child: ReturnType<ChildProcesses['spawn']>, pattern: RegExp): Promise<RegExpMatchArray> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const match = child.output().match(pattern);
    if (match) return match;
    if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
      throw new Error(`the demo never printed ${pattern}; it printed:\n${child.output()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

it('runs every job to completion, the older producer’s upgraded on the way in, says what it fell back to and where the dashboard is', async () => {
  const { child, cwd } = await startDemo();
  expect(await exited(child)).toEqual({ code: 0, signal: null });
  const output = child.output();
  const completed = output.split('\n').filter((line) => line.trimStart().startsWith('✓'));
  expect(completed).toHaveLength(12);
  expect(completed.filter((line) => line.includes('(enqueued as v1, upgraded)'))).toHaveLength(4);
  expect(output).toMatch(/12 jobs completed in \d+ ms/);
  expect(output).toMatch(/The dashboard is served at http:\/\/127\.0\.0\.1:\d+\/ui\/ while a server runs/);
  // Without a mongod the embedded store is PGlite, under the working directory, and the line says how to choose.
  if (!output.includes('embedded MongoDB store')) {
    expect(output).toContain(
      `the embedded store is PostgreSQL (PGlite), its data under ${join(cwd, '.workq', 'pglite')}`,
    );
    expect(output).toContain('--store pglite://');
  }
}, 120_000);

it('with --keep-running serves the dashboard, / leads to it, and Ctrl-C stops it cleanly', async () => {
  const { child } = await startDemo(['--keep-running']);
  const [, url] = await waitForOutput(child, /The dashboard: (http:\/\/127\.0\.0\.1:\d+)\/ui\//);
  const root = await fetch(`${url}/`, { redirect: 'manual' });
  expect(root.status).toBeGreaterThanOrEqual(300);
  expect(root.status).toBeLessThan(400);
  expect(root.headers.get('location')).toMatch(/\/ui\/$/);
  const page = await fetch(`${url}/ui/`);
  expect(page.status).toBe(200);
  expect(page.headers.get('content-type')).toMatch(/^text\/html/);
  expect(await page.text()).toContain('<title>');
  children.signal(child, 'SIGINT');
  expect(await exited(child)).toEqual({ code: 0, signal: null });
}, 120_000);
