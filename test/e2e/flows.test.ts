import { defineCatalog, defineJob } from '@workq/core';
import { type QueueServer, startServer } from '@workq/queue-server';
import { createClient, PermanentError, WorkqError } from '@workq/sdk';
import { until } from '@workq/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { runAdminCli } from '../../packages/cli/src/admin/admin-cli.ts';
import { eventTypes } from '../support/event-order.ts';
import { oneServerOnStore } from '../support/one-server.ts';
import { collectingLogger } from '../support/quiet-logger.ts';
import { failure, rawClient, rawFailure } from '../support/raw-client.ts';
import { describeEachStore, IN_PROCESS_STORES } from '../support/stores.ts';

/** A parent that builds a report from pages rendered by its children. */
const jobs = defineCatalog({
  buildReport: defineJob({
    version: 1,
    payload: z.object({ reportId: z.string() }),
    result: z.object({ urls: z.array(z.string()), resumed: z.boolean() }),
  }),
  renderPage: defineJob({
    version: 1,
    payload: z.object({ page: z.number().int(), fail: z.boolean().default(false) }),
    result: z.object({ url: z.string() }),
    defaults: { maxAttempts: 1 },
  }),
});

type Sdk = ReturnType<typeof createClient<typeof jobs>>;

/** How many jobs the store holds, of every type and state. */
const storedJobs = async (sdk: Sdk) => (await sdk.admin.stats()).counts.reduce((sum, row) => sum + row.count, 0);

const render = (sdk: Sdk) =>
  sdk.consume(
    'renderPage',
    async (job) => {
      if (job.payload.fail) throw new PermanentError(`page ${job.payload.page} cannot be rendered`);
      return { url: `https://pages/${job.payload.page}` };
    },
    { concurrency: 4 },
  );

