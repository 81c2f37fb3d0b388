import { canonicalJson } from '../contract/json-schema.ts';
import type { EnqueueResult } from '../engine/engine.ts';
import { toStoredValue } from '../engine/stored-value.ts';
import { WorkqError } from '../errors.ts';
import { occurrenceKey, runKey, type ScheduledEntry } from './cron-entries.ts';
import type { Role } from './role-runner.ts';

export interface SchedulerDeps {
  now(): Date;
  /** Enqueues one occurrence (validated, with `idempotencyKey`); resolves with what the store did. */
  enqueue(scheduled: ScheduledEntry, at: Date, idempotencyKey: string): Promise<EnqueueResult>;
  logger: { warn(message: string, fields: Record<string, unknown>): void };
  /**
   * When this server becomes the leader, occurrences due this long before
   * are enqueued late (those the previous leader enqueued are kept once by
   * their idempotency keys). @defaultValue 0: none are caught up
   */
  catchUpMs?: number;
  /**
   * Reads the schedules kept in the store, which run beside the crontab's
   * entries; the leader reads them when it starts leading, every
   * `reloadEveryMs`, and on `reload()`. @defaultValue none: the crontab only
   */
  loadStored?: () => Promise<ScheduledEntry[]>;
  /** How often the leader reads the stored schedules again. @defaultValue 5_000 */
  reloadEveryMs?: number;
}

/** Longest single timer: a later occurrence is waited for in steps, so clock changes and long gaps are followed. */
const MAX_WAIT_MS = 60_000;
const FIRST_RETRY_MS = 1_000;
const MAX_RETRY_MS = 30_000;
const DEFAULT_RELOAD_EVERY_MS = 5_000;
/** An entry's warning repeated with the same error is logged at most this often. */
const REPEAT_WARNING_EVERY_MS = 60_000;

/** One entry this server enqueues while it leads: stopped on its own when a stored schedule changes or goes. */
interface Armed {
  scheduled: ScheduledEntry;
  /** The entry's definition, to tell a changed schedule from the same one read again. */
  identity: string;
  stop: AbortController;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/**
 * Enqueues each crontab entry's and stored schedule's occurrences as they
 * come due: at the occurrence's time, one job whose run time is that time.
 * A role: it runs on the leading server only (`lead`, `stepDown`). When a
 * server becomes the leader it first enqueues, late, the occurrences of the
 * last `catchUpMs`, so those a dying leader missed are not lost; their
 * idempotency keys keep each occurrence one job, whichever servers enqueue
 * it. A stored schedule is also caught up from the time it was written, so
 * one written on another server loses no occurrence before the leader reads
 * it. An enqueue that fails (store unavailable, schema not registered yet) is
 * retried with backoff until the entry's next occurrence. A process that
 * stalls enqueues the occurrence it was waiting for, late, and skips the
 * ones it stalled past.
 */
export class CronScheduler implements Role {
  readonly name = 'cron';
  private readonly armed = new Map<string, Armed>();
  private readonly pending = new Set<Promise<void>>();
  private leading = false;
  /** Occurrences after this time are caught up: the start of this term, less `catchUpMs`. */
  private catchUpSince = new Date(0);
  private reloadTimer: ReturnType<typeof setTimeout> | undefined;
  private reloading: Promise<void> | undefined;
  private reloadAgain = false;
  /** Per entry key: the last warning logged (message and error), and how many like it were held back since. */
  private readonly warned = new Map<string, { reason: string; atMs: number; heldBack: number }>();

  constructor(
    private readonly crontab: readonly ScheduledEntry[],
    private readonly deps: SchedulerDeps,
  ) {}

  /** Starts enqueueing: the occurrences of the last `catchUpMs`, late, then each as it comes due. */
  lead(): void {
    if (this.leading) return;
    this.leading = true;
    this.catchUpSince = new Date(this.deps.now().getTime() - (this.deps.catchUpMs ?? 0));
    for (const scheduled of this.crontab) this.arm(scheduled);
    if (this.deps.loadStored) void this.reload();
  }

  /** Arms no more occurrences; resolves once enqueues under way are done. */
  async stepDown(): Promise<void> {
    this.leading = false;
    clearTimeout(this.reloadTimer);
    for (const armed of [...this.armed.values()]) this.disarm(armed);
    await Promise.allSettled([this.reloading, ...this.pending]);
  }

  /**
   * Reads the stored schedules now, while leading (a schedule was written on
   * this server, or another announced one): new ones are armed, changed ones
   * armed anew, removed ones stopped. Resolves once done; never rejects.
   */
  reload(): Promise<void> {
    if (!this.leading || !this.deps.loadStored) return Promise.resolve();
    if (this.reloading) {
      this.reloadAgain = true;
      return this.reloading;
    }
    clearTimeout(this.reloadTimer);
    this.reloading = this.loadAndSync().finally(() => {
      this.reloading = undefined;
      if (!this.leading) return;
      if (this.reloadAgain) {
        this.reloadAgain = false;
        void this.reload();
        return;
      }
      this.reloadTimer = setTimeout(() => void this.reload(), this.deps.reloadEveryMs ?? DEFAULT_RELOAD_EVERY_MS);
      this.reloadTimer.unref();
    });
    return this.reloading;
  }

