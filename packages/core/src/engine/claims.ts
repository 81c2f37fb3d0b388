import { MAX_BATCH_SIZE, type TraceContext } from '../jobs.ts';
import { newLeaseToken } from './ids.ts';
import { checkLeaseMs } from './input-checks.ts';
import type { ClaimedRecord, ClaimRequest } from './store.ts';
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
  progress: number;
  /** When the job became due (epoch ms): how long it waited ready is the claim's time less this. */
  runAtMs: number;
  /** The trace context the job was created in, when it has one. */
  traceContext?: TraceContext;
  /** Set on a parent that has had children (a flow's, or its own `waitForChildren`'s): it runs after them. */
  resumed?: true;
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
  if (job.childCount) claimed.resumed = true;
  return claimed;
}
