import { isWorkqError, WorkqError } from '@workq/core';
import {
  type ClaimAnswer,
  type ClaimDispatcher,
  type ClaimRoom,
  type LeaseRef,
  toStoredValue,
  valueBytes,
} from '@workq/core/engine';
import { type AnswerHolder, type AnswerRoom, inAnswer } from './answer-budget.ts';
import { jobType } from './jobs.ts';
import { checkBatchSize } from './payloads.ts';
import type { ServerServices } from './services.ts';

/**
 * The consumer's use cases: claiming (with the acks a claim carries), completing, failing, releasing and
 * extending leases. Results over `maxResultBytes` are refused here, before any store write, and every outcome
 * is counted in the metrics.
 */

/** A claim as the dispatcher takes it. */
type DispatchedClaim = Parameters<ClaimDispatcher['claim']>[0];

/** An ack as a worker sends it: complete held job `id` with `result`. */
type Ack = DispatchedClaim['acks'][number];

/**
 * `VALIDATION` unless `limits.maxClaimBytes` is an integer at least `maxPayloadBytes`, so that one job always
 * fits a claim: checked once, at start.
 */
export function checkMaxClaimBytes(limits: { maxClaimBytes: number; maxPayloadBytes: number }): void {
  const { maxClaimBytes, maxPayloadBytes } = limits;
  if (!Number.isInteger(maxClaimBytes) || maxClaimBytes < maxPayloadBytes) {
    throw new WorkqError(
      'VALIDATION',
      `limits.maxClaimBytes must be an integer at least limits.maxPayloadBytes (${maxPayloadBytes}); got ${maxClaimBytes}.`,
    );
  }
}

/**
 * The most jobs one claim leases: as many payloads of the largest size a job may have as `maxClaimBytes`
 * holds, so a claim's answer stays within it whatever its jobs carry (at least one, by `checkMaxClaimBytes`).
 */
function jobsPerClaim(limits: { maxClaimBytes: number; maxPayloadBytes: number }): number {
  return Math.floor(limits.maxClaimBytes / limits.maxPayloadBytes);
}

/**
 * Leases up to `claim.limit` jobs, and at most `jobsPerClaim`, after completing the acks it carries, waiting
 * up to `claim.waitMs` when none is ready (`ClaimDispatcher.claim`). Acks that cannot be stored are not tried:
 * the answer says `acksFailed`, at once rather than after a long poll, so the worker sends them again on their
 * own and hears why.
 *
 * `claim.acks` is taken over: once the store has their outcomes, they are counted in the metrics, that array
 * and every copy made of it here are emptied, and `letGo` is told, so a claim that waits on for work holds none
 * of their results (its caller drops what else held them, and gives back its body's bytes).
 */
export async function claimJobs(
  services: ServerServices,
  claim: DispatchedClaim & { acks: Ack[] },
  signal: AbortSignal,
  letGo?: () => void,
): Promise<ClaimAnswer> {
  const { limits } = services.options;
  checkBatchSize(claim.limit, limits.maxBatchSize, 'claim');
  const carried = await storableAcks(services, claim.acks);
  const acksSettled = (completed: readonly string[]) => {
    // A worker claims one job type, and carries the acks of that type.
    observeAcks(services, claim.name, claim.acks, completed);
    claim.acks.length = 0;
    carried.acks.length = 0;
    letGo?.();
  };
  const answer = await inAnswer(services.answerBudget, (holder) =>
    services.dispatcher.claim(
      {
        ...claim,
        limit: Math.min(claim.limit, jobsPerClaim(limits)),
        waitMs: carried.valid ? claim.waitMs : 0,
        acks: carried.acks,
        acksSettled,
        room: claimRoom(services, holder, signal),
      },
      signal,
    ),
  );
  services.metrics.observeClaimed(answer.jobs, Date.now());
  return { ...answer, acksFailed: answer.acksFailed || !carried.valid };
}

/**
 * A claim's room in the server's `AnswerBudget`: `maxPayloadBytes` per job before each store attempt, cut to what
 * the jobs it leased carry once they are read; jobs handed over by enqueues are counted as they come. A claim
 * waits for room no longer than for jobs: at its deadline it answers with none.
 */
function claimRoom(services: ServerServices, holder: AnswerHolder, signal: AbortSignal): ClaimRoom {
  const budget = services.answerBudget;
  const perJob = services.options.limits.maxPayloadBytes;
  let reserved: AnswerRoom | undefined;
  return {
    async reserve(limit, attemptSignal, wait) {
      reserved = await budget.reserve(holder.request, holder.owner, limit * perJob, perJob, attemptSignal, wait);
      return Math.floor(reserved.bytes / perJob);
    },
    leased(jobs) {
      const bytes = jobs.length === 0 ? 0 : valueBytes(jobs.map((job) => job.payload));
      if (reserved) reserved.keep(bytes);
      else budget.add(holder.request, holder.owner, bytes, signal);
      reserved = undefined;
    },
  };
}

/**
 * Completes a batch of held jobs; a lost lease fails only its own item. `name`, the jobs' type, labels the
 * handler duration metric; without it the batch is not observed there. Results over `maxResultBytes` end
 * their jobs dead and the call is refused with `PAYLOAD_TOO_LARGE`, the other jobs completed as asked.
 */
