import {
  type AnyJobDefinition,
  type Catalog,
  MAX_BATCH_SIZE,
  parseWith,
  upgradePayload,
  WorkqError,
} from '@workq/core';
import type { ClaimedJob } from '@workq/queue-server/router';
import { PermanentError } from '../errors.ts';
import { type Logger, silentLogger } from '../logger.ts';
import { reconnectDelayMs, retrying, sleep } from '../retry.ts';
import { AckBatcher } from './ack-batcher.ts';
import { describeThrown } from './attempt-error.ts';
import { type FailAnswer, logAttempt } from './attempt-log.ts';
import { ClaimFailures } from './claim-failures.ts';
import { HandBack } from './hand-back.ts';
import { HandlerContext, type JobContextDeps, readChildren } from './job-context.ts';
import { type JobAbort, LeaseKeeper, localLeaseExpiry } from './lease-keeper.ts';
import { runConsumerLoop } from './loop.ts';
import { timeLimitError, withinTimeLimit } from './time-limit.ts';
import type { ConsumeOptions, JobContext, Worker } from './types.ts';

export interface WorkerDeps extends JobContextDeps {
  name: string;
  definition: AnyJobDefinition;
  ready: () => Promise<void>;
  handler: (job: unknown, ctx: JobContext<Catalog>) => unknown;
  options: ConsumeOptions;
  /** The queue server's URL, named when it cannot be reached. */
  url: string;
  /** The client's logger; `options.logger` overrides it. */
  logger: Logger;
  /** Whether the token is a function, asked again per request: a refused token is then tried once more. */
  tokenRefreshes: boolean;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** This process's id, for the worker registry; none in a browser. */
const PROCESS_ID: number | undefined = (globalThis as { process?: { pid?: number } }).process?.pid;

/** How long a closing worker waits for its server to answer its claims, before dropping them. */
const STOP_WAITING_MS = 5_000;

/** When a worker stops resending a job's ack or failure: ten lease lengths after its lease expires. */
function giveUpAt(job: ClaimedJob): number {
  return job.leaseExpiresAtMs + job.leaseMs * 10;
}

/** A claimed job and its lease's abort state, held from the claim on. */
interface HeldJob {
  job: ClaimedJob;
  jobAbort: JobAbort;
  /** When the server leased it, by this process's clock (see `localLeaseExpiry`): its time limit counts from then. */
  leasedAtMs: number;
}

/** Wires the consumer loop to the server: claims, runs handlers, extends leases, acks in batches. */
export function startWorker(deps: WorkerDeps): Worker {
  const { name, definition, call, options } = deps;
  const { timeoutMs } = definition;
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? 1));
  const pollWaitMs = options.pollWaitMs ?? 25_000;
  const logger = options.logger === false ? silentLogger : (options.logger ?? deps.logger);
  const who = `worker for "${name}"`;
  const onError = options.onError ?? ((error: unknown) => logger.warn(`The ${who}: ${messageOf(error)}`, { error }));
  const workerId = globalThis.crypto.randomUUID();
  const leases = new LeaseKeeper(call, undefined, workerId);
  const startedAt = new Date();
  const acks = new AckBatcher(
    call,
    MAX_BATCH_SIZE,
    {
      lost: (ack) =>
        onError(
          new WorkqError('LEASE_LOST', `Job ${ack.id} finished after its lease was lost; its result was not recorded.`),
        ),
      failed: (_ack, error) => onError(error),
    },
    name,
  );
  const handBack = new HandBack(call, name, onError);
  const stopClaiming = new AbortController();
  /** Drops the claims still out: when closing, unless their server answers them at once. */
  const dropClaims = new AbortController();
  let claimsOut = 0;
  /**
   * The last claim's answer said the type has a concurrency limit: the worker then prefetches nothing, so it
   * holds only the jobs it runs, and a finished job's ack leaves at once (with the claim its freed slot sends, or
   * on its own while a claim is out), and the server counts after it.
   */
  let limited = false;
  /** The failure that stopped the worker on its own, which `closed` rejects with. */
  let stoppedBy: WorkqError | undefined;
  const claimFailures = new ClaimFailures({
    logger,
    url: deps.url,
    who,
    onError: options.onError,
    tokenRefreshes: deps.tokenRefreshes,
  });

  /** Claims up to `limit` jobs, carrying the acks waiting to go. */
  const claimFromServer = async (limit: number): Promise<HeldJob[]> => {
    const input = {
      name,
      minVersion: definition.versions[0] ?? definition.version,
      maxVersion: definition.version,
      limit,
      workerId,
      waitMs: pollWaitMs,
      ...(options.host ? { host: options.host } : {}),
      ...(PROCESS_ID === undefined ? {} : { pid: PROCESS_ID }),
      startedAt,
    };
    const carried = acks.take();
    const complete = carried.map(({ id, leaseToken, result }) => ({ id, leaseToken, result }));
    try {
      const sentAtMs = Date.now();
      // The server holds the claim up to `pollWaitMs` when there is no work: its time limit starts after that.
      const claimed = await call((api, signal) => api.consumer.claim.mutate({ ...input, complete }, { signal }), {
        waitMs: pollWaitMs,
        signal: dropClaims.signal,
      });
      const receivedAtMs = Date.now();
      if (claimed.acksFailed) acks.resend(carried);
      else acks.settle(carried, claimed.completed);
      limited = claimed.concurrencyLimited === true;
      // Leases are kept alive from the claim on, also while a prefetched job waits for a slot.
      return claimed.jobs.map((job) => {
        const grant = { leaseMs: job.leaseMs, serverExpiresAtMs: job.leaseExpiresAtMs, sentAtMs, receivedAtMs };
        const jobAbort = leases.hold(job.id, job.leaseToken, grant);
        return { job, jobAbort, leasedAtMs: localLeaseExpiry(grant) - grant.leaseMs };
      });
    } catch (error) {
      acks.restore(carried);
      throw error;
    }
  };

  const claim = async (limit: number): Promise<HeldJob[]> => {
    claimsOut++;
    try {
      await deps.ready();
      // Handlers run traced from the first job on, when `@opentelemetry/api` is there.
      await deps.tracing?.get();
      // Closed while the catalog was being registered: nothing more is claimed.
      if (stopClaiming.signal.aborted) return [];
      const held = await claimFromServer(limit);
      claimFailures.succeeded();
      return held;
    } finally {
      claimsOut--;
    }
  };

  /**
   * Closing: the server answers this worker's waiting claims at once, so none is dropped with a job handed to
   * it meanwhile, nor with acks to send again. Claims it does not hold (another server behind a balancer, or
   * a server that cannot be reached or does not know the call) are dropped, as they would be by a timeout.
   */
  const endWaitingClaims = async (): Promise<void> => {
    if (claimsOut === 0) return;
    const here = await call((api, signal) => api.consumer.stopWaiting.mutate({ workerId }, { signal }), {
      signal: dropClaims.signal,
    }).then(
      ({ claims }) => claims,
      () => 0,
    );
    if (here < claimsOut) dropClaims.abort();
  };

  /**
   * Records a failed attempt and logs it. A `PermanentError`, a payload this consumer can never read, or a result
   * that fails the type's `result` schema (a bug no retry fixes) ends the job at once; anything else retries.
   * An attempt that ran past its time limit is `timedOut`: recorded with its message alone, as `TIMEOUT`.
   */
  const settleFailure = async (
    job: ClaimedJob,
    thrown: unknown,
    giveUpAtMs: number,
    ending: { permanent?: boolean; timedOut?: boolean } = {},
  ): Promise<void> => {
    const permanent = ending.permanent === true || thrown instanceof PermanentError;
    const timedOut = ending.timedOut === true;
    const described = timedOut ? { message: messageOf(thrown) } : describeThrown(thrown);
    const report = { id: job.id, leaseToken: job.leaseToken, ...described, permanent, timedOut };
    let answer: FailAnswer;
    try {
      answer = await retrying(() => call((api, signal) => api.consumer.fail.mutate(report, { signal })), giveUpAtMs);
    } catch (error) {
      logAttempt(logger, job, described, thrown, undefined);
      throw error;
    }
    logAttempt(logger, job, described, thrown, answer);
  };

  const handle = async ({ job, jobAbort, leasedAtMs }: HeldJob): Promise<void> => {
    const ctx = new HandlerContext(deps, { id: job.id, leaseToken: job.leaseToken, name }, jobAbort);
    try {
      // A prefetched job whose lease was lost while it waited is someone else's now.
      if (jobAbort.aborted) return;
      // One whose lease ran out, or nearly, before it could start (the claim's answer or a slot came late) may
      // be someone else's already, or soon: it goes back unstarted, and another worker runs it.
      if (!leases.mayStart(job.id)) {
        handBack.add(job.id, job.leaseToken);
        return;
      }
      let payload: unknown;
      try {
        payload = upgradePayload(name, definition, job.version, job.payload);
      } catch (error) {
        await settleFailure(job, error, giveUpAt(job), { permanent: true });
        return;
      }
      let returned: unknown;
      try {
        // A parent runs after its children: its handler is handed them, read before it starts (their first page
        // usually came with the claim).
        if (job.resumed) ctx.resumeAfter(await retrying(() => readChildren(call, job, job.children), giveUpAt(job)));
        const consumed = {
          id: job.id,
          name,
          payload,
          attempt: job.attempt,
          maxAttempts: job.maxAttempts,
          version: job.version,
        };
        const tracing = deps.tracing?.resolved;
        const running = tracing
          ? tracing.process(job, async () => deps.handler(consumed, ctx))
          : deps.handler(consumed, ctx);
        // The job's own limit, which the server enforces too, beats its type's (from an older producer).
        const limitMs = job.timeoutMs ?? timeoutMs;
        if (limitMs === undefined) returned = await running;
        else {
          const timedOut = timeLimitError(job.id, name, limitMs);
          const run = await withinTimeLimit(running, leasedAtMs + limitMs, () => jobAbort.abort(timedOut));
          if (run.timedOut) {
            await settleFailure(job, timedOut, giveUpAt(job), { timedOut: true });
            return;
          }
          returned = run.value;
        }
        if (ctx.ended) return;
      } catch (error) {
        if (ctx.ended || jobAbort.reason instanceof WorkqError) return;
        await settleFailure(job, error, giveUpAt(job));
        return;
      }
      let outcome: unknown;
      try {
        outcome = definition.result ? parseWith(definition.result, returned, `Result of "${name}"`) : null;
      } catch (error) {
        if (jobAbort.reason instanceof WorkqError) return;
        await settleFailure(job, error, giveUpAt(job), { permanent: true });
        return;
      }
      if (jobAbort.aborted) return;
      // The slot frees now; the completion reaches the server with the next claim or batch.
      acks.complete(job.id, job.leaseToken, outcome, giveUpAt(job));
    } catch (error) {
      onError(error);
    } finally {
      leases.release(job.id);
    }
  };

  const closed = runConsumerLoop(
    {
      concurrency,
      prefetch: () => (limited ? 0 : (options.prefetch ?? 0)),
      claimLanes: options.claimLanes ?? 1,
      claim,
      handle,
      backoff: (failures, error, signal) => {
        const stopsWorker = claimFailures.failed(error);
        if (stopsWorker) stop(stopsWorker);
        return sleep(reconnectDelayMs(failures), signal);
      },
    },
    stopClaiming.signal,
  )
    .then(() => Promise.all([acks.drain(), handBack.drain()]))
    .finally(() => leases.stop())
    .then(() => {
      if (stoppedBy) throw stoppedBy;
    });

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      stopClaiming.abort();
      const dropLate = setTimeout(() => dropClaims.abort(), STOP_WAITING_MS);
      const graceMs = options.closeGraceMs ?? 30_000;
      const grace = setTimeout(() => leases.abortAll(new WorkqError('TIMEOUT', 'The worker is closing.')), graceMs);
      await endWaitingClaims();
      // A worker that stopped on its own says why through `closed`; closing it is done all the same.
      await closed.catch(() => undefined);
      clearTimeout(grace);
      clearTimeout(dropLate);
    })();
    return closing;
  };

  /** Stops the worker on a failure no retry can mend: running jobs finish, then `closed` rejects with `error`. */
  function stop(error: WorkqError): void {
    if (stoppedBy) return;
    stoppedBy = error;
    if (options.onError) options.onError(error);
    else logger.error(error.message, { url: deps.url, code: error.code });
    void close();
  }

  return { closed, close };
}
