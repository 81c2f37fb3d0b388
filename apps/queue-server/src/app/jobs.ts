import { isFinishedState, isWorkqError, type JobStatus, WorkqError } from '@workq/core';
import { fromStoredValue } from '@workq/core/engine';
import { type Principal, requireReadScope } from '../auth.ts';
import { checkPayloads } from './payloads.ts';
import type { ServerServices } from './services.ts';
import { workersReading } from './workers.ts';

/** One job as an operator inspects it (`admin.job`): its status, its payload and who holds its lease. */
export interface InspectedJob extends JobStatus {
  payload: unknown;
  /** The worker (`admin.workers` id) holding the job's lease, or that last held it; `null` when none did. */
  workerId: string | null;
}

/** What `admin.checkPayload` answers: valid, or the server's message and the issues by field path. */
export type PayloadCheck = { valid: true } | { valid: false; message: string; issues: PayloadIssue[] };

/** One way a payload is invalid: where in it (property names and indexes), and what is wrong. */
export interface PayloadIssue {
  path: string[];
  message: string;
}

/**
 * One job with what `jobs.get` leaves out: the payload and the lease holder; a parent's first children as its
 * status lists them. `NOT_FOUND` once pruned.
 */
export async function inspectJob(services: ServerServices, id: string): Promise<InspectedJob> {
  const { engine } = services;
  const job = await engine.store.getJob(id);
  if (!job) throw new WorkqError('NOT_FOUND', `No job with id ${id} (it may have been pruned from history).`);
  return {
    ...(await engine.flows.status(job)),
    payload: fromStoredValue(job.payload),
    workerId: job.workerId,
  };
}

/** A child as its parent's readers get it (`jobs.children`, `consumer.children`): its state, and its result or last error. */
export function childEntry({ id, name, state, result, error, childCount }: JobStatus) {
  return {
    id,
    name,
    state,
    ...(result === undefined ? {} : { result }),
    ...(error ? { error } : {}),
    ...(childCount ? { childCount } : {}),
  };
}

/**
 * Checks a payload against the registered schema of (name, version) as an
 * enqueue would, and stores nothing. An invalid payload is an answer, not an
 * error; an unknown job or version is refused as an enqueue would be.
 */
export async function checkPayload(
  services: ServerServices,
  name: string,
  jobVersion: number,
  payload: unknown,
): Promise<PayloadCheck> {
  try {
    await checkPayloads(services, name, jobVersion, [payload]);
    return { valid: true };
  } catch (error) {
    if (!isWorkqError(error, 'VALIDATION')) throw error;
    const issues = Array.isArray(error.details) ? (error.details as PayloadIssue[]) : [];
    return { valid: false, message: error.message, issues };
  }
}

/**
 * Long-polls until job `id` finishes or `timeoutMs` passes (at most the server's `maxLongPollMs`), for a principal
 * that may read its type; resolves to its status either way. A job still unfinished when the time is up also
 * says how many workers seen within the presence window read its type and version (`workersReading`), so a caller
 * that waited in vain can tell that none is running. While it waits it holds nothing of the job: each status
 * read (the first, each after a wake-up, the last) is dropped unless it is the answer, so many waits on a job
 * with a large payload hold no payload between reads.
 */
export async function waitForJob(
  services: ServerServices,
  principal: Principal,
  input: { id: string; timeoutMs: number },
  signal: AbortSignal,
): Promise<JobStatus & { workersReading?: number }> {
  const { bus, engine, options } = services;
  const deadline = Date.now() + Math.min(input.timeoutMs, options.limits.maxLongPollMs);
  let status: JobStatus | undefined = await engine.get(input.id);
  requireReadScope(principal, status.name);
  for (;;) {
    const remainingMs = deadline - Date.now();
    if (isFinishedState(status.state) || signal.aborted || bus.isClosed) return status;
    if (remainingMs <= 0) return { ...status, workersReading: await workersReading(services, status) };
    status = undefined;
    await bus.waitForFinish(input.id, Math.min(remainingMs, options.pollIntervalMs), signal);
    status = await engine.get(input.id);
  }
}