export async function completeJobs(services: ServerServices, items: readonly Ack[], name: string | undefined) {
  const oversized = checkAcks(services, items);
  if (oversized.length > 0) {
    const refused = await failOversized(services, oversized);
    const rest = items.filter((item) => !oversized.some(({ ack }) => ack === item));
    if (rest.length > 0) await services.dispatcher.complete(rest, name);
    throw refused;
  }
  const outcomes = await services.dispatcher.complete(items, name);
  if (name !== undefined) {
    const completed = outcomes.filter((o) => o.ok).map((o) => o.id);
    observeAcks(services, name, items, completed);
  }
  return outcomes;
}

/** A failed attempt as a worker reports it. */
export interface Failure {
  message: string;
  permanent: boolean;
  /** The attempt ran past its time limit: recorded with the code `TIMEOUT`. */
  timedOut?: boolean | undefined;
  errorName?: string | undefined;
  stack?: string | undefined;
}

/** Records a failed attempt: the job is retried after its backoff, or ends dead; counted by outcome. */
export async function failJob(services: ServerServices, lease: LeaseRef, failure: Failure) {
  const { message, permanent, timedOut, errorName, stack } = failure;
  const status = await services.engine.fail(lease, {
    message,
    permanent,
    ...(timedOut ? { timedOut } : {}),
    ...(errorName ? { errorName } : {}),
    ...(stack ? { stack } : {}),
  });
  const outcome = status.state === 'dead' ? 'dead' : 'retry';
  services.metrics.failed.inc({ outcome });
  services.metrics.observeHandled(status.name, [lease.leaseToken], outcome, Date.now());
  return { state: status.state, runAt: status.runAt, attempts: status.attempts };
}

/** Gives held jobs of type `name` back unstarted; fenced by their leases. Resolves to the ids released. */
export function releaseJobs(services: ServerServices, name: string, leases: readonly LeaseRef[]) {
  checkBatchSize(leases.length, services.options.limits.maxBatchSize, 'release');
  return services.engine.release(leases.map(({ id, leaseToken }) => ({ id, leaseToken, name })));
}

/**
 * Extends a batch of leases; an item whose lease is lost (expired, cancelled) comes back `ok: false`.
 * `workerId` names the worker extending them, which the worker registry then counts as seen.
 *
 * With `wait`, a batch whose leases all held is answered when one of its jobs, or any job `workerId` last held,
 * is cancelled (through this server or another on the store), after `wait.waitMs` (at most the server's
 * long-poll limit), or when the request ends: the worker hears of a cancellation at once instead of at its
 * next extension. The cancelled job comes back `ok: false, cancelled: true`, added to the outcomes when the
 * batch did not name it (the worker claimed it after sending the request) and `wait.mayConsume` allows its
 * type: a worker id is no secret, so a token hears only of jobs it could have claimed. So a worker keeps one
 * extension waiting, with no items while it holds nothing, and hears of every cancellation of its jobs.
 */
export async function extendLeases(
  services: ServerServices,
  items: readonly (LeaseRef & { leaseMs?: number | undefined })[],
  workerId: string | undefined,
  wait?: { waitMs: number; signal: AbortSignal; mayConsume: (name: string) => boolean },
) {
  checkBatchSize(items.length, services.options.limits.maxBatchSize, 'extend');
  // Presence is bookkeeping: a store that cannot write it must not cost the worker its leases.
  if (workerId) services.dispatcher.presence.touched(workerId).catch(() => undefined);
  // Watched from before the leases are extended, so that a cancellation in between is heard.
  const stopWatching = new AbortController();
  const waitMs = Math.min(wait?.waitMs ?? 0, services.options.limits.maxLongPollMs);
  const watched = services.cancellations.waitForCancel(
    { ids: items.map((item) => item.id), workerId },
    waitMs,
    wait ? AbortSignal.any([wait.signal, stopWatching.signal]) : stopWatching.signal,
  );
  let outcomes: ExtendOutcome[];
  try {
    outcomes = await Promise.all(
      items.map(async ({ id, leaseToken, leaseMs }) => {
        try {
          const { leaseExpiresAt } = await services.engine.extend({ id, leaseToken }, leaseMs);
          return { id, ok: true as const, leaseExpiresAt };
        } catch (error) {
          if (isWorkqError(error, 'LEASE_LOST')) return { id, ok: false as const };
          throw error;
        }
      }),
    );
  } catch (error) {
    stopWatching.abort();
    throw error;
  }
  // A lost lease is answered at once.
  if (outcomes.some((outcome) => !outcome.ok)) {
    stopWatching.abort();
    return outcomes;
  }
  const cancelled = new Set(await watched);
  if (cancelled.size === 0) return outcomes;
  const named = outcomes.map((outcome) =>
    cancelled.has(outcome.id) ? { id: outcome.id, ok: false as const, cancelled: true as const } : outcome,
  );
  const unnamed = [...cancelled].filter((id) => !items.some((item) => item.id === id));
  const heard = await consumable(services, unnamed, wait?.mayConsume ?? (() => false));
  return [...named, ...heard.map((id) => ({ id, ok: false as const, cancelled: true as const }))];
}

