import type { Backoff, JobOrder, JobRetention } from '../contract/types.ts';
import {
  DEBOUNCE_MODES,
  type DebounceMode,
  type EnqueueOptions,
  IDEMPOTENCY_UNTIL,
  RETENTION_MS_LIMITS,
  type TraceContext,
} from '../jobs.ts';

export type { EnqueueOptions };

import { WorkqError } from '../errors.ts';
import { checkLeaseMs } from './input-checks.ts';

export interface ResolvedJobOptions {
  priority: number;
  maxAttempts: number;
  backoff: Backoff;
  leaseMs: number;
  order: JobOrder;
  /** The job's own retention (`EnqueueOptions.retention`); `null`: the server-wide one for every end. */
  retention: ResolvedRetention | null;
}

/** A job's own retention, checked: each end's time, `null` for an end that follows the server-wide setting. */
export interface ResolvedRetention {
  completedMs: number | null;
  deadMs: number | null;
}

export const ENGINE_JOB_DEFAULTS: ResolvedJobOptions = Object.freeze({
  priority: 0,
  maxAttempts: 5,
  backoff: Object.freeze({ type: 'exponential', delayMs: 1000 }) as Backoff,
  leaseMs: 30_000,
  order: 'fifo',
  retention: null,
});

const DAY_MS = 86_400_000;

/** How long finished jobs are kept as history, unless a server or store is told otherwise: 7 days. */
export const DEFAULT_HISTORY_RETENTION_MS = 7 * DAY_MS;

function checkInteger(value: number, what: string, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new WorkqError('VALIDATION', `${what} must be an integer from ${min} to ${max}; got ${String(value)}.`);
  }
  return value;
}

function checkBackoff(backoff: Backoff): Backoff {
  if (backoff.type !== 'fixed' && backoff.type !== 'exponential') {
    throw new WorkqError('VALIDATION', `backoff.type must be "fixed" or "exponential"; got ${String(backoff.type)}.`);
  }
  const resolved: Backoff = {
    type: backoff.type,
    delayMs: checkInteger(backoff.delayMs, 'backoff.delayMs', 0, 7 * DAY_MS),
  };
  if (backoff.maxDelayMs !== undefined) {
    resolved.maxDelayMs = checkInteger(backoff.maxDelayMs, 'backoff.maxDelayMs', 0, 30 * DAY_MS);
  }
  return resolved;
}

/** Resolves options once: explicit value, then job-type default, then engine default; each checked. */
export function resolveJobOptions(
  options: EnqueueOptions | undefined,
  defaults: Partial<ResolvedJobOptions> | undefined,
): ResolvedJobOptions {
  const order = options?.order ?? defaults?.order ?? ENGINE_JOB_DEFAULTS.order;
  if (order !== 'fifo' && order !== 'lifo') {
    throw new WorkqError('VALIDATION', `order must be "fifo" or "lifo"; got ${String(order)}.`);
  }
  return {
    priority: checkInteger(options?.priority ?? defaults?.priority ?? 0, 'priority', -1_000_000, 1_000_000),
    maxAttempts: checkInteger(
      options?.maxAttempts ?? defaults?.maxAttempts ?? ENGINE_JOB_DEFAULTS.maxAttempts,
      'maxAttempts',
      1,
      1000,
    ),
    backoff: checkBackoff(options?.backoff ?? defaults?.backoff ?? ENGINE_JOB_DEFAULTS.backoff),
    leaseMs: checkLeaseMs(options?.leaseMs ?? defaults?.leaseMs ?? ENGINE_JOB_DEFAULTS.leaseMs),
    order,
    retention: checkRetention(options?.retention ?? defaults?.retention),
  };
}

/**
 * Checks the option `retention`: an object whose `completedMs` and `deadMs`, each optional, are integers within
 * `RETENTION_MS_LIMITS`. `null` when neither is given: the job follows the server-wide retention.
 */
export function checkRetention(
  retention: JobRetention | ResolvedRetention | null | undefined,
): ResolvedRetention | null {
  if (retention === undefined || retention === null) return null;
  if (typeof retention !== 'object' || Array.isArray(retention)) {
    throw new WorkqError(
      'VALIDATION',
      'retention must be an object { completedMs?: number; deadMs?: number }: how long the job is kept after it completed or went dead.',
    );
  }
  const within = (value: number | null | undefined, what: string) =>
    value === undefined || value === null
      ? null
      : checkInteger(
          value,
          `retention.${what} (milliseconds, at most 3,650 days)`,
          RETENTION_MS_LIMITS.min,
          RETENTION_MS_LIMITS.max,
        );
  const completedMs = within(retention.completedMs, 'completedMs');
  const deadMs = within(retention.deadMs, 'deadMs');
  return completedMs === null && deadMs === null ? null : { completedMs, deadMs };
}

