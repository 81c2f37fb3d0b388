import { type CronEntry, type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient, type WorkqError } from '@workq/sdk';
import { until } from '@workq/test-support';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { collectingLogger } from '../support/quiet-logger.ts';
import { failure, listAllJobs, rawClient } from '../support/raw-client.ts';
import { describeEachStore, type FreshStore, SHARED_STORES, serverStore } from '../support/stores.ts';

const report = { accountId: 'acct-9', kind: 'usage', from: '2026-02-01', to: '2026-02-28' } as const;
const email = { to: 'ops@example.com', subject: 'tick', body: 'every second' };
/** The crontab both servers start with: a different job type from the stored schedule's, so they count apart. */
const CRONTAB: CronEntry[] = [{ cron: '* * * * * *', name: 'sendEmail', payload: email, key: 'tick-email' }];
const KEY = 'report-every-second';
const OCCURRENCES = 3;

/** The sum of one counter's samples whose labels include `labels`, from a server's /metrics. */
async function counter(server: QueueServer, labels: string): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith('workq_cron_enqueues_total{') && line.includes(labels))
    .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
}

await describeEachStore(SHARED_STORES, 'schedules kept in the $label store, on two queue servers', ({ open }) => {
  let target: FreshStore | undefined;
  const servers: QueueServer[] = [];

  beforeAll(async () => {
    target = await open();
    // The leader's own reads of the stored schedules are a minute apart: word of a change reaches it over the bus.
    const options = { port: 0, pollIntervalMs: 200, scheduleReloadMs: 60_000, crontab: CRONTAB };
    const leader = await startServer({ ...options, store: await serverStore(target), logger: collectingLogger() });
    servers.push(leader);
    await createClient({ url: leader.url, jobs }).ready();
    // The first server leads once it enqueued a crontab occurrence; the second starts as a follower.
    await until(async () => (await counter(leader, 'name="sendEmail"')) > 0, 10_000, 50);
    servers.push(await startServer({ ...options, store: await serverStore(target), logger: collectingLogger() }));
  });

  afterAll(async () => {
    for (const server of servers) await server.close();
    await target?.drop();
  });

  it('refuses a bad schedule with VALIDATION or UNKNOWN_JOB, naming what is wrong', async () => {
    const sdk = createClient({ url: servers[1]!.url, jobs });
    const base = { key: 'bad', cron: '0 3 * * *', name: 'generateReport', payload: report };
    const refusal = async (schedule: Parameters<typeof sdk.admin.upsertSchedule>[0]) => {
      const error: WorkqError = await failure(sdk.admin.upsertSchedule(schedule));
      return `${error.code}: ${error.message}`;
    };
    expect(await refusal({ ...base, cron: '61 * * * *' })).toMatch(/^VALIDATION: .*"61 \* \* \* \*".*minute/);
    expect(await refusal({ ...base, timezone: 'Mars/Olympus' })).toMatch(/^VALIDATION: .*Mars\/Olympus/);
    expect(await refusal({ ...base, name: 'noSuchJob' })).toMatch(/^UNKNOWN_JOB: .*noSuchJob/);
    expect(await refusal({ ...base, payload: { ...report, accountId: '' } })).toMatch(/^VALIDATION: .*accountId/);
    expect(await refusal({ ...base, options: { maxAttempts: 0 } })).toMatch(/^VALIDATION: .*maxAttempts/);
    expect((await sdk.admin.schedules()).map((s) => s.key)).not.toContain('bad');
  });

  it('an upsert on the follower is enqueued by the leader, each occurrence once, with its options', async () => {
    const [leader, follower] = servers as [QueueServer, QueueServer];
    const sdk = createClient({ url: follower.url, jobs });
    const listed = await sdk.admin.upsertSchedule({
      key: KEY,
      cron: '* * * * * *',
      name: 'generateReport',
      payload: report,
      options: { priority: 4 },
    });
    expect(listed).toMatchObject({ key: KEY, source: 'stored', name: 'generateReport', timezone: 'UTC' });

    const scheduled = async () =>
      (await listAllJobs(rawClient(leader.url), 'generateReport')).filter((job) =>
        job.idempotencyKey?.startsWith(`schedule:${KEY}:`),
      );
    await until(async () => (await scheduled()).length >= OCCURRENCES, 15_000, 50);
    const stored = await scheduled();
    expect(new Set(stored.map((job) => job.runAt.getTime())).size).toBe(stored.length);
    for (const job of stored) {
      expect(job.idempotencyKey).toBe(`schedule:${KEY}:${job.runAt.toISOString()}`);
      expect(job.priority).toBe(4);
      expect(job.runAt.getMilliseconds()).toBe(0);
    }
    expect(await counter(leader, 'name="generateReport"')).toBeGreaterThanOrEqual(OCCURRENCES);
    expect(await counter(follower, 'name="generateReport"')).toBe(0);
  });

  it('schedules() lists the crontab’s entries and the stored ones, with next run and last outcome', async () => {
    const [leader, follower] = servers as [QueueServer, QueueServer];
    for (const server of [leader, follower]) {
      const listing = await createClient({ url: server.url, jobs }).admin.schedules();
      expect(listing.map(({ key, source, name }) => ({ key, source, name }))).toEqual([
        { key: 'tick-email', source: 'crontab', name: 'sendEmail' },
        { key: KEY, source: 'stored', name: 'generateReport' },
      ]);
      for (const schedule of listing) {
        expect(schedule.nextRunAt!.getTime()).toBeGreaterThan(Date.now() - 1_000);
        expect(schedule.nextRunAt!.getTime()).toBeLessThanOrEqual(Date.now() + 1_000);
        const lastRun = schedule.lastRun!;
        expect(lastRun.at.getTime()).toBeGreaterThan(Date.now() - 5_000);
        const job = await createClient({ url: server.url, jobs }).admin.list({ name: schedule.name, limit: 1000 });
        const enqueued = job.jobs.find((j) => j.id === lastRun.jobId);
        expect(enqueued?.runAt).toEqual(lastRun.at);
        expect(['ready', 'scheduled', 'active', 'completed']).toContain(lastRun.state);
      }
    }
  });

  it('removeSchedule stops it on the leader; a second remove finds nothing', async () => {
    const [leader, follower] = servers as [QueueServer, QueueServer];
    const sdk = createClient({ url: follower.url, jobs });
    expect(await sdk.admin.removeSchedule(KEY)).toBe(true);
    expect(await sdk.admin.removeSchedule(KEY)).toBe(false);
    // The leader hears of the removal over the bus; an occurrence under way may still land.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const count = async () => (await listAllJobs(rawClient(leader.url), 'generateReport')).length;
    const settled = await count();
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(await count()).toBe(settled);
    expect((await sdk.admin.schedules()).map((s) => s.key)).toEqual(['tick-email']);
  });
});