  private async loadAndSync(): Promise<void> {
    let stored: ScheduledEntry[];
    try {
      stored = (await this.deps.loadStored?.()) ?? [];
    } catch (error) {
      const reason = error instanceof WorkqError ? `${error.code}: ${error.message}` : String(error);
      this.warn('schedules', 'stored schedules could not be read; keeping those read before', { error: reason });
      return;
    }
    if (!this.leading) return;
    const wanted = new Map(stored.map((scheduled) => [runKey(scheduled), scheduled]));
    for (const armed of [...this.armed.values()]) {
      if (armed.scheduled.source === 'stored' && !wanted.has(runKey(armed.scheduled))) this.disarm(armed);
    }
    for (const [key, scheduled] of wanted) {
      const current = this.armed.get(key);
      if (current?.identity === identityOf(scheduled)) continue;
      if (current) this.disarm(current);
      this.arm(scheduled);
    }
  }

  /** Enqueues the entry's occurrences since the catch-up time (for a stored one, not before it was written), then each as it comes due. */
  private arm(scheduled: ScheduledEntry): void {
    const stop = new AbortController();
    const armed: Armed = { scheduled, identity: identityOf(scheduled), stop, timer: undefined };
    this.armed.set(runKey(scheduled), armed);
    const now = this.deps.now();
    const storedAt = scheduled.storedAt;
    const since = storedAt && storedAt > this.catchUpSince ? storedAt : this.catchUpSince;
    for (let at = scheduled.times.nextRun(since); at && at <= now; at = scheduled.times.nextRun(at)) {
      this.track(this.enqueueOccurrence(armed, at));
    }
    this.armAfter(armed, now);
  }

  private disarm(armed: Armed): void {
    armed.stop.abort();
    clearTimeout(armed.timer);
    if (this.armed.get(runKey(armed.scheduled)) === armed) this.armed.delete(runKey(armed.scheduled));
  }

  private armAfter(armed: Armed, after: Date): void {
    const at = armed.scheduled.times.nextRun(after);
    if (at) this.waitUntil(armed, at, () => this.fire(armed, at));
  }

  private waitUntil(armed: Armed, at: Date, then: () => void): void {
    if (armed.stop.signal.aborted) return;
    const waitMs = at.getTime() - this.deps.now().getTime();
    if (waitMs <= 0) {
      then();
      return;
    }
    armed.timer = setTimeout(() => this.waitUntil(armed, at, then), Math.min(waitMs, MAX_WAIT_MS));
    armed.timer.unref();
  }

  private fire(armed: Armed, at: Date): void {
    this.track(this.enqueueOccurrence(armed, at));
    this.armAfter(armed, this.deps.now());
  }

  private track(enqueue: Promise<void>): void {
    const done = enqueue.finally(() => this.pending.delete(done));
    this.pending.add(done);
  }

  /** Logs a warning, unless the entry logged the same one, with the same error, within the last minute. */
  private warn(key: string, message: string, fields: { error: string } & Record<string, unknown>): void {
    const nowMs = this.deps.now().getTime();
    const reason = `${message}: ${fields.error}`;
    const last = this.warned.get(key);
    if (last && last.reason === reason && nowMs - last.atMs < REPEAT_WARNING_EVERY_MS) {
      last.heldBack++;
      return;
    }
    this.deps.logger.warn(message, last?.heldBack ? { ...fields, heldBack: last.heldBack } : fields);
    this.warned.set(key, { reason, atMs: nowMs, heldBack: 0 });
  }

  private async enqueueOccurrence({ scheduled, stop }: Armed, at: Date): Promise<void> {
    const fields = { name: scheduled.entry.name, cron: scheduled.entry.cron, at: at.toISOString() };
    const warnKey = runKey(scheduled);
    const next = scheduled.times.nextRun(at);
    let retryMs = FIRST_RETRY_MS;
    for (;;) {
      try {
        await this.deps.enqueue(scheduled, at, occurrenceKey(scheduled, at));
        this.warned.delete(warnKey);
        return;
      } catch (error) {
        const reason = error instanceof WorkqError ? `${error.code}: ${error.message}` : String(error);
        const retryAt = this.deps.now().getTime() + retryMs;
        if (stop.signal.aborted || (next !== null && retryAt >= next.getTime())) {
          this.warn(warnKey, 'cron occurrence skipped: its enqueue failed', { ...fields, error: reason });
          return;
        }
        this.warn(warnKey, 'cron enqueue failed; retrying', { ...fields, error: reason, retryInMs: retryMs });
        if (!(await pause(retryMs, stop.signal))) return;
        retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
      }
    }
  }
}

/**
 * What makes two readings of a schedule the same schedule. The payload counts in its stored form, which JSON
 * keeps whatever it holds (a bigint, a Date, a Set): JSON alone would throw on some and blur others.
 */
function identityOf({ entry, timezone, storedAt }: ScheduledEntry): string {
  const stored = { ...entry, payload: toStoredValue(entry.payload) };
  return canonicalJson({ entry: stored, timezone, storedAt: storedAt?.toISOString() ?? null });
}

/** Resolves `true` after `ms`, or `false` as soon as `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const stop = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', stop);
      resolve(true);
    }, ms);
    timer.unref();
    signal.addEventListener('abort', stop, { once: true });
  });
}
