import type { Collection } from 'mongodb';
import type { JobError } from '../../jobs.ts';
import { cleanError, type JobDocument, literal } from './documents.ts';
import { ENDED_LEASE } from './leases.ts';

/**
 * `Store.requeueExpiredLeases`: two updates, the expired leases with no attempts left made dead first, then
 * the rest made waiting again; each records `error` with the job's attempt.
 */
export async function requeueExpiredLeases(
  jobs: Collection<JobDocument>,
  now: Date,
  error: Omit<JobError, 'attempt'>,
): Promise<{ requeued: number; dead: number }> {
  const expired = { state: 'active' as const, leaseExpiresAt: { $lte: now } };
  const lostLease = cleanError({ ...error, attempt: 0 });
  const recorded = { $mergeObjects: [literal(lostLease), { attempt: '$attempts' }] };
  const dead = await jobs.updateMany({ ...expired, $expr: { $gte: ['$attempts', '$maxAttempts'] } }, [
    { $set: { ...ENDED_LEASE, state: 'dead', error: recorded, finishedAt: now, updatedAt: now } },
  ]);
  const requeued = await jobs.updateMany({ ...expired, $expr: { $lt: ['$attempts', '$maxAttempts'] } }, [
    {
      $set: {
        ...ENDED_LEASE,
        state: 'waiting',
        error: recorded,
        workerId: null,
        updatedAt: now,
      },
    },
  ]);
  return { requeued: requeued.modifiedCount, dead: dead.modifiedCount };
}
