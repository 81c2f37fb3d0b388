import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { defineCatalog, defineJob } from '@workq/core';
import { type QueueServer, startServer } from '@workq/queue-server';
import { createClient } from '@workq/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { collectingLogger } from '../support/quiet-logger.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const WORKQ = join(ROOT, 'packages/cli/bin/workq.js');
const CORE = join(ROOT, 'packages/core/src/index.ts');

async function workq(args: string[]): Promise<{ code: number; out: string; err: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [WORKQ, ...args], { cwd: ROOT });
    return { code: 0, out: stdout, err: stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, out: failed.stdout, err: failed.stderr };
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

describe('workq schemas list / remove, against a queue server', () => {
  const ADMIN = 'schemas-cli-admin-token';
  const DEPLOY = 'schemas-cli-deploy-token';
  let server: QueueServer;
  /** `resize` v2 with v1 before it, as the service that deploys it declares it. */
  const catalog = defineCatalog({
    resize: defineJob({
      version: 2,
      payload: z.object({ source: z.string(), width: z.number() }),
      previous: { 1: { payload: z.object({ source: z.string() }), upgrade: (p) => ({ ...p, width: 1 }) } },
    }),
  });

  beforeAll(async () => {
    server = await startServer({
      store: 'pglite://memory',
      port: 0,
      tokens: [
        { token: ADMIN, scopes: ['admin'] },
        { token: DEPLOY, scopes: ['register:resize', 'produce:resize'] },
      ],
      logger: collectingLogger(),
    });
    await createClient({ url: server.url, jobs: catalog, token: DEPLOY }).ready();
  });
  afterAll(async () => {
    await server?.close();
  });

  const remote = (args: string[], token = ADMIN) => workq([...args, '--url', server.url, '--token', token]);

  it('lists the registered versions, removes one (then says it is gone), and takes the admin scope to remove', async () => {
    const listed = await remote(['schemas', 'list']);
    expect(listed.code).toBe(0);
    expect(listed.out).toMatch(/resize\s+1\s/);
    expect(listed.out).toMatch(/resize\s+2\s/);

    const refused = await remote(['schemas', 'remove', 'resize', '2'], DEPLOY);
    expect(refused).toMatchObject({ code: 1, err: expect.stringContaining('workq: FORBIDDEN:') });

    const removed = await remote(['schemas', 'remove', 'resize', '2']);
    expect(removed).toMatchObject({ code: 0, out: 'removed the schema of resize v2\n' });
    const versions = (await remote(['schemas', 'list', '--name', 'resize', '--json'])).out;
    expect((JSON.parse(versions) as { version: number }[]).map((entry) => entry.version)).toEqual([1]);

    const again = await remote(['schemas', 'remove', 'resize', '2']);
    expect(again).toMatchObject({ code: 1, err: 'workq: NOT_FOUND: No schema is registered for "resize" v2.\n' });
    expect((await remote(['schemas', 'remove', 'resize'])).code).toBe(2);
    expect((await remote(['schemas', 'remove', 'resize', 'three'])).code).toBe(2);
  });
});
