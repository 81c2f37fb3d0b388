import { setTimeout as sleep } from 'node:timers/promises';
import type { Collection, Filter, UpdateOptions } from 'mongodb';
import type { LeaseRef } from '../../engine/store.ts';
import { LEASE_TOKEN_MAX_CHARS } from '../../jobs.ts';
import { type Abortable, withCallLimit } from './call-limit.ts';
import { isTransient } from './errors.ts';
import { type JobDocument, stringOrNull } from './records.ts';

/** The fields that end a job's lease. */
export const ENDED_LEASE = { leaseToken: null, leaseExpiresAt: null };

/** What ends the engine's part of a lease token and begins the job type: in neither an engine token nor a job name. */
const TYPE_MARK = '@';

/**
 * The token this store leases a claim's jobs under, and hands out: the
 * engine's token, `@`, and the job type. The engine hands a fenced operation
 * a lease as job id and token only; the type read back from the token
 * (`heldBy`) lets each fenced write name the shard key (`{ name: 1 }`), so
 * it goes to the one shard holding the job instead of to every shard.
 */
export function typedLeaseToken(request: { name: string; leaseToken: string }): string {
  return `${request.leaseToken}${TYPE_MARK}${request.name}`;
}

/**
 * The job type a lease token names (see `typedLeaseToken`). `null` for a
 * token this store did not issue: longer than `LEASE_TOKEN_MAX_CHARS`, or
 * without a type. Tokens come from clients; a forged one names some type and
 * still matches no job, since the whole token must equal the stored one.
 */
function typeOfToken(token: string): string | null {
  if (token.length > LEASE_TOKEN_MAX_CHARS) return null;
  const mark = token.lastIndexOf(TYPE_MARK);
  return mark > 0 && mark < token.length - 1 ? token.slice(mark + 1) : null;
}

/**
 * The filter of a fenced operation: the job is held by this unexpired lease.
 * It names the job's type, read from the token; `null` (no job can match)
 * for a lease this store did not issue.
 */
export function heldBy(lease: LeaseRef, now: Date): Filter<JobDocument> | null {
  const id = stringOrNull(lease.id);
  const token = stringOrNull(lease.leaseToken);
  const name = token === null ? null : typeOfToken(token);
  if (id === null || token === null || name === null) return null;
  return { _id: id, name, leaseToken: token, state: 'active', leaseExpiresAt: { $gt: now } };
}

/** The first pause between two tries of a give-back; each later one doubles, up to `GIVE_BACK_MAX_PAUSE_MS`. */
const GIVE_BACK_FIRST_PAUSE_MS = 100;
const GIVE_BACK_MAX_PAUSE_MS = 2_000;

/**
 * Gives back every job of `name` leased under `token`, as if not claimed:
 * what a claim does when it cannot answer with the jobs it leased. Repeating
 * it changes nothing more, so it is tried again after each transient failure
 * (a failover: no primary, a lost connection, a step-down) until `leaseMs`
 * has passed, when the leases would have expired and the sweep takes the
 * jobs back anyway. Other failures are the caller's to report; a give-back
 * that still fails is not reported, since the claim's own error is. Each try is abandoned after `limitMs`
 * (see `withCallLimit`), and tried again like a lost connection.
 */
export async function giveBackLeases(
  jobs: Collection<JobDocument>,
  lease: { name: string; token: string; now: Date; leaseMs: number },
  limitMs: number,
): Promise<void> {
  const deadline = Date.now() + lease.leaseMs;
  for (let pause = GIVE_BACK_FIRST_PAUSE_MS; ; pause = Math.min(pause * 2, GIVE_BACK_MAX_PAUSE_MS)) {
    try {
      await withCallLimit(limitMs, (signal) => {
        const options: Abortable<UpdateOptions> = { signal };
        return jobs.updateMany(
          { name: lease.name, state: 'active', leaseToken: lease.token },
          {
            $set: { ...ENDED_LEASE, state: 'waiting', workerId: null, updatedAt: lease.now },
            $inc: { attempts: -1 },
          },
          options,
        );
      });
      return;
    } catch (error) {
      const left = deadline - Date.now();
      if (!isTransient(error) || left <= 0) return;
      await sleep(Math.min(pause, left));
    }
  }
}
