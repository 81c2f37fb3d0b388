import { createHash } from 'node:crypto';
import { Cron } from 'croner';
import { z } from 'zod';
import { isValidJobName } from '../contract/define-catalog.ts';
import { canonicalJson } from '../contract/json-schema.ts';
import type { EnqueueResult } from '../engine/engine.ts';
import { resolveJobOptions } from '../engine/options.ts';
import { WorkqError } from '../errors.ts';
import type { Role } from './role-runner.ts';

/**
 * One recurring job: at every time its cron expression names, the server
 * enqueues one job of `name` with `payload`. Servers that share a store and
 * an entry enqueue each occurrence once between them: the occurrence's
 * idempotency key names the entry and the time.
 */
export interface CronEntry {
  /**
   * When: five fields (minute, hour, day of month, month, day of week), or
   * six with seconds first, e.g. `0 3 * * *` for 03:00 every day.
   */
  cron: string;
  /** The job type each occurrence enqueues; its schema must be registered (by any producer or consumer). */
  name: string;
  /** The payload of every occurrence, checked against the registered schema when it is enqueued. @defaultValue {} */
  payload?: unknown;
  /** The payload's version. @defaultValue the newest version registered for `name` */
  version?: number;
  /** The IANA time zone the expression is read in, e.g. `Europe/Berlin`. @defaultValue 'UTC' */
  timezone?: string;
  /**
   * Names the entry across servers and deploys. @defaultValue derived from
   * the name, expression, time zone, version and payload (so changing any of
   * them makes a new entry)
   */
  key?: string;
  /** Enqueue options of every occurrence. The catalog's `defaults` are the SDK's, so they do not apply here. */
  options?: {
    priority?: number;
    maxAttempts?: number;
    backoff?: { type: 'fixed' | 'exponential'; delayMs: number; maxDelayMs?: number };
    leaseMs?: number;
    order?: 'fifo' | 'lifo';
  };
}

/** An entry, checked and with its expression parsed. */
export interface ScheduledEntry {
  entry: CronEntry;
  /** The prefix of its occurrences' idempotency keys. */
  key: string;
  /** The time zone its expression is read in (`entry.timezone`, or UTC). */
  timezone: string;
  times: Cron;
}

const backoff = z
  .object({ type: z.enum(['fixed', 'exponential']), delayMs: z.number(), maxDelayMs: z.number().optional() })
  .strict();
