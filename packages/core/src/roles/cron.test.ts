import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { EnqueueResult } from '../engine/engine.ts';
import { isWorkqError, WorkqError } from '../errors.ts';
import { CronScheduler } from './cron.ts';
import { occurrenceKey, parseCrontab, parseSchedule, type ScheduledEntry } from './cron-entries.ts';

const silent = { warn: vi.fn() };

/** A scheduler over fake timers whose enqueue records each call and answers with `answer`. */
function schedulerFor(
  entries: unknown[],
  answer: (call: number) => Promise<EnqueueResult> = async () => ({ id: 'j', created: true, state: 'ready' }),
  catchUpMs = 0,
) {
  const calls: { name: string; at: string; key: string }[] = [];
  const scheduler = new CronScheduler(parseCrontab(entries), {
    now: () => new Date(),
    logger: silent,
    catchUpMs,
    enqueue: (scheduled: ScheduledEntry, at: Date, idempotencyKey: string) => {
      calls.push({ name: scheduled.entry.name, at: at.toISOString(), key: idempotencyKey });
      return answer(calls.length);
    },
  });
  return { scheduler, calls };
}

describe('parseCrontab', () => {
  const refusal = (entries: unknown[]) => {
    try {
      parseCrontab(entries);
    } catch (error) {
      if (isWorkqError(error, 'VALIDATION')) return error.message;
      throw error;
    }
    throw new Error('accepted');
  };

  it('refuses a bad entry with VALIDATION, naming the entry and what is wrong', () => {
    expect(
      refusal([
        { cron: '0 3 * * *', name: 'report' },
        { cron: '61 * * * *', name: 'report' },
      ]),
    ).toMatch(/Crontab entry 2 \("61 \* \* \* \*" for "report"\) cannot be read: .*minute/);
    expect(refusal([{ cron: '0 3 * *', name: 'report' }])).toMatch(/entry 1 .*five, six/);
    expect(refusal([{ cron: '0 3 * * *', name: 'report', timezone: 'Mars/Olympus' }])).toMatch(/Mars\/Olympus/);
    expect(refusal([{ cron: '0 3 * * *' }])).toMatch(/Crontab entry 1 is invalid: name:/);
    expect(refusal([{ cron: '0 3 * * *', name: 'report', options: { runAt: 1 } }])).toMatch(/options/);
    expect(refusal([{ cron: '0 3 * * *', name: 'report', extra: true }])).toMatch(/extra/);
  });

  it('refuses two entries that would share idempotency keys', () => {
    const same = { cron: '0 3 * * *', name: 'report', payload: { kind: 'usage' } };
    expect(refusal([same, { ...same }])).toMatch(/entry 2 repeats an earlier entry/);
    expect(
      refusal([
        { ...same, key: 'nightly' },
        { cron: '0 4 * * *', name: 'other', key: 'nightly' },
      ]),
    ).toMatch(/key "nightly"/);
    // Differing payloads (or an explicit key) make different entries.
    expect(parseCrontab([same, { ...same, payload: { kind: 'billing' } }])).toHaveLength(2);
  });

  it('keys an occurrence by its entry and time, so servers with the same entry agree', () => {
    const entry = { cron: '0 3 * * *', name: 'report', payload: { b: 1, a: 2 } };
    const [one] = parseCrontab([entry]) as [ScheduledEntry];
    const [same] = parseCrontab([{ ...entry, payload: { a: 2, b: 1 } }]) as [ScheduledEntry];
    const at = new Date('2026-03-01T03:00:00Z');
    expect(occurrenceKey(one, at)).toBe(occurrenceKey(same, at));
    expect(occurrenceKey(one, at)).toMatch(/^cron:report:[0-9a-f]{16}:2026-03-01T03:00:00.000Z$/);
    const [named] = parseCrontab([{ ...entry, key: 'nightly' }]) as [ScheduledEntry];
    expect(occurrenceKey(named, at)).toBe('cron:nightly:2026-03-01T03:00:00.000Z');
  });
});

