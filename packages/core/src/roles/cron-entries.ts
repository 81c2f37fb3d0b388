import { createHash } from 'node:crypto';
import { Cron } from 'croner';
import { z } from 'zod';
import { isValidJobName } from '../contract/define-catalog.ts';
import { canonicalJson } from '../contract/json-schema.ts';
import { resolveJobOptions } from '../engine/options.ts';
import type { StoredSchedule } from '../engine/store.ts';
import { fromStoredValue } from '../engine/stored-value.ts';
import { WorkqError } from '../errors.ts';

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
  version?: number | undefined;
  /** The IANA time zone the expression is read in, e.g. `Europe/Berlin`. @defaultValue 'UTC' */
  timezone?: string | undefined;
  /**
   * Names the entry across servers and deploys. @defaultValue derived from
   * the name, expression, time zone, version and payload (so changing any of
   * them makes a new entry)
   */
  key?: string | undefined;
  /** Enqueue options of every occurrence. The catalog's `defaults` are the SDK's, so they do not apply here. */
  options?:
    | {
        priority?: number | undefined;
        maxAttempts?: number | undefined;
        backoff?: { type: 'fixed' | 'exponential'; delayMs: number; maxDelayMs?: number | undefined } | undefined;
        leaseMs?: number | undefined;
        order?: 'fifo' | 'lifo' | undefined;
      }
    | undefined;
}

/** An entry, checked and with its expression parsed. */
export interface ScheduledEntry {
  entry: CronEntry;
  /** Names the entry: `entry.key`, or the one derived from the entry. */
  key: string;
  /** The time zone its expression is read in (`entry.timezone`, or UTC). */
  timezone: string;
  times: Cron;
  /** Where it comes from: a server's crontab, or the store (`admin.upsertSchedule`). */
  source: 'crontab' | 'stored';
  /** When a stored schedule was last written (its occurrences before that are not its own); `null` for the crontab's. */
  storedAt: Date | null;
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
    const scheduled = parseEntry(raw, which, 'crontab', null);
    if (keys.has(scheduled.key)) {
      throw new WorkqError(
        'VALIDATION',
        `${which} repeats an earlier entry (key "${scheduled.key}"): give one of them a different \`key\`.`,
      );
    }
    keys.add(scheduled.key);
    return scheduled;
  });
}

/**
 * Checks a schedule to keep in the store (`admin.upsertSchedule`): a crontab
 * entry with its `key` required. Refuses it with `VALIDATION`. The job name
 * and payload are the server's to check against the registered schemas.
 */
export function parseSchedule(raw: unknown, storedAt: Date): ScheduledEntry {
  const key = (raw as { key?: unknown } | null)?.key;
  if (typeof key !== 'string' || key === '') {
    throw new WorkqError('VALIDATION', 'A schedule needs a `key`: the name it is kept, replaced and removed by.');
  }
  return parseEntry(raw, `Schedule "${key}"`, 'stored', storedAt);
}

/** The schedule as the store keeps it. */
export function toStoredSchedule({ entry, key, timezone, storedAt }: ScheduledEntry, payload: unknown): StoredSchedule {
  return {
    key,
    cron: entry.cron,
    timezone,
    name: entry.name,
    version: entry.version ?? null,
    payload,
    options: (entry.options as Record<string, unknown> | undefined) ?? null,
    updatedAt: storedAt ?? new Date(0),
  };
}

/** A schedule the store keeps, checked again as it is read (a row written by hand is refused like an upsert). */
export function fromStoredSchedule(stored: StoredSchedule): ScheduledEntry {
  const raw = {
    key: stored.key,
    cron: stored.cron,
    timezone: stored.timezone,
    name: stored.name,
    payload: fromStoredValue(stored.payload),
    ...(stored.version === null ? {} : { version: stored.version }),
    ...(stored.options === null ? {} : { options: stored.options }),
  };
  return parseSchedule(raw, stored.updatedAt);
}

function parseEntry(
  raw: unknown,
  which: string,
  source: ScheduledEntry['source'],
  storedAt: Date | null,
): ScheduledEntry {
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
  return { entry, key: entry.key ?? derivedKey(entry, timezone), timezone, times, source, storedAt };
}

function derivedKey({ name, cron, version: jobVersion, payload }: CronEntry, timezone: string): string {
  const identity = canonicalJson({ name, cron, timezone, version: jobVersion ?? null, payload });
  return `${name}:${createHash('sha256').update(identity).digest('hex').slice(0, 16)}`;
}

/** An entry as the admin API lists it: where it comes from, what it enqueues, and when next. */
export function describeEntry({ entry, key, timezone, times, source }: ScheduledEntry, now: Date) {
  return {
    key,
    source,
    cron: entry.cron,
    timezone,
    name: entry.name,
    version: entry.version ?? null,
    nextRunAt: times.nextRun(now),
  };
}

/**
 * What names an entry's occurrences and its last run: `cron:<key>` for a
 * crontab entry, `schedule:<key>` for a stored one, so neither takes the
 * other's idempotency keys.
 */
export function runKey(scheduled: ScheduledEntry): string {
  return `${scheduled.source === 'stored' ? 'schedule' : 'cron'}:${scheduled.key}`;
}

/** The idempotency key of one occurrence: its entry's run key and its time. */
export function occurrenceKey(scheduled: ScheduledEntry, at: Date): string {
  return `${runKey(scheduled)}:${at.toISOString()}`;
}