const cronEntry = z
  .object({
    cron: z.string().min(1).max(200),
    name: z.string().refine(isValidJobName, 'must be a valid job name'),
    payload: z.unknown().optional(),
    version: z.number().int().min(1).max(1_000_000).optional(),
    timezone: z.string().min(1).max(100).optional(),
    key: z
      .string()
      .min(1)
      .max(200)
      .refine((key) => !key.includes('\u0000'), 'must not contain a NUL character')
      .optional(),
    options: z
      .object({
        priority: z.number().optional(),
        maxAttempts: z.number().optional(),
        backoff: backoff.optional(),
        leaseMs: z.number().optional(),
        order: z.enum(['fifo', 'lifo']).optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

/**
 * Checks a crontab and parses its expressions; refuses it with `VALIDATION`,
 * naming the entry and what is wrong, before anything runs.
 */
export function parseCrontab(entries: readonly unknown[]): ScheduledEntry[] {
  const keys = new Set<string>();
  return entries.map((raw, index) => {
    const which = `Crontab entry ${index + 1}`;
    const parsed = cronEntry.safeParse(raw);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(entry)'}: ${i.message}`).join('; ');
      throw new WorkqError('VALIDATION', `${which} is invalid: ${issues}`);
    }
    const entry = parsed.data as CronEntry;
    try {
      resolveJobOptions(entry.options, undefined);
    } catch (error) {
      throw new WorkqError('VALIDATION', `${which} is invalid: options: ${(error as Error).message}`);
    }
    const timezone = entry.timezone ?? 'UTC';
    let times: Cron;
    try {
      times = new Cron(entry.cron, { timezone, mode: '5-or-6-parts' });
      times.nextRun();
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new WorkqError('VALIDATION', `${which} ("${entry.cron}" for "${entry.name}") cannot be read: ${reason}`);
    }
    const key = entry.key ?? derivedKey(entry, timezone);
    if (keys.has(key)) {
      throw new WorkqError(
        'VALIDATION',
        `${which} repeats an earlier entry (key "${key}"): give one of them a different \`key\`.`,
      );
    }
    keys.add(key);
    return { entry, key, timezone, times };
  });
}

function derivedKey({ name, cron, version: jobVersion, payload }: CronEntry, timezone: string): string {
  const identity = canonicalJson({ name, cron, timezone, version: jobVersion ?? null, payload });
  return `${name}:${createHash('sha256').update(identity).digest('hex').slice(0, 16)}`;
}

/** An entry as the admin API lists it: what it enqueues, and when next. */
export function describeEntry({ entry, key, timezone, times }: ScheduledEntry, now: Date) {
  return {
    key,
    cron: entry.cron,
    timezone,
    name: entry.name,
    version: entry.version ?? null,
    nextRunAt: times.nextRun(now),
  };
}

/** The idempotency key of one occurrence: its entry's key and its time. */
export function occurrenceKey(scheduled: ScheduledEntry, at: Date): string {
  return `cron:${scheduled.key}:${at.toISOString()}`;
}

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
}

/** Longest single timer: a later occurrence is waited for in steps, so clock changes and long gaps are followed. */
const MAX_WAIT_MS = 60_000;
const FIRST_RETRY_MS = 1_000;
const MAX_RETRY_MS = 30_000;
/** An entry's warning repeated with the same error is logged at most this often. */
const REPEAT_WARNING_EVERY_MS = 60_000;

/**
 * Enqueues each crontab entry's occurrences as they come due: at the
 * occurrence's time, one job whose run time is that time. A role: it runs
 * on the leading server only (`lead`, `stepDown`). When a server becomes the
 * leader it first enqueues, late, the occurrences of the last `catchUpMs`,
 * so those a dying leader missed are not lost; their idempotency keys keep
 * each occurrence one job, whichever servers enqueue it. An enqueue that
 * fails (store unavailable, schema not registered yet) is retried with
 * backoff until the entry's next occurrence. A process that stalls enqueues
 * the occurrence it was waiting for, late, and skips the ones it stalled past.
 */
export class CronScheduler implements Role {
  readonly name = 'cron';
  private readonly timers = new Set<ReturnType<typeof setTimeout>>();
  private readonly pending = new Set<Promise<void>>();
  private closing = new AbortController();
  /** Per entry key: the last warning logged (message and error), and how many like it were held back since. */
  private readonly warned = new Map<string, { reason: string; atMs: number; heldBack: number }>();

  constructor(
    private readonly entries: readonly ScheduledEntry[],
    private readonly deps: SchedulerDeps,
  ) {}

  /** Starts enqueueing: the occurrences of the last `catchUpMs`, late, then each as it comes due. */
  lead(): void {
    if (!this.closing.signal.aborted && this.timers.size > 0) return;
    this.closing = new AbortController();
    const now = this.deps.now();
    const since = new Date(now.getTime() - (this.deps.catchUpMs ?? 0));
    for (const scheduled of this.entries) {
      for (let at = scheduled.times.nextRun(since); at && at < now; at = scheduled.times.nextRun(at)) {
        this.track(this.enqueueOccurrence(scheduled, at));
      }
      this.armAfter(scheduled, now);
    }
  }

  /** Arms no more occurrences; resolves once enqueues under way are done. */
  async stepDown(): Promise<void> {
    this.closing.abort();
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    await Promise.allSettled([...this.pending]);
  }

  private armAfter(scheduled: ScheduledEntry, after: Date): void {
    const at = scheduled.times.nextRun(after);
    if (at) this.waitUntil(at, () => this.fire(scheduled, at));
  }

  private waitUntil(at: Date, then: () => void): void {
    if (this.closing.signal.aborted) return;
    const waitMs = at.getTime() - this.deps.now().getTime();
    if (waitMs <= 0) {
      then();
      return;
    }
    const timer = setTimeout(
      () => {
        this.timers.delete(timer);
        this.waitUntil(at, then);
      },
      Math.min(waitMs, MAX_WAIT_MS),
    );
    timer.unref();
    this.timers.add(timer);
  }

  private fire(scheduled: ScheduledEntry, at: Date): void {
    this.track(this.enqueueOccurrence(scheduled, at));
    this.armAfter(scheduled, this.deps.now());
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

  private async enqueueOccurrence(scheduled: ScheduledEntry, at: Date): Promise<void> {
    const fields = { name: scheduled.entry.name, cron: scheduled.entry.cron, at: at.toISOString() };
    const next = scheduled.times.nextRun(at);
    let retryMs = FIRST_RETRY_MS;
    for (;;) {
      try {
        await this.deps.enqueue(scheduled, at, occurrenceKey(scheduled, at));
        this.warned.delete(scheduled.key);
        return;
      } catch (error) {
        const reason = error instanceof WorkqError ? `${error.code}: ${error.message}` : String(error);
        const retryAt = this.deps.now().getTime() + retryMs;
        if (this.closing.signal.aborted || (next !== null && retryAt >= next.getTime())) {
          this.warn(scheduled.key, 'cron occurrence skipped: its enqueue failed', { ...fields, error: reason });
          return;
        }
        this.warn(scheduled.key, 'cron enqueue failed; retrying', { ...fields, error: reason, retryInMs: retryMs });
        if (!(await pause(retryMs, this.closing.signal))) return;
        retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
      }
    }
  }
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
