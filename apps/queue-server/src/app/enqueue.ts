import { type EnqueueOptions, WorkqError } from '@workq/core';
import type { EnqueueInput, EnqueueResult, LeaseRef } from '@workq/core/engine';
import { checkBatchSize, checkPayloads } from './payloads.ts';
import type { ServerServices } from './services.ts';

/**
 * The enqueue use case, the same for every caller (`jobs.enqueue` and
 * `jobs.enqueueMany` over tRPC, `POST /v1/jobs/<name>`, the cron role):
 * sizes and schemas checked, then handed to the claim dispatcher, which gives
 * a lone job to a consumer waiting on this server or merges concurrent
 * inserts, and counted in `workq_jobs_enqueued_total`.
 */

/** What an `enqueueMany` may give each job of its own, by index, over the options of the whole batch. */
export interface PerJobInputs {
  /** Each job's own options (`null`: none), over the batch's. */
  options?: readonly (EnqueueOptions | null)[] | undefined;
  /** Each job's own idempotency key (`null`: none), over any in its options. */
  idempotencyKeys?: readonly (string | null)[] | undefined;
  /** Each job's own id (`null`: none), over any in its options. */
  ids?: readonly (string | null)[] | undefined;
}

/**
 * Validates size and schema of each payload, then enqueues them in one store round trip, each with the
 * batch's options, or its own from `perJob`.
 */
export async function enqueueJobs(
  services: ServerServices,
  name: string,
  jobVersion: number,
  payloads: readonly unknown[],
  options: EnqueueOptions | undefined,
  perJob?: PerJobInputs,
): Promise<EnqueueResult[]> {
  const { limits } = services.options;
  checkBatchSize(payloads.length, limits.maxBatchSize, 'enqueueMany');
  checkPerJobLength(payloads.length, perJob?.options, 'perJob');
  checkPerJobLength(payloads.length, perJob?.idempotencyKeys, 'idempotencyKeys');
  checkPerJobLength(payloads.length, perJob?.ids, 'ids');
  await checkPayloads(services, name, jobVersion, payloads);
  const inputs = withPerJob(toEnqueueInputs(name, jobVersion, payloads, options), options, perJob);
  const results = await services.dispatcher.enqueue(inputs);
  services.metrics.enqueued.inc({ name }, results.filter((r) => r.created).length);
  return results;
}

/** `enqueueJobs` for one job. */
export async function enqueueJob(
  services: ServerServices,
  name: string,
  jobVersion: number,
  payload: unknown,
  options: EnqueueOptions | undefined,
): Promise<EnqueueResult> {
  const [result] = await enqueueJobs(services, name, jobVersion, [payload], options);
  return result as EnqueueResult;
}

/** Ends the job `lease` holds and enqueues `next` in its place, in one step (pipelines); `next`'s payload checked first. */
export async function moveJob(
  services: ServerServices,
  lease: LeaseRef,
  next: { name: string; version: number; payload: unknown; options?: EnqueueOptions | undefined },
): Promise<EnqueueResult> {
  await checkPayloads(services, next.name, next.version, [next.payload]);
  const [input] = toEnqueueInputs(next.name, next.version, [next.payload], next.options) as [EnqueueInput];
  return services.engine.moveTo(lease, input);
}

function checkPerJobLength(jobs: number, items: readonly unknown[] | undefined, field: string): void {
  if (items !== undefined && items.length !== jobs) {
    throw new WorkqError(
      'VALIDATION',
      `${field} has ${items.length} items for ${jobs} payloads; give one per payload.`,
    );
  }
}

/**
 * Builds the engine's inputs field by field, so nothing a client adds reaches
 * a store. The jobs share one options object, which the engine resolves once.
 */
export function toEnqueueInputs(
  name: string,
  jobVersion: number,
  payloads: readonly unknown[],
  options: EnqueueOptions | undefined,
): EnqueueInput[] {
  if (!options) return payloads.map((payload) => ({ name, version: jobVersion, payload }));
  const { id, priority, delayMs, runAt, idempotencyKey, maxAttempts, backoff, leaseMs, order, traceContext } = options;
  const shared = { id, priority, delayMs, runAt, idempotencyKey, maxAttempts, backoff, leaseMs, order, traceContext };
  const { idempotencyTtlMs, idempotencyUntil, debounce } = options;
  const debounced = debounce && { key: debounce.key, delayMs: debounce.delayMs, mode: debounce.mode };
  Object.assign(shared, { idempotencyTtlMs, idempotencyUntil, debounce: debounced });
  if (options.group !== undefined) Object.assign(shared, { group: options.group });
  const { retention } = options;
  if (retention !== undefined) {
    Object.assign(shared, { retention: { completedMs: retention.completedMs, deadMs: retention.deadMs } });
  }
  if (options.timeoutMs !== undefined) Object.assign(shared, { timeoutMs: options.timeoutMs });
  return payloads.map((payload) => ({ name, version: jobVersion, payload, options: shared }));
}

/**
 * Gives the jobs of a batch their own options, keys and ids (parsed by the router's schema, so they hold only
 * known fields). A job with only a key or an id of its own keeps the batch's options object, so the engine
 * still resolves it once for the whole batch.
 */
function withPerJob(
  inputs: EnqueueInput[],
  shared: EnqueueOptions | undefined,
  perJob: PerJobInputs | undefined,
): EnqueueInput[] {
  if (!perJob) return inputs;
  const { options, idempotencyKeys, ids } = perJob;
  for (const [i, input] of inputs.entries()) {
    const own = options?.[i];
    if (own) input.options = { ...shared, ...own };
    const key = idempotencyKeys?.[i];
    if (key) input.idempotencyKey = key;
    const id = ids?.[i];
    if (id) input.id = id;
  }
  return inputs;
}
