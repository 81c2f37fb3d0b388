import type { Collection } from 'mongodb';
import type { SweptLease } from '../../engine/store.ts';
import type { JobError } from '../../jobs.ts';
import { appendedErrors, cleanError, type JobDocument, literal } from './documents.ts';
import { ENDED_LEASE } from './leases.ts';

/**
 * `Store.requeueExpiredLeases`: the expired leases are read, then two updates, each limited to them and still
 * matching expiry, make those with no attempts left dead and the rest waiting again, each recording `error`
 * with the job's attempt. What the updates changed is read back by the mark they left (this sweep's time and
 * error code), so that a lease acked between the read and the updates is not reported.
 */
export async function requeueExpiredLeases(
  jobs: Collection<JobDocument>,
  now: Date,
  error: Omit<JobError, 'attempt'>,
): Promise<SweptLease[]> {
  const expired = { state: 'active' as const, leaseExpiresAt: { $lte: now } };
  const found = await jobs.find(expired, { projection: { _id: 1 } }).toArray();
  if (found.length === 0) return [];
  const ids = found.map((job) => job._id);
  const lostLease = cleanError({ ...error, attempt: 0 });
  const recorded = { $mergeObjects: [literal(lostLease), { attempt: '$attempts' }] };
  const errors = appendedErrors(recorded);
  const ofFound = { _id: { $in: ids }, ...expired };
  await jobs.updateMany({ ...ofFound, $expr: { $gte: ['$attempts', '$maxAttempts'] } }, [
    { $set: { ...ENDED_LEASE, state: 'dead', error: recorded, errors, finishedAt: now, updatedAt: now } },
  ]);
  await jobs.updateMany({ ...ofFound, $expr: { $lt: ['$attempts', '$maxAttempts'] } }, [
    { $set: { ...ENDED_LEASE, state: 'waiting', error: recorded, errors, workerId: null, updatedAt: now } },
  ]);
  const swept = await jobs
    .find(
      { _id: { $in: ids }, updatedAt: now, 'error.code': error.code ?? null, leaseToken: null },
      { projection: { _id: 1, name: 1, version: 1, attempts: 1, state: 1 } },
    )
    .toArray();
  return swept.map((job) => ({
    id: job._id,
    name: job.name,
    version: job.version,
    attempt: job.attempts,
    dead: job.state === 'dead',
  }));
}
