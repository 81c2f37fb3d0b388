import type { LimitedClaim } from './flow-control-store.ts';
import type { ClaimedRecord, ClaimRequest, JobRecord, LeaseRef, NewJob } from './store-records.ts';

/**
 * Insert-and-claim (`Store.handoff`): a job enqueued for a consumer already waiting is leased to it by its own
 * insert. A store without it: the job is inserted and the waiting claim is woken to claim it.
 */
export interface Handoff {
  /**
   * For a consumer already waiting: inserts `job` and, in the same atomic step, leases it under `claim` as
   * `claimJobs` would, when `claim` could take it (its version is in range and it is due at `claim.now`) and
   * no job `claim` could take is ready already. Otherwise `job` is inserted waiting, behind the ready ones
   * (jobs ready first are claimed first), and `claimed` is null. Durable before it resolves. When a retained
   * job of its type holds `job`'s idempotency key already, or any job holds its id, nothing is inserted and
   * it resolves to `null` (`insertJobs` then finds that job).
   */
  insertAndClaimJob(
    job: NewJob,
    claim: ClaimRequest,
  ): Promise<{ job: JobRecord; claimed: ClaimedRecord | null } | null>;
}

/**
 * Complete-and-claim (`Store.completeAndClaim`): a limited claim that carries acks commits them and its lease
 * together, so the places under `concurrency` they free are its to take at the cost of one commit. A store
 * without it: the acks commit first and the claim runs after.
 */
export interface CompleteAndClaim {
  /**
   * `completeJobs(jobs, claim.now)`, then `claimLimitedJobs(claim)`, in one transaction. The claim counts the
   * type's active jobs after the completions, so the places they free are its to take, and no other limited
   * claim of the type sees them freed before this one has run. Both commit together or not at all. Resolves
   * to the ids completed (as `completeJobs`) and the claim.
   */
  completeAndClaimLimitedJobs(
    jobs: readonly (LeaseRef & { result: unknown })[],
    claim: ClaimRequest,
  ): Promise<{ completed: string[]; claim: LimitedClaim }>;
}

/**
 * Cross-process wake-ups (`Store.notifier`: PostgreSQL LISTEN/NOTIFY, MongoDB change streams, a polled table
 * on MySQL). A store without it: consumers on other processes notice jobs by polling alone.
 */
export interface StoreNotifier {
  /**
   * Sends a short text message (under 7,000 characters) to every listener on this store. The queue server
   * sends job names, to say jobs became ready, lists of finished job ids, and word that it has result
   * requests waiting.
   */
  publish(message: string): Promise<void>;
  /**
   * Calls `listener` with each message as processes publish them, and with `'*'` after a reconnect, when
   * messages may have been missed; resolves to an unsubscribe function.
   */
  subscribe(listener: (name: string) => void): Promise<() => Promise<void>>;
}

/** A notifier a store owns: closed with the store, before its connections end. */
export interface ClosableNotifier extends StoreNotifier {
  close(): Promise<void>;
}
