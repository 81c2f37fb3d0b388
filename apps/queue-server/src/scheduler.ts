import { createHash } from 'node:crypto';
import { canonicalJson, WorkqError } from '@workq/core';
import type { EnqueueResult } from '@workq/core/engine';
import { Cron } from 'croner';
import { z } from 'zod';
import type { CronEntry } from './cron-entry.ts';
import type { Logger } from './options.ts';
import { enqueueOptions, jobName, version } from './router/inputs.ts';
import { enqueueValidated } from './router/producer.ts';
import type { ServerServices } from './router/trpc.ts';

export type { CronEntry } from './cron-entry.ts';

/** An entry, checked and with its expression parsed. */
export interface ScheduledEntry {
  entry: CronEntry;
  /** The prefix of its occurrences' idempotency keys. */
  key: string;
  /** The time zone its expression is read in (`entry.timezone`, or UTC). */
  timezone: string;
  times: Cron;
}

const cronEntry = z
  .object({
    cron: z.string().min(1).max(200),
    name: jobName,
    payload: z.unknown().optional(),
    version: version.optional(),
    timezone: z.string().min(1).max(100).optional(),
    key: z
      .string()
      .min(1)
      .max(200)
      .refine((key) => !key.includes('\u0000'), 'must not contain a NUL character')
      .optional(),
    options: enqueueOptions.unwrap().omit({ delayMs: true, runAt: true, idempotencyKey: true }).strict().optional(),
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
  logger: Logger;
}

/** Longest single timer: a later occurrence is waited for in steps, so clock changes and long gaps are followed. */
const MAX_WAIT_MS = 60_000;
const FIRST_RETRY_MS = 1_000;
const MAX_RETRY_MS = 30_000;
/** An entry's warning repeated with the same error is logged at most this often. */
const REPEAT_WARNING_EVERY_MS = 60_000;

/**
 * Enqueues each crontab entry's occurrences as they come due: at the
 * occurrence's time, one job whose run time is that time. An enqueue that
 * fails (store unavailable, schema not registered yet) is retried with
 * backoff until the entry's next occurrence. Occurrences are not caught up:
 * those that passed while no server ran are skipped, and a process that
 * stalls enqueues the occurrence it was waiting for, late, and skips the
 * ones it stalled past.
 */
export class CronScheduler {
  private readonly timers = new Set<ReturnType<typeof setTimeout>>();
  private readonly pending = new Set<Promise<void>>();
  private readonly closing = new AbortController();
  /** Per entry key: the last warning logged (message and error), and how many like it were held back since. */
  private readonly warned = new Map<string, { reason: string; atMs: number; heldBack: number }>();

  constructor(
    private readonly entries: readonly ScheduledEntry[],
    private readonly deps: SchedulerDeps,
  ) {}

  start(): void {
    for (const scheduled of this.entries) this.armAfter(scheduled, this.deps.now());
  }

  /** Arms no more occurrences; resolves once enqueues under way are done. */
  async close(): Promise<void> {
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
    const done = this.enqueueOccurrence(scheduled, at).finally(() => this.pending.delete(done));
    this.pending.add(done);
    this.armAfter(scheduled, this.deps.now());
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

/** Enqueues occurrences as a producer's enqueue would be: size and schema checked, handed to a waiting consumer. */
export function enqueueThroughServer(services: ServerServices): SchedulerDeps['enqueue'] {
  return async ({ entry }, at, idempotencyKey) => {
    const jobVersion = entry.version ?? (await services.registry.newestVersion(entry.name));
    const options = { ...entry.options, runAt: at, idempotencyKey };
    const [result] = (await enqueueValidated(services, entry.name, jobVersion, [entry.payload ?? {}], options)) as [
      EnqueueResult,
    ];
    services.metrics.cronEnqueues.inc({ name: entry.name, outcome: result.created ? 'created' : 'existing' });
    return result;
  };
}
