import { MAX_BATCH_SIZE, type TraceContext } from '../jobs.ts';
import { constrains, type FlowControl } from './flow-control.ts';
import type { FlowEndNotices } from './flow-end-notices.ts';
import type { HeldChild } from './flows.ts';
import { newLeaseToken } from './ids.ts';
import { checkBatch, checkLeaseMs } from './input-checks.ts';
import type { JobEventEmitter } from './job-events.ts';
import { type CompleteOutcome, type LeasedJobs, storedAcks } from './leased-jobs.ts';
import type { ClaimedRecord, ClaimRequest, LeaseRef, LimitedClaim, QueueSettings, Store } from './store.ts';
import { fromStoredValue } from './stored-value.ts';

/** A consumer's request to lease up to `limit` jobs of one type. */
export interface ClaimInput {
  name: string;
  /** Oldest version the consumer reads. @defaultValue 1 */
  minVersion?: number;
  /** Newest version the consumer reads; newer jobs wait for another consumer. */
  maxVersion: number;
  limit: number;
  workerId: string;
  /** Overrides each job's own `leaseMs`; within `LEASE_MS_LIMITS`. */
  leaseMs?: number;
}

/**
 * A leased job as a consumer receives it, one shape from the engine through the claim dispatcher and the
 * server's answer to the SDK's worker. Times are epoch milliseconds and a job without a trace context has
 * none, so a batch of plain-JSON payloads travels as plain JSON.
 */
export interface ClaimedJob {
  id: string;
  name: string;
  version: number;
  payload: unknown;
  /** 1-based number of this attempt. */
  attempt: number;
  maxAttempts: number;
  leaseToken: string;
  /** When the lease runs out unless extended (epoch ms). */
  leaseExpiresAtMs: number;
  leaseMs: number;
  /**
   * The job's own time limit (`EnqueueOptions.timeoutMs`), when it has one: no lease of this attempt outlives
   * the claim's time + this, and the sweep fails the attempt with `TIMEOUT` when its lease runs out there.
   */
  timeoutMs?: number;
  progress: number;
  /** When the job became due (epoch ms): how long it waited ready is the claim's time less this. */
  runAtMs: number;
  /** The trace context the job was created in, when it has one. */
  traceContext?: TraceContext;
  /** Set on a parent that has had children (a flow's, or its own `waitForChildren`'s): it runs after them. */
  resumed?: true;
  /**
   * On a resumed job, when the server read them with the claim: the first page of its children, as
   * `consumer.children` answers it (`Flows.heldChildren`; one claim's pages hold at most
   * `FLOW_LIMITS.statusChildren` children together), so the worker starts the handler without a request of its
   * own. Absent: the worker reads them itself.
   */
  children?: { children: HeldChild[]; more: boolean };
  /** Set on a child in a flow: its parent's id. */
  parentId?: string;
}

/** The store request of a claim made at `now`, with a fresh fencing token; `VALIDATION` for a `leaseMs` out of bounds. */
export function claimRequest(input: ClaimInput, now: Date): ClaimRequest {
  return {
    name: input.name,
    minVersion: input.minVersion ?? 1,
    maxVersion: input.maxVersion,
    limit: Math.min(Math.max(1, Math.floor(input.limit)), MAX_BATCH_SIZE),
    leaseToken: newLeaseToken(now),
    workerId: input.workerId,
    leaseMs: input.leaseMs === undefined ? null : checkLeaseMs(input.leaseMs),
    now,
  };
}

/**
 * A leased job as the store returned it, with its payload decoded, as a consumer receives it. Built field by
 * field, not by rest and spread: it runs for every claimed job, where a spread copy is far slower.
 */
export function toClaimedJob(job: ClaimedRecord): ClaimedJob {
  const claimed: ClaimedJob = {
    id: job.id,
    name: job.name,
    version: job.version,
    payload: fromStoredValue(job.payload),
    attempt: job.attempts,
    maxAttempts: job.maxAttempts,
    leaseToken: job.leaseToken as string,
    leaseExpiresAtMs: (job.leaseExpiresAt as Date).getTime(),
    leaseMs: job.leaseMs,
    progress: job.progress,
    runAtMs: job.runAt.getTime(),
  };
  if (job.traceContext !== null) claimed.traceContext = job.traceContext;
  if (job.timeoutMs != null) claimed.timeoutMs = job.timeoutMs;
  if (job.childCount) claimed.resumed = true;
  if (job.parentId) claimed.parentId = job.parentId;
  return claimed;
}

/** Which of a type's limits count its leased jobs (see `Claims.placeLimits`). */
export interface PlaceLimits {
  concurrency: boolean;
  groupConcurrency: boolean;
}

/** What a claim resolves to: the jobs leased, and whether the type's pause or rate limit held it back. */
export interface ClaimOutcome {
  jobs: ClaimedJob[];
  /** The type is paused: nothing was leased. */
  paused: boolean;
  /** When the type's rate limit lets the next job start, when it holds further starts back (see `LimitedClaim`). */
  nextStartAt: Date | null;
}

/**
 * The claim, from a consumer's request to the leased jobs as it receives them: one store claim per request,
 * the plain one or the one under the type's limits, after the expired leases are swept back to the queue.
 * The claim dispatcher calls it for every store attempt of a long poll; `Engine.claim` for a direct claim.
 */
