import { isFinishedState, isWorkqError, type JobStatus, WorkqError } from '@workq/core';
import { fromStoredValue, type ListQuery, valueBytes } from '@workq/core/engine';
import { type Principal, requireReadScope } from '../auth.ts';
import { readInRoom } from './answer-budget.ts';
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
 * What a status's read takes of the answer budget before it is read: about its fixed fields. Most statuses bring
 * no more; what one brings beyond (a result, errors, children) is counted once it is read.
 */
const STATUS_ROOM_BYTES = 1_024;

/** What a status brings to an answer: its few fixed fields, and its result, errors and children. */
function statusBytes(status: JobStatus): number {
  return STATUS_ROOM_BYTES + valueBytes([status.result, status.errors, status.children]);
}

/** The room a status's read takes before it is read: one status's fixed fields, in one unit. */
const STATUS_ROOM = { wantBytes: STATUS_ROOM_BYTES, unitBytes: STATUS_ROOM_BYTES };

/**
 * Job `id`'s status as an answer carries it (`jobs.get`, `jobs.wait`, `GET /v1/job/:id`), counted in the
 * server's `AnswerBudget` until the answer is sent: the read first takes room for a status's fixed fields
 * (waiting, as a claim does, while its caller holds its share), then counts what its result, errors and
 * children brought. So a caller reading large results many times and leaving the answers unread holds at most
 * its share, past it only by the statuses of its reads in progress (whose store calls take turns), and its next
 * reads wait; another caller's go on. `keep` says whether the status is answered at all: one that is not (a
 * `jobs.wait` reading on) keeps no room. `NOT_FOUND` as `Engine.get`.
 */
export function readStatus(
  services: ServerServices,
  id: string,
  signal: AbortSignal,
  keep: (status: JobStatus) => boolean = () => true,
): Promise<JobStatus> {
  return readInRoom(
    services.answerBudget,
    signal,
    STATUS_ROOM,
    () => services.engine.get(id),
    (status) => (keep(status) ? statusBytes(status) : 0),
  );
}

/**
 * A page of jobs with their results (`admin.list`), counted in the server's `AnswerBudget` until the answer is
 * sent, as statuses are (`readStatus`): an admin's unread pages of large results hold at most its share.
 */
export function listJobs(
  services: ServerServices,
  query: ListQuery,
  signal: AbortSignal,
): Promise<{ jobs: JobStatus[]; nextCursor: string | null }> {
  return readInRoom(
    services.answerBudget,
    signal,
    STATUS_ROOM,
    () => services.engine.list(query),
    (page) => page.jobs.reduce((bytes, status) => bytes + statusBytes(status), 0),
  );
}

/**
 * The type of job `id`, for a scope check before a call acts on it (`jobs.children`, `jobs.cancel`): one read
 * that leaves its payload, result and errors unread, so a caller naming a job with large values again and again
 * makes the server read and hold no more than for any other job. `NOT_FOUND` as `Engine.get`.
 */
export async function jobType(services: ServerServices, id: string): Promise<string> {
  const job = await services.engine.store.getJob(id, { withoutValues: true });
  if (!job) throw new WorkqError('NOT_FOUND', `No job with id ${id} (it may have been pruned from history).`);
  return job.name;
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
  const { bus, options } = services;
  const deadline = Date.now() + Math.min(input.timeoutMs, options.limits.maxLongPollMs);
  // Decided as each status is read, so that only the answer holds room in the answer budget.
  let settled = false;
  let ended = false;
  const answers = (status: JobStatus) => {
    settled = isFinishedState(status.state) || signal.aborted || bus.isClosed;
    ended = settled || Date.now() >= deadline;
    return ended;
  };
  let status: JobStatus | undefined = await readStatus(services, input.id, signal, answers);
  requireReadScope(principal, status.name);
  for (;;) {
    if (settled) return status;
    if (ended) return { ...status, workersReading: await workersReading(services, status) };
    status = undefined;
    await bus.waitForFinish(input.id, Math.max(0, Math.min(deadline - Date.now(), options.pollIntervalMs)), signal);
    status = await readStatus(services, input.id, signal, answers);
  }
}
