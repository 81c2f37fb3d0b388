import { setTimeout as sleep } from 'node:timers/promises';
import type { Collection, Filter } from 'mongodb';
import type { LeaseRef } from '../../engine/store.ts';
import { type JobDocument, stringOrNull } from './documents.ts';
import { isTransient } from './errors.ts';

/** The fields that end a job's lease. */
export const ENDED_LEASE = { leaseToken: null, leaseExpiresAt: null };

/** The filter of a fenced operation: the job is held by this unexpired lease. */
export function heldBy(lease: LeaseRef, now: Date): Filter<JobDocument> | null {
  const id = stringOrNull(lease.id);
  const token = stringOrNull(lease.leaseToken);
  if (id === null || token === null) return null;
  return { _id: id, leaseToken: token, state: 'active', leaseExpiresAt: { $gt: now } };
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
 * that still fails is not reported, since the claim's own error is.
 */
export async function giveBackLeases(
  jobs: Collection<JobDocument>,
  lease: { name: string; token: string; now: Date; leaseMs: number },
): Promise<void> {
  const deadline = Date.now() + lease.leaseMs;
  for (let pause = GIVE_BACK_FIRST_PAUSE_MS; ; pause = Math.min(pause * 2, GIVE_BACK_MAX_PAUSE_MS)) {
    try {
      await jobs.updateMany(
        { name: lease.name, state: 'active', leaseToken: lease.token },
        {
          $set: { ...ENDED_LEASE, state: 'waiting', workerId: null, updatedAt: lease.now },
          $inc: { attempts: -1 },
        },
      );
      return;
    } catch (error) {
      const left = deadline - Date.now();
      if (!isTransient(error) || left <= 0) return;
      await sleep(Math.min(pause, left));
    }
  }
}
