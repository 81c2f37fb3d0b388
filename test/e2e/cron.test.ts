import { type CronEntry, type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient, type Worker } from '@workq/sdk';
import { until } from '@workq/test-support';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { collectingLogger } from '../support/quiet-logger.ts';
import { listAllJobs, rawClient } from '../support/raw-client.ts';
import { describeEachStore, type FreshStore, SHARED_STORES, serverStore } from '../support/stores.ts';

const report = { accountId: 'acct-7', kind: 'usage', from: '2026-01-01', to: '2026-01-31' } as const;

/** Every second, on both servers: each occurrence must become one job between them. */
const CRONTAB: CronEntry[] = [
  { cron: '* * * * * *', name: 'generateReport', payload: report, options: { priority: 5, maxAttempts: 2 } },
  // Refused by the registered schema (empty accountId): logged, never stored.
  { cron: '* * * * * *', name: 'generateReport', payload: { ...report, accountId: '' }, key: 'broken' },
];
const OCCURRENCES = 3;

/** The sum of one counter's samples whose labels include `labels`, from a server's /metrics. */
async function counter(server: QueueServer, metric: string, labels: string): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${metric}{`) && line.includes(labels))
    .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
}

/** Per server: occurrences whose job it created, and those it found already enqueued. */
async function cronCounts(servers: readonly QueueServer[]) {
  const count = (outcome: string) =>
    Promise.all(servers.map((server) => counter(server, 'workq_cron_enqueues_total', `outcome="${outcome}"`)));
  const [created, existing] = (await Promise.all([count('created'), count('existing')])) as [
    [number, number],
    [number, number],
  ];
  return { created, existing };
}

await describeEachStore(SHARED_STORES, 'a crontab on two queue servers over one $label store', ({ open }) => {
  let target: FreshStore | undefined;
  const servers: QueueServer[] = [];
  const loggers = [collectingLogger(), collectingLogger()];
  let worker: Worker | undefined;

  beforeAll(async () => {
    target = await open();
    for (const logger of loggers) {
      servers.push(
        await startServer({ store: await serverStore(target), port: 0, pollIntervalMs: 200, crontab: CRONTAB, logger }),
      );
    }
  });

  afterAll(async () => {
    await worker?.close();
    for (const server of servers) await server.close();
    await target?.drop();
  });

  it('enqueues each occurrence once between the servers, and the consumer gets the typed payload', async () => {
    const [serverA, serverB] = servers as [QueueServer, QueueServer];
    // Until a client registers the job's schema, occurrences are refused (UNKNOWN_JOB) and skipped.
    const sdk = createClient({ url: serverA.url, jobs });
    await sdk.ready();
    const handled: { id: string; payload: typeof report }[] = [];
    worker = createClient({ url: serverB.url, jobs }).consume(
      'generateReport',
      async (job) => {
        handled.push({ id: job.id, payload: job.payload as typeof report });
        return { url: `https://reports.example/${job.id}`, rows: 1 };
      },
      { concurrency: 2 },
    );
    await until(() => handled.length >= OCCURRENCES, 15_000, 20);
    await worker.close();

    // The crontab keeps running: what the servers counted is read before and after the listing.
    const before = await cronCounts(servers);
    const stored = await listAllJobs(rawClient(serverA.url), 'generateReport');
    const after = await cronCounts(servers);
    const runTimes = stored.map((job) => job.runAt.getTime());
    expect(stored.length).toBeGreaterThanOrEqual(OCCURRENCES);
    expect(new Set(runTimes).size).toBe(stored.length);
    for (const job of stored) {
      expect(job.runAt.getMilliseconds()).toBe(0);
      expect(job.createdAt.getTime()).toBeGreaterThanOrEqual(job.runAt.getTime());
      expect(job.maxAttempts).toBe(2);
      expect(job.priority).toBe(5);
      expect(job.idempotencyKey).toBe(
        `cron:generateReport:${job.idempotencyKey?.split(':')[2]}:${job.runAt.toISOString()}`,
      );
    }
    expect(handled.map((h) => h.payload)).toEqual(handled.map(() => ({ ...report, notify: undefined })));
    expect(new Set(handled.map((h) => h.id)).size).toBe(handled.length);

    // One server leads and enqueues every occurrence; the other leaves the crontab to it.
    const createdBefore = before.created[0] + before.created[1];
    expect(createdBefore).toBeLessThanOrEqual(stored.length);
    expect(after.created[0] + after.created[1]).toBeGreaterThanOrEqual(stored.length);
    const tries = ([0, 1] as const).map((server) => after.created[server] + after.existing[server]);
    expect(Math.min(...tries)).toBe(0);
    expect(Math.max(...tries)).toBeGreaterThanOrEqual(stored.length);
  });

  it('lists its crontab to the admin API, with each entry’s key and next occurrence', async () => {
    const [serverA] = servers as [QueueServer];
    const before = Date.now();
    const schedules = await createClient({ url: serverA.url, jobs }).admin.schedules();
    expect(schedules).toEqual([
      expect.objectContaining({ cron: '* * * * * *', timezone: 'UTC', name: 'generateReport', version: null }),
      expect.objectContaining({ key: 'broken', name: 'generateReport' }),
    ]);
    expect(schedules[0]?.key).toMatch(/^generateReport:[0-9a-f]{16}$/);
    for (const { nextRunAt } of schedules) {
      expect(nextRunAt?.getMilliseconds()).toBe(0);
      expect(nextRunAt?.getTime()).toBeGreaterThan(before - 1_000);
      expect(nextRunAt?.getTime()).toBeLessThanOrEqual(Date.now() + 1_000);
    }
  });

  it('logs the entry whose payload the schema refuses, stores nothing of it, and keeps serving', async () => {
    const [serverA] = servers as [QueueServer];
    const refused = loggers.flatMap((logger) =>
      logger.lines.filter(
        (line) =>
          line.message === 'cron occurrence skipped: its enqueue failed' &&
          String(line.fields?.error).startsWith('VALIDATION:'),
      ),
    );
    expect(refused.length).toBeGreaterThan(0);
    expect(String(refused[0]?.fields?.error)).toMatch(/accountId/);
    const stored = await listAllJobs(rawClient(serverA.url), 'generateReport');
    expect(stored.length).toBeGreaterThanOrEqual(OCCURRENCES);
    expect(stored.filter((job) => job.idempotencyKey?.startsWith('cron:broken:'))).toEqual([]);
    const sdk = createClient({ url: serverA.url, jobs });
    const handle = await sdk.enqueue.generateReport(report, { idempotencyKey: 'by-hand' });
    expect((await handle.status()).state).toBe('ready');
  });

  it('when the leading server stops, the other takes the crontab over at once', async () => {
    const { created, existing } = await cronCounts(servers);
    const leader = created[0] + existing[0] > 0 ? 0 : 1;
    const follower = servers[1 - leader] as QueueServer;
    await (servers[leader] as QueueServer).close();
    const tries = async () => {
      const text = await (await fetch(`${follower.url}/metrics`)).text();
      return text
        .split('\n')
        .filter((line) => line.startsWith('workq_cron_enqueues_total{'))
        .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
    };
    const before = await tries();
    // Closing resigns the leadership: the follower takes it at its next renewal, a third of the lease.
    await until(async () => (await tries()) > before + 2, 10_000, 100);
  });
});