await describeEachStore(IN_PROCESS_STORES, 'flows through the SDK over $label', ({ open }) => {
  const server = oneServerOnStore(open);
  const { workers } = server;
  let sdk: Sdk;

  beforeAll(() => {
    sdk = createClient({ url: server.url, jobs, logger: false });
  });

  afterAll(async () => {
    await sdk?.close();
  });

  it('runs a parent after its children, handing it their typed results in enqueue order', async () => {
    const seen: { resumed: boolean; children: unknown[] }[] = [];
    const parent = await sdk.enqueue.buildReport(
      { reportId: 'r1' },
      { children: [3, 1, 2].map((page) => sdk.child.renderPage({ page })) },
    );
    const waiting = await parent.status();
    expect(waiting).toMatchObject({ state: 'waiting-children', childCount: 3, pendingChildren: 3 });
    expect(waiting.children?.map((child) => [child.name, child.state])).toEqual([
      ['renderPage', 'ready'],
      ['renderPage', 'ready'],
      ['renderPage', 'ready'],
    ]);
    const [first] = waiting.children ?? [];
    expect(await sdk.job('renderPage', first?.id as string).status()).toMatchObject({
      parentId: parent.id,
      onFailure: 'fail-parent',
    });

    workers.push(
      sdk.consume('buildReport', async (_job, ctx) => {
        seen.push({ resumed: ctx.resumed, children: ctx.children.map(({ name, state }) => ({ name, state })) });
        const pages = await ctx.childResults('renderPage');
        return { urls: pages.map((page) => page.url), resumed: ctx.resumed };
      }),
      render(sdk),
    );
    await expect(parent.result({ timeoutMs: 20_000 })).resolves.toEqual({
      urls: ['https://pages/3', 'https://pages/1', 'https://pages/2'],
      resumed: true,
    });
    expect(seen).toEqual([{ resumed: true, children: Array(3).fill({ name: 'renderPage', state: 'completed' }) }]);
    const done = await parent.status();
    expect(done).toMatchObject({ state: 'completed', attempts: 1, childCount: 3 });
    expect(done.pendingChildren).toBeUndefined();
  });

  it('fans out at run time with waitForChildren, parking the parent without spending an attempt', async () => {
    const runs: boolean[] = [];
    workers.push(
      sdk.consume('buildReport', async (job, ctx) => {
        runs.push(ctx.resumed);
        if (!ctx.resumed) {
          return ctx.waitForChildren([10, 11].map((page) => sdk.child.renderPage({ page })));
        }
        const pages = await ctx.childResults('renderPage');
        return { urls: pages.map((page) => page.url), resumed: job.attempt === 1 };
      }),
    );
    const parent = await sdk.enqueue.buildReport({ reportId: 'fan-out' });
    await until(async () => (await parent.status()).state === 'waiting-children', 20_000);
    expect(await parent.status()).toMatchObject({ attempts: 0, childCount: 2, pendingChildren: 2 });
    workers.push(render(sdk));
    await expect(parent.result({ timeoutMs: 20_000 })).resolves.toEqual({
      urls: ['https://pages/10', 'https://pages/11'],
      resumed: true,
    });
    expect(runs).toEqual([false, true]);
  });

  it('fails the parent with a child that dies under fail-parent, naming the child; ignore and continue let it run', async () => {
    const children: unknown[] = [];
    workers.push(
      sdk.consume('buildReport', async (_job, ctx) => {
        children.push(ctx.children.map(({ state, error }) => ({ state, error: error?.message })));
        const pages = await ctx.childResults('renderPage');
        return { urls: pages.map((page) => page.url), resumed: ctx.resumed };
      }),
      render(sdk),
    );
    const failed = await sdk.enqueue.buildReport(
      { reportId: 'fail' },
      { children: [sdk.child.renderPage({ page: 1 }), sdk.child.renderPage({ page: 2, fail: true })] },
    );
    const dead = await failure(failed.result({ timeoutMs: 20_000 }));
    expect(dead.code).toBe('JOB_FAILED');
    const deadChild = (await failed.status()).children?.[1]?.id;
    expect(dead.message).toContain(`Child job ${deadChild} (renderPage) ended dead`);
    expect(dead.message).toContain('page 2 cannot be rendered');

    const ignored = await sdk.enqueue.buildReport(
      { reportId: 'ignore' },
      {
        children: [
          sdk.child.renderPage({ page: 1 }),
          sdk.child.renderPage({ page: 2, fail: true }, { onFailure: 'ignore' }),
        ],
      },
    );
    await expect(ignored.result({ timeoutMs: 20_000 })).resolves.toEqual({ urls: ['https://pages/1'], resumed: true });
    const continued = await sdk.enqueue.buildReport(
      { reportId: 'continue' },
      { children: [sdk.child.renderPage({ page: 3, fail: true }, { onFailure: 'continue' })] },
    );
    await expect(continued.result({ timeoutMs: 20_000 })).resolves.toEqual({ urls: [], resumed: true });
    expect(children).toEqual([
      [{ state: 'completed' }, { state: 'dead', error: 'page 2 cannot be rendered' }],
      [{ state: 'dead', error: 'page 3 cannot be rendered' }],
    ]);
  });

  it('runs nested children first: a child with children of its own waits for them as its parent waits for it', async () => {
    const order: string[] = [];
    workers.push(
      sdk.consume('buildReport', async (job, ctx) => {
        order.push(job.payload.reportId);
        const pages = await ctx.childResults('buildReport');
        return { urls: pages.flatMap((page) => page.urls), resumed: ctx.resumed };
      }),
      sdk.consume('renderPage', async (job) => {
        order.push(`page ${job.payload.page}`);
        return { url: `https://pages/${job.payload.page}` };
      }),
    );
    const root = await sdk.enqueue.buildReport(
      { reportId: 'root' },
      {
        children: [sdk.child.buildReport({ reportId: 'section' }, { children: [sdk.child.renderPage({ page: 7 })] })],
      },
    );
    await expect(root.result({ timeoutMs: 20_000 })).resolves.toEqual({ urls: [], resumed: true });
    expect(order).toEqual(['page 7', 'section', 'root']);
  });

  it('tells watchers when a parent starts to wait for its children, and whose children are enqueued and cancelled', async () => {
    const controller = new AbortController();
    const seen: { type: string; id: string; parentId?: string }[] = [];
    const watching = (async () => {
      for await (const event of sdk.events(undefined, { signal: controller.signal })) {
        if (event.type !== 'resync') seen.push({ type: event.type, id: event.id, parentId: event.parentId });
      }
    })();
    try {
      // The watcher is live once it has seen a probe: any probe, since one's event may come after the next is sent.
      const probes = new Set<string>();
      await until(async () => {
        probes.add((await sdk.enqueue.renderPage({ page: -1 }, { delayMs: 3_600_000 })).id);
        return seen.some((event) => probes.has(event.id));
      }, 15_000);
      const parent = await sdk.enqueue.buildReport(
        { reportId: 'watched' },
        { children: [sdk.child.renderPage({ page: 1 }, { delayMs: 3_600_000 })] },
      );
      const child = (await parent.status()).children?.[0]?.id;
      await until(() => seen.filter((event) => event.id === parent.id).length >= 2, 15_000);
      expect(seen.filter((event) => event.id === parent.id || event.id === child)).toEqual([
        { type: 'enqueued', id: parent.id, parentId: undefined },
        { type: 'enqueued', id: child, parentId: parent.id },
        { type: 'waiting-children', id: parent.id, parentId: undefined },
      ]);

      workers.push(
        sdk.consume('buildReport', async (_job, ctx) => {
          if (!ctx.resumed) return ctx.waitForChildren([sdk.child.renderPage({ page: 2 }, { delayMs: 3_600_000 })]);
          return { urls: [], resumed: true };
        }),
      );
      const parked = await sdk.enqueue.buildReport({ reportId: 'parked' });
      await until(() => seen.some((event) => event.id === parked.id && event.type === 'waiting-children'), 15_000);
      expect(eventTypes(seen.filter((event) => event.id === parked.id))).toEqual([
        'enqueued',
        'started',
        'waiting-children',
      ]);

      // Cancelling a parent cancels its children, and each such child's event names the parent.
      expect(await parent.cancel()).toBe(true);
      await until(() => seen.some((event) => event.id === child && event.type === 'cancelled'), 15_000);
      expect(seen.filter((event) => event.id === child).at(-1)).toEqual({
        type: 'cancelled',
        id: child,
        parentId: parent.id,
      });
    } finally {
      controller.abort();
      await watching;
    }
  });

  it('stores nothing of a flow whose child the server refuses, naming the child', async () => {
    const raw = rawClient(server.url);
    await sdk.ready();
    const before = await storedJobs(sdk);
    const refused = await rawFailure(
      raw.jobs.enqueue.mutate({
        name: 'buildReport',
        version: 1,
        payload: { reportId: 'atomic' },
        children: [
          { name: 'renderPage', version: 1, payload: { page: 1 } },
          {
            name: 'renderPage',
            version: 1,
            payload: { page: 2 },
            children: [{ name: 'renderPage', version: 1, payload: { page: 'x' } }],
          },
        ],
      }),
    );
    expect(refused.code).toBe('VALIDATION');
    expect(refused.message).toContain('Child children[1].children[0] ("renderPage") of the flow');
    expect(await storedJobs(sdk)).toBe(before);
  });

  it('refuses a child given an id of its own, from the SDK and over the wire, storing nothing', async () => {
    await sdk.ready();
    const before = await storedJobs(sdk);
    const id = '0190a8c4-3f2e-7c1a-9b6d-2f4e5a6b7c8d';
    const made = (() => {
      try {
        sdk.child.renderPage({ page: 1 }, { id } as never);
      } catch (error) {
        return error;
      }
    })();
    expect(made).toBeInstanceOf(WorkqError);
    expect(made).toMatchObject({ code: 'VALIDATION', message: expect.stringContaining('takes no id') });
    const sent = await rawFailure(
      rawClient(server.url).jobs.enqueue.mutate({
        name: 'buildReport',
        version: 1,
        payload: { reportId: 'chosen' },
        children: [{ name: 'renderPage', version: 1, payload: { page: 1 }, options: { id } }],
      }),
    );
    expect(sent).toMatchObject({ code: 'VALIDATION', message: expect.stringContaining('takes no id') });
    expect(await storedJobs(sdk)).toBe(before);
  });
});

