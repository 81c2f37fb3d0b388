import { expect, it } from 'vitest';
import type { StoredSchedule } from '../../src/engine/store.ts';
import type { SuiteContext } from './context.ts';

/** Schedules kept in the store and their last runs, through the store interface. */
export function registerScheduleTests(ctx: SuiteContext): void {
  const schedule = (key: string, overrides: Partial<StoredSchedule> = {}): StoredSchedule => ({
    key,
    cron: '*/5 * * * *',
    timezone: 'Europe/Berlin',
    name: ctx.jobName('schedule-job'),
    version: 2,
    payload: { to: 'ops@example.com', nested: { list: [1, null, { $deep: true }] } },
    options: { priority: 3, backoff: { type: 'fixed', delayMs: 100 } },
    updatedAt: new Date('2026-01-01T00:00:00.000Z'),
    ...overrides,
  });

  it('upsertSchedule inserts, then replaces by key; listSchedules orders by key; removeSchedule deletes one', async () => {
    const { store } = ctx.engine();
    const b = schedule(ctx.jobName('sched-b'));
    const a = schedule(b.key.replace('sched-b', 'sched-a'), { version: null, payload: null, options: null });
    await store.upsertSchedule(b);
    await store.upsertSchedule(a);
    const changed = schedule(b.key, { cron: '0 3 * * *', timezone: 'UTC', payload: { n: 1 }, updatedAt: new Date() });
    await store.upsertSchedule(changed);

    const mine = async () => (await store.listSchedules()).filter((s) => s.key === a.key || s.key === b.key);
    expect(await mine()).toEqual([a, changed]);

    expect(await store.removeSchedule(a.key)).toBe(true);
    expect(await store.removeSchedule(a.key)).toBe(false);
    expect(await mine()).toEqual([changed]);
  });

  it('two stores on one database see each other’s schedules', async () => {
    const [first, second] = await ctx.clientStores(2);
    const kept = schedule(ctx.jobName('sched-shared'));
    await first!.upsertSchedule(kept);
    expect((await second!.listSchedules()).filter((s) => s.key === kept.key)).toEqual([kept]);
    expect(await second!.removeSchedule(kept.key)).toBe(true);
    expect((await first!.listSchedules()).filter((s) => s.key === kept.key)).toEqual([]);
  });

  it('recordScheduleRun keeps the latest run per key, whichever order runs are recorded in', async () => {
    const { store } = ctx.engine();
    const key = `schedule:${ctx.jobName('sched-runs')}`;
    const other = `cron:${ctx.jobName('sched-runs-other')}`;
    const at = (minute: number) => new Date(Date.UTC(2026, 0, 1, 0, minute));

    await store.recordScheduleRun({ key, jobId: 'job-2', at: at(2) });
    await store.recordScheduleRun({ key, jobId: 'job-1', at: at(1) });
    await store.recordScheduleRun({ key, jobId: 'job-2-again', at: at(2) });
    await store.recordScheduleRun({ key: other, jobId: 'job-9', at: at(9) });
    expect(await store.listScheduleRuns([key, other, 'schedule:none'])).toEqual(
      [
        { key, jobId: 'job-2', at: at(2) },
        { key: other, jobId: 'job-9', at: at(9) },
      ].sort((x, y) => (x.key < y.key ? -1 : 1)),
    );

    await store.recordScheduleRun({ key, jobId: 'job-3', at: at(3) });
    expect(await store.listScheduleRuns([key])).toEqual([{ key, jobId: 'job-3', at: at(3) }]);
    expect(await store.listScheduleRuns([])).toEqual([]);
  });
}