describe('CronScheduler', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: new Date('2026-03-28T23:59:30Z') });
    silent.warn.mockClear();
  });
  afterEach(() => vi.useRealTimers());

  it('enqueues each occurrence once, at its time, in the entry’s time zone', async () => {
    const { scheduler, calls } = schedulerFor([
      { cron: '0 * * * * *', name: 'tick' },
      // 03:00 in Berlin; the clocks go forward that night (CET to CEST).
      { cron: '0 3 * * *', name: 'nightly', timezone: 'Europe/Berlin' },
    ]);
    scheduler.lead();
    await vi.advanceTimersByTimeAsync(29_000);
    expect(calls).toEqual([]);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(calls.map((c) => `${c.name} ${c.at}`)).toEqual(['tick 2026-03-29T00:00:00.000Z']);
    await vi.advanceTimersByTimeAsync(3 * 3_600_000);
    const nightly = calls.filter((c) => c.name === 'nightly').map((c) => c.at);
    expect(nightly).toEqual(['2026-03-29T01:00:00.000Z']);
    const ticks = calls.filter((c) => c.name === 'tick').map((c) => c.at);
    expect(ticks).toHaveLength(3 * 60 + 1);
    expect(new Set(ticks).size).toBe(ticks.length);
    expect(new Set(calls.map((c) => c.key)).size).toBe(calls.length);
    await scheduler.stepDown();
  });

  it('on becoming the leader, enqueues late the occurrences of the last catchUpMs, then each as it comes due', async () => {
    // 23:59:30: the minutes 23:58 and 23:59 fell in the last two minutes; 23:57 did not.
    const { scheduler, calls } = schedulerFor([{ cron: '* * * * *', name: 'minutely' }], undefined, 120_000);
    scheduler.lead();
    await vi.advanceTimersByTimeAsync(0);
    expect(calls.map((c) => c.at)).toEqual(['2026-03-28T23:58:00.000Z', '2026-03-28T23:59:00.000Z']);
    await vi.advanceTimersByTimeAsync(30_000);
    expect(calls.map((c) => c.at).at(-1)).toBe('2026-03-29T00:00:00.000Z');
    // Stepping down stops it; leading again catches up what passed meanwhile, under the same keys.
    await scheduler.stepDown();
    await vi.advanceTimersByTimeAsync(90_000);
    expect(calls).toHaveLength(3);
    scheduler.lead();
    await vi.advanceTimersByTimeAsync(0);
    // 00:01:30 now: the window since 23:59:30 holds 00:00 (enqueued before, the same job by its key) and 00:01.
    expect(calls.map((c) => c.at).slice(3)).toEqual(['2026-03-29T00:00:00.000Z', '2026-03-29T00:01:00.000Z']);
    expect(calls[3]?.key).toBe(calls[2]?.key);
    await scheduler.stepDown();
  });

  it('after a stall, enqueues the occurrence it was waiting for, late, and skips the rest', async () => {
    const { scheduler, calls } = schedulerFor([{ cron: '* * * * *', name: 'minutely' }]);
    scheduler.lead();
    await vi.advanceTimersByTimeAsync(30_000);
    expect(calls.map((c) => c.at)).toEqual(['2026-03-29T00:00:00.000Z']);
    // The process stalls for five minutes (the clock moves, timers do not run).
    vi.setSystemTime(new Date('2026-03-29T00:05:10Z'));
    await vi.advanceTimersByTimeAsync(120_000);
    const times = calls.map((c) => c.at);
    expect(times.slice(0, 2)).toEqual(['2026-03-29T00:00:00.000Z', '2026-03-29T00:01:00.000Z']);
    expect(times.length).toBeGreaterThan(2);
    expect(times.slice(2).every((at) => at >= '2026-03-29T00:06:00.000Z')).toBe(true);
    await scheduler.stepDown();
  });

  it('retries a failed enqueue with backoff, under the same idempotency key', async () => {
    const unavailable = new WorkqError('UNAVAILABLE', 'The store is unavailable.');
    const { scheduler, calls } = schedulerFor([{ cron: '* * * * *', name: 'minutely' }], async (call) => {
      if (call <= 3) throw unavailable;
      return { id: 'j', created: true, state: 'ready' };
    });
    scheduler.lead();
    await vi.advanceTimersByTimeAsync(30_000 + 1_000 + 2_000);
    // Tried at :00, then after 1 s and 2 s more; the third retry succeeds 4 s later.
    expect(calls.map((c) => c.at)).toEqual(Array(3).fill('2026-03-29T00:00:00.000Z'));
    await vi.advanceTimersByTimeAsync(4_000);
    expect(calls).toHaveLength(4);
    expect(new Set(calls.map((c) => c.key)).size).toBe(1);
    expect(silent.warn).toHaveBeenCalledWith(
      'cron enqueue failed; retrying',
      expect.objectContaining({ name: 'minutely', error: 'UNAVAILABLE: The store is unavailable.' }),
    );
    await scheduler.stepDown();
  });

  it('gives an occurrence up when its retries would reach the next one', async () => {
    const { scheduler, calls } = schedulerFor([{ cron: '0,5 * * * * *', name: 'often' }], async () => {
      throw new WorkqError('UNKNOWN_JOB', 'No job type "often" is registered with this server.');
    });
    scheduler.lead();
    await vi.advanceTimersByTimeAsync(30_000 + 4_999);
    // At :00, then 1 s and 2 s later; a 4 s wait would pass :05, so the occurrence is given up.
    expect(calls.map((c) => c.at)).toEqual(Array(3).fill('2026-03-29T00:00:00.000Z'));
    expect(silent.warn).toHaveBeenLastCalledWith(
      'cron occurrence skipped: its enqueue failed',
      expect.objectContaining({ at: '2026-03-29T00:00:00.000Z' }),
    );
    await vi.advanceTimersByTimeAsync(1);
    expect(calls.at(-1)?.at).toBe('2026-03-29T00:00:05.000Z');
    await scheduler.stepDown();
  });

  it('logs a warning repeated with the same error once a minute, saying how many it held back', async () => {
    const { scheduler } = schedulerFor([{ cron: '* * * * * *', name: 'secondly' }], async () => {
      throw new WorkqError('UNKNOWN_JOB', 'No job type "secondly" is registered with this server.');
    });
    scheduler.lead();
    await vi.advanceTimersByTimeAsync(30_500);
    // Every second's occurrence fails and is skipped (its retry would reach the next one): logged once.
    expect(silent.warn).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(silent.warn).toHaveBeenCalledTimes(2);
    expect(silent.warn).toHaveBeenLastCalledWith(
      'cron occurrence skipped: its enqueue failed',
      expect.objectContaining({ name: 'secondly', heldBack: 59 }),
    );
    await scheduler.stepDown();
  });

  it('enqueues nothing more once closed, and ends a retry’s wait at once', async () => {
    const { scheduler, calls } = schedulerFor([{ cron: '* * * * * *', name: 'secondly' }], async () => {
      throw new WorkqError('UNAVAILABLE', 'The store is unavailable.');
    });
    scheduler.lead();
    await vi.advanceTimersByTimeAsync(30_000);
    const before = calls.length;
    expect(before).toBeGreaterThan(0);
    await scheduler.stepDown();
    await vi.advanceTimersByTimeAsync(120_000);
    expect(calls).toHaveLength(before);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('follows a far occurrence in steps, so a long wait needs no timer longer than a minute', async () => {
    const { scheduler, calls } = schedulerFor([{ cron: '0 0 1 1 *', name: 'yearly' }]);
    scheduler.lead();
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(vi.getTimerCount()).toBe(1);
    expect(calls).toEqual([]);
    await scheduler.stepDown();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('runs stored schedules beside the crontab: caught up from when they were written, re-armed when changed, stopped when removed', async () => {
    // 23:59:30. A schedule written at 23:59:05 on another server, read by this leader when it takes the lead.
    let stored: ScheduledEntry[] = [
      parseSchedule({ key: 'kept', cron: '*/10 * * * * *', name: 'tenth' }, new Date('2026-03-28T23:59:05Z')),
    ];
    const calls: { key: string; at: string }[] = [];
    const scheduler = new CronScheduler(parseCrontab([{ cron: '0 * * * *', name: 'hourly', key: 'hourly' }]), {
      now: () => new Date(),
      logger: silent,
      catchUpMs: 60_000,
      reloadEveryMs: 1_000,
      loadStored: async () => stored,
      enqueue: async (_scheduled, at, key) => {
        calls.push({ key, at: at.toISOString() });
        return { id: 'j', created: true, state: 'ready' };
      },
    });
    scheduler.lead();
    await vi.advanceTimersByTimeAsync(0);
    // Its occurrences since it was written (not the minute's catch-up before that), under its own key space.
    expect(calls.map((c) => c.key)).toEqual([
      'schedule:kept:2026-03-28T23:59:10.000Z',
      'schedule:kept:2026-03-28T23:59:20.000Z',
      'schedule:kept:2026-03-28T23:59:30.000Z',
    ]);
    calls.length = 0;

    // Changed (another expression): from the next read on, the old arming (due 23:59:40) is stopped, the new one runs.
    stored = [parseSchedule({ key: 'kept', cron: '*/15 * * * * *', name: 'tenth' }, new Date('2026-03-28T23:59:30Z'))];
    await vi.advanceTimersByTimeAsync(15_500);
    expect(calls.map((c) => c.at)).toEqual(['2026-03-28T23:59:45.000Z']);
    calls.length = 0;

    // Removed: nothing more of it after the next read; the crontab's entry keeps running.
    stored = [];
    await vi.advanceTimersByTimeAsync(1_000);
    calls.length = 0;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(calls.map((c) => c.key)).toEqual(['cron:hourly:2026-03-29T00:00:00.000Z']);

    // A follower reads nothing: reload() does nothing while not leading.
    await scheduler.stepDown();
    stored = [parseSchedule({ key: 'late', cron: '* * * * * *', name: 'tenth' }, new Date())];
    await scheduler.reload();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(calls).toHaveLength(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('runs, and reads again unchanged, a stored schedule whose payload holds values JSON has no form for', async () => {
    const payload = { count: 2n ** 70n, since: new Date('2026-01-01T00:00:00Z'), tags: new Set(['a']) };
    const stored = [parseSchedule({ key: 'typed', cron: '*/10 * * * * *', name: 'tenth', payload }, new Date())];
    const payloads: unknown[] = [];
    const scheduler = new CronScheduler([], {
      now: () => new Date(),
      logger: silent,
      reloadEveryMs: 1_000,
      loadStored: async () => stored,
      enqueue: async (scheduled) => {
        payloads.push(scheduled.entry.payload);
        return { id: 'j', created: true, state: 'ready' };
      },
    });
    scheduler.lead();
    await vi.advanceTimersByTimeAsync(25_000);
    await scheduler.reload();
    expect(payloads.length).toBeGreaterThanOrEqual(2);
    for (const seen of payloads) expect(seen).toEqual(payload);
    await scheduler.stepDown();
  });
});
