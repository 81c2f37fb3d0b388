import type { ClaimedRecord, ClaimRequest } from './store-records.ts';

/**
 * The group of a job enqueued without one into a grouped type (`NewJob.group`): those jobs take their turns
 * as one group, which `groupConcurrency` does not limit. (An enqueue's group is never empty.)
 */
export const NO_GROUP = '';

/** The limits of one job type; `null`: no such limit. */
export interface QueueLimits {
  /** Active (leased) jobs of the type across all workers and servers. */
  concurrency: number | null;
  /** At most `max` jobs of the type start in any window of `perMs`. */
  rateLimit: { max: number; perMs: number } | null;
  /** Active jobs per group (the enqueue option `group`); jobs without a group are not limited by it. */
  groupConcurrency: number | null;
  /**
   * `'strict'`: a job of a group that has started and not ended (active, or waiting out the backoff of a failed
   * attempt, or back in the queue after its lease expired) holds its group: no other job of the group is claimed
   * until it completes, dies or is cancelled, so a group's jobs run one after another in their order across
   * retries. Only with `groupConcurrency: 1`; jobs without a group are not held. `null`: groups do not wait
   * for a failed job.
   */
  groupOrder: 'strict' | null;
}

/** The flow-control settings a store keeps for one job type (`admin.pause`, `admin.setLimits`). */
export interface QueueSettings extends QueueLimits {
  name: string;
  /** Claims lease nothing of a paused type; its jobs keep arriving. */
  paused: boolean;
  /** Jobs of the type were enqueued with a group: claims take turns between groups. */
  grouped: boolean;
  /**
   * Claims lease nothing of the type before this instant (`ctx.rateLimited`: an upstream said 429); `null`, or
   * an instant already past: no hold. It ends by itself, with no write.
   */
  heldUntil: Date | null;
  updatedAt: Date;
}

/**
 * A change to a type's settings: fields left out stay as they are; a limit set to `null` is cleared. A
 * `heldUntil` extends the type's hold to that instant, or leaves a hold that ends later as it is; `null` lifts
 * the hold (`admin.resume`), in the same write as the rest of the change.
 */
export type QueueSettingsChange = Partial<QueueLimits> & {
  paused?: boolean;
  grouped?: true;
  heldUntil?: Date | null;
};

/** What a claim under a type's settings (`claimLimitedJobs`) did. */
export interface LimitedClaim {
  /** The jobs leased, in claim order. */
  jobs: ClaimedRecord[];
  /** The type is paused: nothing was leased. */
  paused: boolean;
  /**
   * Set when the rate limit stopped this claim short of its `limit` (or will stop the next claim), or the type
   * is held (`heldUntil`): the earliest time a job of the type may start again. `null` when neither holds.
   */
  nextStartAt: Date | null;
}

/**
 * Flow control: the per-type settings every server reads, and the claims
 * that honour them. Whether a claim is held back is decided by the store in
 * the claim itself, never by a server's copy of the settings: a change
 * holds for every claim that starts once `updateQueueSettings` resolved, on
 * every server.
 */
export interface FlowControlStore {
  /** The settings stored, of one type or of all, ordered by name. */
  listQueueSettings(name?: string): Promise<QueueSettings[]>;

  /**
   * Applies `change` to the type's settings, creating them (not paused, no
   * limits) when none are stored; one atomic write. Resolves to the settings
   * now stored; or, writing nothing, to `null` when a change of a group limit would leave
   * `groupOrder: 'strict'` beside a `groupConcurrency` other than 1 (`breaksStrictOrder`), as judged on the
   * settings stored when it writes. Settings are never deleted.
   */
  updateQueueSettings(name: string, change: QueueSettingsChange, now: Date): Promise<QueueSettings | null>;

  /**
   * `claimJobs`, unless the type's stored settings hold its claims back
   * (paused, a limit set, grouped, or held past the claim's `now`): read by the same step (SQL: the same
   * statement, or the transaction's locking read; MongoDB: a read of the
   * settings document just before the leases), so the settings stored when
   * the call began decide. Then it leases nothing and resolves to `null`, for
   * `claimLimitedJobs` to claim; it may resolve to `[]` instead when no job is
   * ready anyway. A type without settings costs a look-up of its settings at
   * most (PostgreSQL and MySQL: by primary key in the claim's own statement).
   * A store's handoff (`insertAndClaimJob`) likewise leases no job of a type
   * whose settings hold its claims back.
   */
  claimJobsUnlessHeld(request: ClaimRequest): Promise<ClaimedRecord[] | null>;

  /**
   * `claimJobs` under the type's stored settings, atomically with respect to
   * every other `claimLimitedJobs` of the type (they are serialised on the
   * type's settings): nothing when paused; nothing while the type is held
   * (`heldUntil` after the claim's `now`), answering `nextStartAt` = `heldUntil`; no more than `concurrency` jobs of
   * the type active once it is done (counting every `active` job, expired
   * lease or not), nor more than `groupConcurrency` of one group; no more than
   * `rateLimit.max` started in any window of `rateLimit.perMs` (a start is
   * the claim's `now`); and, for a grouped type, groups take turns (each
   * group with ready jobs gets one turn per pass round them: PostgreSQL and
   * MySQL go round the groups' names from where the type's previous claim
   * stopped, MongoDB takes the group whose last start is oldest, or that never
   * started, first), and a batch takes one job per group per round. Within a
   * group, jobs keep the claim order (higher priority first, then by run time: oldest first for `fifo`,
   * newest first for `lifo`). With no settings stored it is `claimJobs`.
   */
  claimLimitedJobs(request: ClaimRequest): Promise<LimitedClaim>;
}
