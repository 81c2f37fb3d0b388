import {
  CHILD_FAILURE_POLICIES,
  DEBOUNCE_MODES,
  IDEMPOTENCY_UNTIL,
  isValidJobName,
  LEASE_MS_LIMITS,
  LEASE_TOKEN_MAX_CHARS,
  TIMEOUT_MS_LIMITS,
} from '@workq/core';
import { TRACE_CONTEXT_LIMITS, toStoredText } from '@workq/core/engine';
import { z } from 'zod';

/**
 * Text a store can keep or look up as it is, the same on every store: no NUL
 * characters, no lone surrogates (see `toStoredText`).
 */
export function storableText(minLength: number, maxLength: number) {
  return z
    .string()
    .min(minLength)
    .max(maxLength)
    .refine(
      (text) => toStoredText(text) === text,
      'must be well-formed text, without NUL characters or lone surrogates',
    );
}

/** Envelope schemas of the router's inputs. Payloads are checked separately, against the registered schema. */
export const jobName = z
  .string()
  .min(1)
  .max(100)
  .refine(isValidJobName, 'is not a valid job name (a letter, then letters, digits, "_", "." or "-")');
/** Longest job id, in UTF-16 code units. */
export const JOB_ID_MAX_CHARS = 64;
export const jobId = storableText(1, JOB_ID_MAX_CHARS);
export const leaseToken = storableText(1, LEASE_TOKEN_MAX_CHARS);
export const version = z.number().int().min(1).max(1_000_000);

const LEASE_MS_RANGE = `must be an integer from ${LEASE_MS_LIMITS.min} to ${LEASE_MS_LIMITS.max} (100 ms to 24 h); for longer work, extend the lease while the job runs`;

/** A lease length within core's `LEASE_MS_LIMITS`: of an enqueue, a claim or an extension (the engine checks it too). */
export const leaseLengthMs = z
  .number()
  .int(LEASE_MS_RANGE)
  .min(LEASE_MS_LIMITS.min, LEASE_MS_RANGE)
  .max(LEASE_MS_LIMITS.max, LEASE_MS_RANGE);

const TIMEOUT_MS_RANGE = `must be an integer from ${TIMEOUT_MS_LIMITS.min} to ${TIMEOUT_MS_LIMITS.max} (100 ms to 24 h); leave it out for no limit`;

/** A handler's time limit within core's `TIMEOUT_MS_LIMITS` (the engine checks it too). */
export const timeLimitMs = z
  .number()
  .int(TIMEOUT_MS_RANGE)
  .min(TIMEOUT_MS_LIMITS.min, TIMEOUT_MS_RANGE)
  .max(TIMEOUT_MS_LIMITS.max, TIMEOUT_MS_RANGE);

/** A trace propagation carrier (`traceparent`, `tracestate`), within core's `TRACE_CONTEXT_LIMITS`. */
const traceContext = z
  .record(storableText(1, TRACE_CONTEXT_LIMITS.keyLength), storableText(1, TRACE_CONTEXT_LIMITS.valueLength))
  .refine(
    (carrier) => Object.keys(carrier).length <= TRACE_CONTEXT_LIMITS.entries,
    `has more than ${TRACE_CONTEXT_LIMITS.entries} entries`,
  );

/**
 * A job's own retention: how long it is kept after it completed or went dead, in milliseconds. Its bounds
 * (`RETENTION_MS_LIMITS`) are the engine's to check, with a message that names them.
 */
const retention = z
  .object({
    completedMs: z.number().optional().describe('Kept this long after it completed; then the pruner deletes it.'),
    deadMs: z.number().optional().describe('Kept this long after it went dead; then the pruner deletes it.'),
  })
  .strict()
  .describe("The job's own retention, in place of the server's historyRetentionMs for the ends it names.");

/** A caller-chosen job id: its form (a UUID) is the engine's to check, with a message that says what to send. */
const chosenJobId = z.string().max(100);

export const enqueueOptions = z
  .object({
    id: chosenJobId.optional(),
    priority: z.number().int().optional(),
    delayMs: z.number().int().nonnegative().optional(),
    runAt: z.date().optional(),
    idempotencyKey: storableText(1, 255).optional(),
    idempotencyTtlMs: z.number().int().positive().optional(),
    idempotencyUntil: z.enum(IDEMPOTENCY_UNTIL).optional(),
    debounce: z
      .object({
        key: storableText(1, 255),
        delayMs: z.number().int().nonnegative(),
        mode: z.enum(DEBOUNCE_MODES).optional(),
      })
      .strict()
      .optional(),
    maxAttempts: z.number().int().optional(),
    backoff: z
      .object({
        type: z.enum(['fixed', 'exponential']),
        delayMs: z.number().int().nonnegative(),
        maxDelayMs: z.number().int().nonnegative().optional(),
      })
      .strict()
      .optional(),
    leaseMs: leaseLengthMs.optional(),
    timeoutMs: timeLimitMs.optional(),
    order: z.enum(['fifo', 'lifo']).optional(),
    traceContext: traceContext.optional(),
    group: storableText(1, 255).optional(),
    retention: retention.optional(),
  })
  // An option the server does not know (a typo, or one newer than this server) is refused, never dropped.
  .strict()
  .optional();

export type EnqueueOptionsInput = z.infer<typeof enqueueOptions>;

/**
 * `enqueueOptions` as plain JSON carries them (the `/v1` HTTP API): `runAt` is an RFC 3339 date-time with its
 * offset, read as a `Date`, where tRPC's transformer carries a `Date` itself.
 */
export const jsonEnqueueOptions = enqueueOptions
  .unwrap()
  .extend({
    runAt: z.iso
      .datetime({ offset: true })
      .transform((at) => new Date(at))
      .optional()
      .describe('Run no sooner than this instant (an RFC 3339 date-time); one already past runs at once.'),
  })
  .optional();

/** `childJob` as plain JSON carries it (the `/v1` HTTP API): its `runAt` as `jsonEnqueueOptions` reads one. */
export const jsonChildJob = childJobOf(jsonEnqueueOptions.unwrap());

/** Each job's own id in an `enqueueMany`, by index (`null`: none). */
export const perJobIds = z.array(chosenJobId.nullable());

/** A child in a flow, as `sdk.child` describes it: a job, its policy, and its own children, nested. */
export interface ChildJobInput {
  name: string;
  version: number;
  payload: unknown;
  /** An enqueue's options but the idempotency key, how long it holds and the debounce: a child is always a new job. */
  options?:
    | Omit<NonNullable<EnqueueOptionsInput>, 'idempotencyKey' | 'idempotencyTtlMs' | 'idempotencyUntil' | 'debounce'>
    | undefined;
  onFailure?: (typeof CHILD_FAILURE_POLICIES)[number] | undefined;
  children?: ChildJobInput[] | undefined;
}

/** A child in a flow, its options read by `options` (tRPC's, or plain JSON's), and its own children likewise. */
function childJobOf(options: z.ZodObject<z.ZodRawShape>): z.ZodType<ChildJobInput> {
  const child: z.ZodType<ChildJobInput> = z.object({
    name: jobName,
    version,
    payload: z.unknown(),
    options: options
      .omit({ idempotencyKey: true, idempotencyTtlMs: true, idempotencyUntil: true, debounce: true })
      .strict()
      .optional(),
    onFailure: z.enum(CHILD_FAILURE_POLICIES).optional(),
    get children() {
      return z.array(child).optional();
    },
  });
  return child;
}

export const childJob = childJobOf(enqueueOptions.unwrap());

export const lease = z.object({ id: jobId, leaseToken });