export class Claims {
  private lastSweepMs = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly store: Store,
    /** The settings this server read: they pick which store claim goes first. */
    private readonly flow: FlowControl,
    private readonly leased: LeasedJobs,
    private readonly events: JobEventEmitter,
    /** Told of each job a sweep ends dead, as a failed job's death is told, and of what it ended through its flow. */
    private readonly flowEnds: FlowEndNotices,
    /** How often claims sweep expired leases back to the queue. */
    private readonly leaseSweepIntervalMs: number,
  ) {}

  /**
   * Completes `acks` (held jobs of the claim's type), then makes the claim `request` (made at `request.now` by
   * `claimRequest`, and sent to the store as it is): as `Store.claimJobsUnlessHeld` does, or, for a type that is
   * paused, limited or grouped, as `Store.claimLimitedJobs` does. Under a type's limits the acks' jobs count
   * until they complete, so the claim counts after them: where the store has `completeAndClaim` both commit
   * together, and the places the acks free are the claim's to take, for one commit; elsewhere the acks commit
   * first.
   *
   * The settings this server read only pick which claim goes first. The store decides in the claim: the
   * limited claim reads the settings it honours, and the plain one refuses a type whose settings hold its
   * claims back, which is then claimed as a limited one. So a pause or limit set through any server holds for
   * every claim that starts after the change was stored, whatever this server read before.
   */
  async completeAndClaim(
    acks: readonly (LeaseRef & { result?: unknown })[],
    request: ClaimRequest,
  ): Promise<ClaimOutcome & { outcomes: CompleteOutcome[] }> {
    checkBatch(acks.length, 'completeMany');
    const { now } = request;
    await this.sweepExpiredLeases(now);
    const claimed = await this.claimFromStore(request, acks.length > 0 ? storedAcks(acks) : []);
    const outcomes = acks.length > 0 ? await this.leased.completed(acks, claimed.completed, now) : [];
    const jobs = claimed.jobs.map(toClaimedJob);
    this.events.started(jobs, now);
    return { outcomes, jobs, paused: claimed.paused, nextStartAt: claimed.nextStartAt };
  }

  /**
   * Which of `name`'s limits count its leased jobs, wherever they are held, until they end. Under either, an
   * ack frees a place a claim could take, so a claim should count after the acks it carries. Under a
   * `concurrency` limit a worker should also hold no more jobs than it runs: a job waiting in one worker would
   * hold a place that another worker's free slot could use.
   */
  async placeLimits(name: string): Promise<PlaceLimits> {
    const settings = await this.flow.settingsOf(name);
    return {
      concurrency: (settings?.concurrency ?? null) !== null,
      groupConcurrency: (settings?.groupConcurrency ?? null) !== null,
    };
  }

  /** Returns jobs whose lease expired to the queue (or dead, with attempts used up), at most once per interval. */
  async sweepExpiredLeases(now: Date): Promise<{ requeued: number; dead: number }> {
    if (now.getTime() - this.lastSweepMs < this.leaseSweepIntervalMs) return { requeued: 0, dead: 0 };
    this.lastSweepMs = now.getTime();
    const error = {
      message: 'The lease expired before the worker finished (worker died, stalled or lost its connection).',
      code: 'LEASE_EXPIRED',
      at: now,
    };
    const swept = await this.store.requeueExpiredLeases(now, error);
    this.events.leasesExpired(swept, error, now);
    for (const job of swept) {
      if (!job.dead) continue;
      this.flowEnds.finished(job, 'dead', now);
    }
    const dead = swept.filter((job) => job.dead).length;
    return { requeued: swept.length - dead, dead };
  }

  /** The store's claim (see `completeAndClaim`), with the ids of the acks that completed. */
  private async claimFromStore(
    request: ClaimRequest,
    acks: readonly (LeaseRef & { result: unknown })[],
  ): Promise<LimitedClaim & { completed: string[] }> {
    const settings = await this.flow.settingsOf(request.name);
    if (acks.length > 0 && constrains(settings, request.now) && this.store.completeAndClaim) {
      const together = await this.store.completeAndClaim.completeAndClaimLimitedJobs(acks, request);
      return this.claimedUnder(settings, together.claim, together.completed);
    }
    const completed = acks.length > 0 ? await this.store.completeJobs(acks, request.now) : [];
    if (constrains(settings, request.now))
      return this.claimedUnder(settings, await this.store.claimLimitedJobs(request), completed);
    const jobs = await this.store.claimJobsUnlessHeld(request);
    if (jobs !== null) return { jobs, paused: false, nextStartAt: null, completed };
    // Paused, limited, grouped or held through another server since this one read the settings: read them again.
    this.flow.forget();
    return { ...(await this.store.claimLimitedJobs(request)), completed };
  }

  private claimedUnder(
    settings: QueueSettings,
    claimed: LimitedClaim,
    completed: string[],
  ): LimitedClaim & { completed: string[] } {
    // Resumed or paused elsewhere since the settings were read: read them again next time.
    if (claimed.paused !== settings.paused) this.flow.forget();
    return { ...claimed, completed };
  }
}
