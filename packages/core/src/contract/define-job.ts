import type { z } from 'zod';
import { WorkqError } from '../errors.ts';
import { LEASE_MS_LIMITS, TIMEOUT_MS_LIMITS } from '../jobs.ts';
import type { JobDefaults, JobDefinition, PreviousVersion } from './types.ts';

// biome-ignore format: a lookup table reads best on one line.
type Next = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33];

/** The version after K, as `previous` keys it: inferred object keys may be numbers or numeric strings. */
type NextKey<K, Prev> = K extends keyof Next
  ? `${Next[K] & number}` extends keyof Prev
    ? `${Next[K] & number}`
    : Next[K] extends keyof Prev
      ? Next[K]
      : never
  : K extends `${infer N extends number}`
    ? NextKey<N, Prev>
    : never;

/** The input an upgrade from version K must produce: the next older version's input, or the current payload's. */
type UpgradeTarget<K, Prev, P extends z.ZodType> = [NextKey<K, Prev>] extends [never]
  ? z.input<P>
  : Prev[NextKey<K, Prev>] extends z.ZodType
    ? z.input<Prev[NextKey<K, Prev>]>
    : never;

export interface JobSpec<V extends number, P extends z.ZodType, R extends z.ZodType | undefined, Prev> {
  /** The current version, an integer >= 1. */
  version: V;
  /** The schema of the current payload. */
  payload: P;
  /** The schema of the handler's result. @defaultValue no result */
  result?: R | undefined;
  /** Older versions, each with its upgrade to the next version. */
  previous?:
    | {
        [K in keyof Prev]: {
          payload: Prev[K];
          upgrade: (payload: Prev[K] extends z.ZodType ? z.output<Prev[K]> : never) => UpgradeTarget<K, Prev, P>;
        };
      }
    | undefined;
  defaults?: JobDefaults | undefined;
  /**
   * How long one attempt's handler may run, from its claim, in milliseconds (`TIMEOUT_MS_LIMITS`): then its
   * `ctx.signal` aborts and the attempt fails with `TIMEOUT`, retried like any failure. @defaultValue no limit
   */
  timeoutMs?: number | undefined;
}

/**
 * Declares a job type. Fails with a `VALIDATION` error when the versions are
 * not consecutive integers ending at `version`, an older version lacks its
 * upgrade, `defaults.leaseMs` is outside `LEASE_MS_LIMITS` or `timeoutMs`
 * outside `TIMEOUT_MS_LIMITS` (the other defaults are checked where each
 * enqueue resolves them).
 */
export function defineJob<
  const V extends number,
  P extends z.ZodType,
  R extends z.ZodType | undefined = undefined,
  const Prev extends Record<number, z.ZodType> = Record<never, z.ZodType>,
>(spec: JobSpec<V, P, R, Prev>): JobDefinition<NoInfer<V>, NoInfer<P>, NoInfer<R>, NoInfer<Prev>> {
  const previous = (spec.previous ?? {}) as Record<string, PreviousVersion>;
  const versions = checkVersions(spec.version, previous);
  checkDefaultLease(spec.defaults?.leaseMs);
  checkTimeLimit(spec.timeoutMs);
  return Object.freeze({
    kind: 'workq.job',
    version: spec.version,
    payload: spec.payload,
    result: spec.result as R,
    previous: previous as JobDefinition<V, P, R, Prev>['previous'],
    defaults: Object.freeze({ ...spec.defaults }),
    ...(spec.timeoutMs === undefined ? {} : { timeoutMs: spec.timeoutMs }),
    versions,
  });
}

function checkDefaultLease(leaseMs: number | undefined): void {
  if (leaseMs === undefined) return;
  if (!Number.isInteger(leaseMs) || leaseMs < LEASE_MS_LIMITS.min || leaseMs > LEASE_MS_LIMITS.max) {
    throw new WorkqError(
      'VALIDATION',
      `defaults.leaseMs must be an integer from ${LEASE_MS_LIMITS.min} to ${LEASE_MS_LIMITS.max} (100 ms to 24 h); got ${String(leaseMs)}. For longer work, extend the lease while the job runs.`,
    );
  }
}

function checkTimeLimit(timeoutMs: number | undefined): void {
  if (timeoutMs === undefined) return;
  if (!Number.isInteger(timeoutMs) || timeoutMs < TIMEOUT_MS_LIMITS.min || timeoutMs > TIMEOUT_MS_LIMITS.max) {
    throw new WorkqError(
      'VALIDATION',
      `timeoutMs must be an integer from ${TIMEOUT_MS_LIMITS.min} to ${TIMEOUT_MS_LIMITS.max} (100 ms to 24 h); got ${String(timeoutMs)}. Leave it out for no limit.`,
    );
  }
}

function checkVersions(version: number, previous: Record<string, PreviousVersion>): number[] {
  if (!Number.isInteger(version) || version < 1) {
    throw new WorkqError('VALIDATION', `A job's version must be an integer >= 1; got ${String(version)}.`);
  }
  const older = Object.keys(previous)
    .map(Number)
    .sort((a, b) => a - b);
  for (const [index, v] of older.entries()) {
    if (!Number.isInteger(v) || v < 1 || v >= version) {
      throw new WorkqError(
        'VALIDATION',
        `previous[${v}] is not an older version: keys of "previous" must be integers from 1 to ${version - 1}.`,
      );
    }
    const expected = version - older.length + index;
    if (v !== expected) {
      throw new WorkqError(
        'VALIDATION',
        `Versions must be consecutive up to the current version ${version}: "previous" has ${older.join(', ')}, so version ${expected} is missing.`,
      );
    }
    const entry = previous[String(v)];
    if (typeof entry?.upgrade !== 'function' || entry.payload === undefined) {
      throw new WorkqError('VALIDATION', `previous[${v}] needs both a "payload" schema and an "upgrade" function.`);
    }
  }
  return [...older, version];
}