describe('flow requests over pglite', () => {
  let server: QueueServer;
  const TOKENS = [
    { token: 'flows-report-only-token', scopes: ['produce:buildReport'] },
    { token: 'flows-both-types-token', scopes: ['produce:buildReport', 'produce:renderPage'] },
    { token: 'flows-admin-token-abc', scopes: ['admin'] },
  ];

  beforeAll(async () => {
    server = await startServer({ store: 'pglite://memory', port: 0, jobs, tokens: TOKENS, logger: collectingLogger() });
  });

  afterAll(async () => {
    await server?.close();
  });

  it('needs produce:<type> for every child’s type, so no token enqueues beyond its scope through a flow', async () => {
    const reportOnly = createClient({ url: server.url, jobs, token: 'flows-report-only-token', logger: false });
    const admin = createClient({ url: server.url, jobs, token: 'flows-admin-token-abc', logger: false });
    const refused = await failure(
      reportOnly.enqueue.buildReport({ reportId: 's' }, { children: [reportOnly.child.renderPage({ page: 1 })] }),
    );
    expect(refused).toBeInstanceOf(WorkqError);
    expect(refused).toMatchObject({ code: 'FORBIDDEN' });
    expect(refused.message).toContain('produce:renderPage');
    expect((await admin.admin.list({})).jobs).toEqual([]);
    const both = createClient({ url: server.url, jobs, token: 'flows-both-types-token', logger: false });
    const parent = await both.enqueue.buildReport(
      { reportId: 's' },
      { children: [both.child.renderPage({ page: 1 })] },
    );
    expect(await parent.status()).toMatchObject({ state: 'waiting-children', childCount: 1 });
  });

  it('takes a flow of 10,000 children in one request and refuses one more, storing nothing', async () => {
    const sdk = createClient({ url: server.url, jobs, token: 'flows-admin-token-abc', logger: false });
    const pages = (count: number) => Array.from({ length: count }, (_, page) => sdk.child.renderPage({ page }));
    const before = await storedJobs(sdk);
    const tooMany = await failure(sdk.enqueue.buildReport({ reportId: 'too many' }, { children: pages(10_001) }));
    expect(tooMany).toMatchObject({ code: 'VALIDATION' });
    expect(tooMany.message).toContain('more than 10000 children');
    expect(tooMany.message).toContain('ctx.waitForChildren');
    expect(await storedJobs(sdk)).toBe(before);
    const parent = await sdk.enqueue.buildReport({ reportId: 'wide' }, { children: pages(10_000) });
    const status = await parent.status();
    expect(status).toMatchObject({ state: 'waiting-children', childCount: 10_000, pendingChildren: 10_000 });
    expect(status.children).toHaveLength(1_000);
  });

  it('prints a flow as a tree, each job with its state, in workq jobs show', async () => {
    const sdk = createClient({ url: server.url, jobs, token: 'flows-admin-token-abc', logger: false });
    const root = await sdk.enqueue.buildReport(
      { reportId: 'tree' },
      {
        children: [
          sdk.child.renderPage({ page: 1 }),
          sdk.child.buildReport({ reportId: 'section' }, { children: [sdk.child.renderPage({ page: 2 })] }),
        ],
      },
    );
    const [page, section] = (await root.status()).children ?? [];
    const [inner] = (await sdk.job('buildReport', section?.id as string).status()).children ?? [];
    const out: string[] = [];
    const io = {
      out: (text: string) => void out.push(text),
      err: (text: string) => void out.push(text),
      env: {},
      untilInterrupted: () => new AbortController().signal,
    };
    const args = ['jobs', 'show', root.id, '--url', server.url, '--token', 'flows-admin-token-abc'];
    expect(await runAdminCli(args, io)).toBe(0);
    expect(out.join('')).toContain(
      [
        'flow:',
        `buildReport ${root.id} waiting-children`,
        `├─ renderPage ${page?.id} ready`,
        `└─ buildReport ${section?.id} waiting-children`,
        `   └─ renderPage ${inner?.id} ready`,
        '',
      ].join('\n'),
    );
    expect(out.join('')).toMatch(/^childCount: +2$/m);

    const listed = await sdk.admin.list({ name: 'buildReport' });
    expect(listed.jobs.find((job) => job.id === section?.id)).toMatchObject({ parentId: root.id, childCount: 1 });
    expect(listed.jobs.find((job) => job.id === root.id)).toMatchObject({ childCount: 2, pendingChildren: 2 });
    const rows = await rawClient(server.url, 'flows-admin-token-abc').admin.jobs.query({ name: 'buildReport' });
    expect(rows.jobs.find((row) => row.id === root.id)).toMatchObject({ childCount: 2, pendingChildren: 2 });
    expect(rows.jobs.find((row) => row.id === section?.id)).toMatchObject({ parentId: root.id, childCount: 1 });
  });

  it('refuses a child not made by sdk.child, and a child payload, before sending anything', async () => {
    const sdk = createClient({ url: server.url, jobs, token: 'flows-admin-token-abc', logger: false });
    expect(() => sdk.child.renderPage({ page: 'one' } as never)).toThrow(/Payload of child "renderPage" is invalid/);
    const handmade = { name: 'renderPage', version: 1, payload: { page: 1 } };
    const refused = await failure(sdk.enqueue.buildReport({ reportId: 'h' }, { children: [handmade as never] }));
    expect(refused).toMatchObject({ code: 'VALIDATION' });
    expect(refused.message).toContain('was not made by sdk.child');
  });
});
