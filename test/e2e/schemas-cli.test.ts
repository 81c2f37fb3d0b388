import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const WORKQ = join(ROOT, 'apps/queue-server/bin/workq.js');
const CORE = join(ROOT, 'packages/core/src/index.ts');

async function workq(args: string[]): Promise<{ code: number; out: string }> {
  try {
    const { stdout } = await run(process.execPath, [WORKQ, ...args], { cwd: ROOT });
    return { code: 0, out: stdout };
  } catch (error) {
    const failed = error as { code: number; stdout: string };
    return { code: failed.code, out: failed.stdout };
  }
}

const catalogModule = (payload: string) => `
import { defineCatalog, defineJob } from '${CORE}';
import { z } from 'zod';
export const jobs = defineCatalog({ convert: defineJob({ version: 1, payload: ${payload} }) });
`;

describe('workq schemas check / snapshot', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(ROOT, 'test/.tmp-schemas-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('passes on the committed catalog and snapshot', async () => {
    const result = await workq(['schemas', 'check']);
    expect(result).toMatchObject({ code: 0 });
    expect(result.out).toContain('compatible');
  });

  it('snapshots a catalog, then fails naming a breaking change made without a version bump', async () => {
    const catalog = join(dir, 'catalog.ts');
    const snapshot = join(dir, 'snapshot.json');
    await writeFile(catalog, catalogModule('z.object({ source: z.string(), quality: z.number() })'));
    expect((await workq(['schemas', 'snapshot', '--catalog', catalog, '--snapshot', snapshot])).code).toBe(0);
    expect((await workq(['schemas', 'check', '--catalog', catalog, '--snapshot', snapshot])).code).toBe(0);

    await writeFile(catalog, catalogModule('z.object({ source: z.string(), quality: z.string() })'));
    const broken = await workq(['schemas', 'check', '--catalog', catalog, '--snapshot', snapshot]);
    expect(broken.code).toBe(1);
    expect(broken.out).toContain('convert v1: quality: type changed from number to string');
  });

  it('fails clearly when the catalog itself is invalid or the snapshot is missing', async () => {
    const catalog = join(dir, 'bad.ts');
    await writeFile(
      catalog,
      catalogModule('z.object({})').replace(
        'version: 1,',
        'version: 3, previous: { 1: { payload: z.object({}), upgrade: (p) => p } },',
      ),
    );
    const bad = await workq(['schemas', 'check', '--catalog', catalog, '--snapshot', join(dir, 'none.json')]);
    expect(bad.code).toBe(1);
    expect(bad.out).toContain('the catalog does not load');
    const missing = await workq(['schemas', 'check', '--snapshot', join(tmpdir(), 'no-such-snapshot.json')]);
    expect(missing.code).toBe(1);
    expect(missing.out).toContain('workq schemas snapshot');
  });
});
