import { isValidJobName, LEASE_MS_LIMITS, LEASE_TOKEN_MAX_CHARS, WorkqError } from '@workq/core';
import { type EnqueueInput, TRACE_CONTEXT_LIMITS, toStoredText, toStoredValue } from '@workq/core/engine';
import { z } from 'zod';
import type { ServerServices } from './trpc.ts';

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
export const jobId = storableText(1, 64);
export const leaseToken = storableText(1, LEASE_TOKEN_MAX_CHARS);
export const version = z.number().int().min(1).max(1_000_000);

const LEASE_MS_RANGE = `must be an integer from ${LEASE_MS_LIMITS.min} to ${LEASE_MS_LIMITS.max} (100 ms to 24 h); for longer work, extend the lease while the job runs`;

/** A lease length within core's `LEASE_MS_LIMITS`: of an enqueue, a claim or an extension (the engine checks it too). */
export const leaseLengthMs = z
  .number()
  .int(LEASE_MS_RANGE)
  .min(LEASE_MS_LIMITS.min, LEASE_MS_RANGE)
  .max(LEASE_MS_LIMITS.max, LEASE_MS_RANGE);

/** A trace propagation carrier (`traceparent`, `tracestate`), within core's `TRACE_CONTEXT_LIMITS`. */
const traceContext = z
  .record(storableText(1, TRACE_CONTEXT_LIMITS.keyLength), storableText(1, TRACE_CONTEXT_LIMITS.valueLength))
  .refine(
    (carrier) => Object.keys(carrier).length <= TRACE_CONTEXT_LIMITS.entries,
    `has more than ${TRACE_CONTEXT_LIMITS.entries} entries`,
  );

export const enqueueOptions = z
  .object({
    priority: z.number().int().optional(),
    delayMs: z.number().int().nonnegative().optional(),
    runAt: z.date().optional(),
    idempotencyKey: storableText(1, 255).optional(),
    idempotencyTtlMs: z.number().int().positive().optional(),
    debounce: z.object({ key: storableText(1, 255), delayMs: z.number().int().nonnegative() }).optional(),
    maxAttempts: z.number().int().optional(),
    backoff: z
      .object({
        type: z.enum(['fixed', 'exponential']),
        delayMs: z.number().int().nonnegative(),
        maxDelayMs: z.number().int().nonnegative().optional(),
      })
      .optional(),
    leaseMs: leaseLengthMs.optional(),
    order: z.enum(['fifo', 'lifo']).optional(),
    traceContext: traceContext.optional(),
    group: storableText(1, 255).optional(),
  })
  .optional();

export type EnqueueOptionsInput = z.infer<typeof enqueueOptions>;

export const lease = z.object({ id: jobId, leaseToken });

/**
 * Builds the engine's inputs field by field, so nothing a client adds reaches
 * a store. The jobs share one options object, which the engine resolves once.
 */
export function toEnqueueInputs(
  name: string,
  jobVersion: number,
  payloads: readonly unknown[],
  options: EnqueueOptionsInput,
): EnqueueInput[] {
  if (!options) return payloads.map((payload) => ({ name, version: jobVersion, payload }));
  const { priority, delayMs, runAt, idempotencyKey, maxAttempts, backoff, leaseMs, order, traceContext } = options;
  const shared = { priority, delayMs, runAt, idempotencyKey, maxAttempts, backoff, leaseMs, order, traceContext };
  const { idempotencyTtlMs, debounce } = options;
  Object.assign(shared, { idempotencyTtlMs, debounce: debounce && { key: debounce.key, delayMs: debounce.delayMs } });
  if (options.group !== undefined) Object.assign(shared, { group: options.group });
  return payloads.map((payload) => ({ name, version: jobVersion, payload, options: shared }));
}

/** `toEnqueueInputs` for one job. */
export function toEnqueueInput(
  name: string,
  jobVersion: number,
  payload: unknown,
  options: EnqueueOptionsInput,
): EnqueueInput {
  return toEnqueueInputs(name, jobVersion, [payload], options)[0] as EnqueueInput;
}

/**
 * Refuses a payload over the size limit with `PAYLOAD_TOO_LARGE`, and one no
 * store can keep (NUL, lone surrogates, too deep: see `toStoredValue`) with
 * `VALIDATION`, before anything is stored.
 */
export function checkPayloadSize(payload: unknown, maxBytes: number, name: string): void {
  // Measured as stored: a bigint, Date or Map counts with its encoding.
  const text = JSON.stringify(toStoredValue(payload, `Payload of "${name}"`));
  if (text === undefined) throw new WorkqError('VALIDATION', `Payload of "${name}" must be a JSON value.`);
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxBytes) {
    throw new WorkqError(
      'PAYLOAD_TOO_LARGE',
      `Payload of "${name}" is ${bytes} bytes; the limit is ${maxBytes}. Store large data elsewhere and enqueue a reference to it.`,
    );
  }
}

/**
 * Refuses payloads over the size limit, then checks them against the
 * registered schema of `name` at `jobVersion`: what every path that stores a
 * client's payload (enqueue, moveTo, updatePayload) checks first.
 */
export async function checkPayloads(
  services: Pick<ServerServices, 'options' | 'registry'>,
  name: string,
  jobVersion: number,
  payloads: readonly unknown[],
): Promise<void> {
  for (const payload of payloads) checkPayloadSize(payload, services.options.limits.maxPayloadBytes, name);
  await services.registry.validateAll(name, jobVersion, payloads);
}

export function checkBatchSize(size: number, maxBatchSize: number, what: string): void {
  if (size > maxBatchSize) {
    throw new WorkqError(
      'PAYLOAD_TOO_LARGE',
      `${what} has ${size} items; the limit is ${maxBatchSize}. Split it into smaller batches.`,
    );
  }
}