/**
 * The times every store keeps: MySQL's DATETIME(3) ends with year 9999 (PostgreSQL's timestamptz and
 * MongoDB's dates reach further). Every duration is bounded (a year at most), and so is the time it ends at.
 */
const EARLIEST_RUN_AT_MS = 0;
const LATEST_RUN_AT_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/** When a job may first run: `runAt` (1970 to 9999), else now + `delayMs`, else now. */
export function resolveRunAt(options: EnqueueOptions | undefined, now: Date): Date {
  if (options?.runAt !== undefined) {
    const ms = options.runAt instanceof Date ? options.runAt.getTime() : Number.NaN;
    if (!(ms >= EARLIEST_RUN_AT_MS && ms <= LATEST_RUN_AT_MS)) {
      throw new WorkqError('VALIDATION', 'runAt must be a valid Date from 1970-01-01 to 9999-12-31 (UTC).');
    }
    return options.runAt as Date;
  }
  const delayMs = checkInteger(options?.delayMs ?? 0, 'delayMs', 0, 365 * DAY_MS);
  return timeAfter(now, delayMs, 'delayMs');
}

/**
 * `now` + `ms`, or a `VALIDATION` error naming `what` when that is past the
 * latest time every store keeps: durations are bounded, but so is the sum.
 */
function timeAfter(now: Date, ms: number, what: string): Date {
  const at = now.getTime() + ms;
  if (at > LATEST_RUN_AT_MS) {
    throw new WorkqError(
      'VALIDATION',
      `${what} of ${ms} ms from ${now.toISOString()} ends after 9999-12-31 (UTC), the latest time every store keeps.`,
    );
  }
  return new Date(at);
}

/** The most entries, and the longest key and value, a stored trace context may have. */
export const TRACE_CONTEXT_LIMITS = { entries: 8, keyLength: 64, valueLength: 1024 } as const;

/**
 * A trace context as a job stores it: a copy holding only string entries within `TRACE_CONTEXT_LIMITS`,
 * `null` for none or an empty one; anything else is a `VALIDATION` error.
 */
export function checkTraceContext(carrier: TraceContext | undefined): TraceContext | null {
  if (carrier === undefined || carrier === null) return null;
  const invalid = () =>
    new WorkqError(
      'VALIDATION',
      `traceContext must be an object of at most ${TRACE_CONTEXT_LIMITS.entries} string entries (keys of 1-${TRACE_CONTEXT_LIMITS.keyLength} characters, values of 1-${TRACE_CONTEXT_LIMITS.valueLength}), such as { traceparent: '00-…' }.`,
    );
  if (typeof carrier !== 'object' || Array.isArray(carrier)) throw invalid();
  const entries = Object.entries(carrier);
  if (entries.length === 0) return null;
  if (entries.length > TRACE_CONTEXT_LIMITS.entries) throw invalid();
  const copy: Record<string, string> = {};
  for (const [key, value] of entries) {
    if (key.length < 1 || key.length > TRACE_CONTEXT_LIMITS.keyLength) throw invalid();
    if (typeof value !== 'string' || value.length < 1 || value.length > TRACE_CONTEXT_LIMITS.valueLength) {
      throw invalid();
    }
    copy[key] = value;
  }
  return copy;
}

/** How a job's options deduplicate it beyond `idempotencyKey`, as `resolveDeduplication` resolves them. */
export interface ResolvedDeduplication {
  /** Until when the key holds (`idempotencyTtlMs`); `null`: no TTL. */
  idempotencyExpiresAt: Date | null;
  /** Whether the key frees when its job finishes (`idempotencyUntil: 'finished'`). */
  idempotencyUntilFinished: boolean;
  debounce: { key: string; runAt: Date; mode: DebounceMode } | null;
}

const NO_DEDUPLICATION: ResolvedDeduplication = Object.freeze({
  idempotencyExpiresAt: null,
  idempotencyUntilFinished: false,
  debounce: null,
});

/**
 * How a job's options deduplicate it beyond `idempotencyKey`, resolved at `now`: until when its key holds
 * (`idempotencyTtlMs`), whether it frees when its job finishes (`idempotencyUntil`), and its debounce key, run
 * time and mode (`debounce`). Bad values and combinations that contradict each other are `VALIDATION` errors;
 * whether a key comes with a TTL or `idempotencyUntil` is checked per job (`checkDeduplication`), since a job
 * of a batch may have a key of its own.
 */
