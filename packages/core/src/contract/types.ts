import type { z } from 'zod';

/** How long to wait before the next attempt of a failed job. */
export interface Backoff {
  /** `fixed`: always `delayMs`; `exponential`: `delayMs * 2^(attempt-1)`, with jitter. */
  type: 'fixed' | 'exponential';
  /** Base delay in milliseconds. */
  delayMs: number;
  /** Upper bound of any single delay. @defaultValue 3_600_000 (one hour) */
  maxDelayMs?: number | undefined;
}

/** Which of two ready jobs of equal priority runs first. */
export type JobOrder = 'fifo' | 'lifo';

/**
 * How long a job is kept once it ends, in place of the server-wide `historyRetentionMs`: after it completed
 * (`completedMs`) or went dead (`deadMs`), the pruner deletes it once that long has passed. An end it does not
 * name (and a cancelled job) follows the server-wide setting. Each 0 to 3,650 days (`RETENTION_MS_LIMITS`).
 */
export interface JobRetention {
  /** How long the job is kept after it completed. @defaultValue the server's `historyRetentionMs` */
  completedMs?: number | undefined;
  /** How long the job is kept after it went dead. @defaultValue the server's `historyRetentionMs` */
  deadMs?: number | undefined;
}

/** Per-job-type defaults; every field is optional and falls back to the engine's defaults. */
export interface JobDefaults {
  /** Higher runs first. @defaultValue 0 */
  priority?: number | undefined;
  /** Attempts before the job goes dead. @defaultValue 5 */
  maxAttempts?: number | undefined;
  /** @defaultValue `{ type: 'exponential', delayMs: 1000 }` */
  backoff?: Backoff | undefined;
  /** How long a claim holds a job before it is delivered again: 100 ms to 24 h (`LEASE_MS_LIMITS`). @defaultValue 30_000 */
  leaseMs?: number | undefined;
  /** @defaultValue 'fifo' */
  order?: JobOrder | undefined;
  /**
   * How long the type's jobs are kept once they completed or went dead (see `JobRetention`); an enqueue's own
   * `retention` replaces it. @defaultValue the server's `historyRetentionMs`
   */
  retention?: JobRetention | undefined;
}

/** An older payload version, with its upgrade to the next version. */
export interface PreviousVersion<P extends z.ZodType = z.ZodType, Next = unknown> {
  payload: P;
  upgrade: (payload: z.output<P>) => Next;
}

/** A declared job type: its current version, schemas, older versions and defaults. */
export interface JobDefinition<
  V extends number = number,
  P extends z.ZodType = z.ZodType,
  R extends z.ZodType | undefined = z.ZodType | undefined,
  Prev extends Record<number, z.ZodType> = Record<number, z.ZodType>,
> {
  readonly kind: 'workq.job';
  readonly version: V;
  readonly payload: P;
  readonly result: R;
  readonly previous: { readonly [K in keyof Prev]: PreviousVersion<Prev[K] & z.ZodType> };
  readonly defaults: JobDefaults;
  /**
   * How long one attempt's handler may run, from its claim: then its `ctx.signal` aborts and the attempt fails
   * with `TIMEOUT` (retried like any failure). `undefined`: no limit.
   */
  readonly timeoutMs?: number | undefined;
  /** Versions this definition can read, oldest first; the last is `version`. */
  readonly versions: readonly number[];
}

// biome-ignore lint/suspicious/noExplicitAny: the widest job definition, used only as a constraint.
export type AnyJobDefinition = JobDefinition<number, z.ZodType, any, any>;

/** A deployment's job types, by name. */
export type Catalog = Record<string, AnyJobDefinition>;

export type JobName<C extends Catalog> = Extract<keyof C, string>;

/** What a producer passes for the current version (defaults may be omitted). */
export type PayloadInput<C extends Catalog, N extends JobName<C>> = z.input<C[N]['payload']>;

/** What a handler receives: the parsed, current-version payload. */
export type PayloadOutput<C extends Catalog, N extends JobName<C>> = z.output<C[N]['payload']>;

/** What a handler returns; `void` for a job without a `result` schema. */
export type ResultInput<C extends Catalog, N extends JobName<C>> = C[N]['result'] extends z.ZodType
  ? z.input<C[N]['result']>
  : // biome-ignore lint/suspicious/noConfusingVoidType: a handler of a job without a result returns nothing.
    void;

/** What `handle.result()` resolves to; `undefined` for a job without a `result` schema. */
export type ResultOutput<C extends Catalog, N extends JobName<C>> = C[N]['result'] extends z.ZodType
  ? z.output<C[N]['result']>
  : undefined;