/** The jobs of `ids` whose type `mayConsume` allows (cancellations are rare: each is read). */
async function consumable(
  services: ServerServices,
  ids: readonly string[],
  mayConsume: (name: string) => boolean,
): Promise<string[]> {
  const allowed = await Promise.all(ids.map((id) => jobType(services, id).then(mayConsume, () => false)));
  return ids.filter((_, index) => allowed[index]);
}

/** One extended lease: its new expiry, or lost (`cancelled`: the job was cancelled while the request waited). */
type ExtendOutcome = { id: string; ok: true; leaseExpiresAt: Date } | { id: string; ok: false; cancelled?: true };

/** The size of a result as stored, in bytes of UTF-8 JSON (a bigint, Date or Map counts with its encoding). */
function storedBytes(ack: Ack): number {
  const text = JSON.stringify(toStoredValue(ack.result, `Result of job ${ack.id}`));
  return text === undefined ? 0 : Buffer.byteLength(text, 'utf8');
}

/** Checks a batch of acks before any goes to the store: its size, and that each result can be stored. */
function checkAcks(services: ServerServices, items: readonly Ack[]): { ack: Ack; bytes: number }[] {
  checkBatchSize(items.length, services.options.limits.maxBatchSize, 'complete');
  const { maxResultBytes } = services.options.limits;
  return items.map((ack) => ({ ack, bytes: storedBytes(ack) })).filter(({ bytes }) => bytes > maxResultBytes);
}

/**
 * Ends each job whose result is over `maxResultBytes` dead, its error naming
 * the limit, and stores none of the result: retrying would make the same
 * result again, so the job must not run forever. Fenced by the lease (a job
 * whose lease is lost already is left as it is). Resolves to the refusal the
 * worker gets, `PAYLOAD_TOO_LARGE`.
 */
async function failOversized(services: ServerServices, oversized: { ack: Ack; bytes: number }[]): Promise<WorkqError> {
  const maxBytes = services.options.limits.maxResultBytes;
  await Promise.all(
    oversized.map(({ ack, bytes }) =>
      services.engine
        .fail(
          { id: ack.id, leaseToken: ack.leaseToken },
          {
            message: `The result was ${bytes} bytes, over the server's limit of ${maxBytes} (maxResultBytes), so it was not stored and the job was not retried. Store large results elsewhere and return a reference to them.`,
            permanent: true,
          },
        )
        .catch((error: unknown) => {
          if (!isWorkqError(error, 'LEASE_LOST')) throw error;
        }),
    ),
  );
  const [first] = oversized as [{ ack: Ack; bytes: number }];
  return new WorkqError(
    'PAYLOAD_TOO_LARGE',
    `The result of job ${first.ack.id} is ${first.bytes} bytes; the limit is ${maxBytes} (limits.maxResultBytes, --max-result-bytes)${oversized.length > 1 ? `, and ${oversized.length - 1} more results are over it too` : ''}. Such jobs end dead with that error, their results not stored. Store large results elsewhere and return a reference to them.`,
  );
}

/**
 * The acks a claim carries that can go to the store: none when any cannot be
 * stored, and never one over `maxResultBytes` (its job is failed here, and
 * the claim answers `acksFailed`, so the worker sends its acks again on their
 * own and hears `PAYLOAD_TOO_LARGE`).
 */
async function storableAcks(services: ServerServices, items: readonly Ack[]): Promise<{ acks: Ack[]; valid: boolean }> {
  let oversized: { ack: Ack; bytes: number }[];
  try {
    oversized = checkAcks(services, items);
  } catch {
    return { acks: [], valid: false };
  }
  if (oversized.length === 0) return { acks: [...items], valid: true };
  await failOversized(services, oversized);
  const refused = new Set(oversized.map(({ ack }) => ack));
  return { acks: items.filter((ack) => !refused.has(ack)), valid: false };
}

function observeAcks(
  services: ServerServices,
  name: string,
  acks: readonly Ack[],
  completedIds: readonly string[],
): void {
  if (completedIds.length === 0) return;
  // Usually every ack completed, in the order sent: then no lookup is needed.
  let tokens: string[];
  if (completedIds.length === acks.length && acks.every((ack, index) => ack.id === completedIds[index])) {
    tokens = acks.map((ack) => ack.leaseToken);
  } else {
    const completed = new Set(completedIds);
    tokens = acks.filter((ack) => completed.has(ack.id)).map((ack) => ack.leaseToken);
  }
  services.metrics.observeHandled(name, tokens, 'completed', Date.now());
}

/**
 * The type of the job `lease` names, read from the store: what a caller must be allowed to consume to act on
 * the job, whatever it says of it. `undefined` when no such job is held under that token.
 */
export async function heldJobType(services: ServerServices, lease: LeaseRef): Promise<string | undefined> {
  const job = await services.engine.store.getJob(lease.id, { withoutValues: true });
  return job && job.leaseToken === lease.leaseToken ? job.name : undefined;
}