export function resolveDeduplication(options: EnqueueOptions | undefined, now: Date): ResolvedDeduplication {
  const ttlMs = options?.idempotencyTtlMs;
  const until = options?.idempotencyUntil;
  const debounce = options?.debounce;
  if (ttlMs === undefined && until === undefined && debounce === undefined) return NO_DEDUPLICATION;
  if (until !== undefined && !(IDEMPOTENCY_UNTIL as readonly unknown[]).includes(until)) {
    throw new WorkqError(
      'VALIDATION',
      `idempotencyUntil must be ${IDEMPOTENCY_UNTIL.map((value) => `"${value}"`).join(' or ')}; got ${JSON.stringify(until) ?? String(until)}.`,
    );
  }
  const idempotencyExpiresAt =
    ttlMs === undefined
      ? null
      : timeAfter(now, checkInteger(ttlMs, 'idempotencyTtlMs', 1, 365 * DAY_MS), 'idempotencyTtlMs');
  const idempotencyUntilFinished = until === 'finished';
  if (debounce === undefined) return { idempotencyExpiresAt, idempotencyUntilFinished, debounce: null };
  if (typeof debounce !== 'object' || debounce === null) {
    throw new WorkqError('VALIDATION', 'debounce must be an object { key: string; delayMs: number; mode?: string }.');
  }
  const conflicting = (['idempotencyKey', 'idempotencyTtlMs', 'idempotencyUntil', 'delayMs', 'runAt'] as const).filter(
    (option) => options?.[option] !== undefined,
  );
  if (conflicting.length > 0) {
    throw new WorkqError(
      'VALIDATION',
      `debounce cannot be combined with ${conflicting.join(' or ')}: a debounced job is found by its debounce key, not an idempotency key, and runs debounce.delayMs after the latest enqueue.`,
    );
  }
  if (typeof debounce.key !== 'string' || debounce.key.length < 1 || debounce.key.length > 255) {
    throw new WorkqError('VALIDATION', 'debounce.key must be a string of 1 to 255 characters.');
  }
  const mode = debounce.mode ?? 'replace';
  if (!(DEBOUNCE_MODES as readonly unknown[]).includes(mode)) {
    throw new WorkqError(
      'VALIDATION',
      `debounce.mode must be ${DEBOUNCE_MODES.map((value) => `"${value}"`).join(', ')}; got ${JSON.stringify(mode) ?? String(mode)}.`,
    );
  }
  const delayMs = checkInteger(debounce.delayMs, 'debounce.delayMs', 0, 365 * DAY_MS);
  return {
    idempotencyExpiresAt: null,
    idempotencyUntilFinished: false,
    debounce: { key: debounce.key, runAt: timeAfter(now, delayMs, 'debounce.delayMs'), mode },
  };
}

/**
 * Checks a job's own key against its deduplication: a TTL or `idempotencyUntil: 'finished'` needs a key to
 * hold, and a debounced job takes none (a key of its own in a batch included).
 */
export function checkDeduplication(
  idempotencyKey: string | null,
  deduplication: { idempotencyExpiresAt: Date | null; idempotencyUntilFinished: boolean; debounceKey: string | null },
): void {
  if (idempotencyKey === null && deduplication.idempotencyExpiresAt !== null) {
    throw new WorkqError('VALIDATION', 'idempotencyTtlMs needs an idempotencyKey: it says how long that key holds.');
  }
  if (idempotencyKey === null && deduplication.idempotencyUntilFinished) {
    throw new WorkqError(
      'VALIDATION',
      "idempotencyUntil: 'finished' needs an idempotencyKey: it says how long that key holds.",
    );
  }
  if (deduplication.debounceKey !== null && idempotencyKey !== null) {
    throw new WorkqError(
      'VALIDATION',
      'debounce cannot be combined with idempotencyKey: a debounced job is found by its debounce key.',
    );
  }
}

/** Checks the enqueue option `group`. */
export function checkGroup(group: string | undefined): string | null {
  if (group === undefined) return null;
  if (typeof group !== 'string' || group.length < 1 || group.length > 255) {
    throw new WorkqError('VALIDATION', 'group must be a string of 1 to 255 characters.');
  }
  return group;
}

export function checkIdempotencyKey(key: string | undefined): string | null {
  if (key === undefined) return null;
  if (typeof key !== 'string' || key.length < 1 || key.length > 255) {
    throw new WorkqError('VALIDATION', 'idempotencyKey must be a string of 1 to 255 characters.');
  }
  return key;
}
