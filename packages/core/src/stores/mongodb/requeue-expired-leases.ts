import type { AnyBulkWriteOperation, BulkWriteOptions } from 'mongodb';
import type { SweptLease } from '../../engine/store.ts';
import { timedOutError } from '../../engine/timed-out-error.ts';
import type { JobError } from '../../jobs.ts';
import { idsByName } from './by-name.ts';
import { type Abortable, withCallLimit } from './call-limit.ts';
import { NOT_A_CHILD, sweepExpiredChildren } from './end-children.ts';
import { LEASE_INDEX } from './indexes.ts';
import { ENDED_LEASE } from './leases.ts';
import { appendedErrors, cleanError, type JobDocument, literal } from './records.ts';
import type { FlowTarget } from './settle-parents.ts';

/** The most expired leases one batch of a sweep reads and ends: its id lists stay far below the 16 MiB command limit. */
export const SWEEP_BATCH = 1_000;

/** The most batches one sweep runs; after a mass worker loss, the next sweeps take the rest. */
const MAX_SWEEP_BATCHES = 10;

/**
 * `Store.requeueExpiredLeases`, in batches of at most `SWEEP_BATCH` leases,
 * oldest deadline first along the lease index, at most `MAX_SWEEP_BATCHES` a
 * call: each batch's expired leases are read, then one `bulkWrite` of two
 * updates per job name (so each is targeted on a collection sharded by
 * name), limited to them and still matching expiry, makes those with no
 * attempts left dead and the rest waiting again, each recording `error` with
 * the job's attempt. What the updates changed is read back by the mark they
 * left (this sweep's time and error code), so that a lease acked between the
 * read and the updates is not reported. A lease acked meanwhile no longer
 * matches, so each batch reads leases no earlier batch could end.
 *
 * A lease is expired by two clocks at once: its deadline is at or before
 * `now`, the engine's time moved to the database's by the measured offset
 * (see `DatabaseClock`), which bounds the lease index's range; and before
 * the primary's own clock (`$$NOW`), which each read and update checks, so
 * no lease is swept before the primary's clock passes its deadline, however
 * wrong the offset was measured. The dead write matches jobs without a
 * parent: a child out of attempts dies in a transaction of its own with its
 * parent's settling (`sweepExpiredChildren`), the names of the parents made
 * ready going to `ready`.
 */
export async function requeueExpiredLeases(
  flow: FlowTarget,
  now: Date,
  error: Omit<JobError, 'attempt'>,
  ready: string[] = [],
): Promise<SweptLease[]> {
  const swept: SweptLease[] = [];
  for (let batch = 0; batch < MAX_SWEEP_BATCHES; batch++) {
    const { read, ended } = await sweepBatch(flow, now, error, ready);
    swept.push(...ended);
    if (read < SWEEP_BATCH) break;
  }
  return swept;
}

/** A lease whose deadline the primary's clock has passed: `$$NOW` is read once per command, on the primary. */
const LAPSED = { $lt: ['$leaseExpiresAt', '$$NOW'] };

function lapsedAnd(condition: Record<string, unknown>): Record<string, unknown> {
  return { $and: [LAPSED, condition] };
}

async function sweepBatch(
  flow: FlowTarget,
  now: Date,
  error: Omit<JobError, 'attempt'>,
  ready: string[],
): Promise<{ read: number; ended: SweptLease[] }> {
  const { jobs, limitMs } = flow;
  const expired = { state: 'active' as const, leaseExpiresAt: { $lte: now } };
  const found = await withCallLimit(limitMs, (signal) =>
    jobs
      .find(
        { ...expired, $expr: LAPSED },
        {
          projection: { _id: 1, name: 1, parentId: 1 },
          sort: { leaseExpiresAt: 1 },
          limit: SWEEP_BATCH,
          hint: LEASE_INDEX,
          signal,
        },
      )
      .toArray(),
  );
  if (found.length === 0) return { read: 0, ended: [] };
  const lostLease = cleanError({ ...error, attempt: 0 });
  const timedOut = cleanError({ ...timedOutError(error), attempt: 0 });
  // `TIMEOUT` where the lease ran out at the attempt's deadline (a `null` one is below every date: ruled out).
  const atDeadline = {
    $and: [{ $ne: [{ $ifNull: ['$attemptDeadline', null] }, null] }, { $gte: ['$leaseExpiresAt', '$attemptDeadline'] }],
  };
  const recorded = {
    $mergeObjects: [{ $cond: [atDeadline, literal(timedOut), literal(lostLease)] }, { attempt: '$attempts' }],
  };
  const errors = appendedErrors(recorded);
  const dead = [{ $set: { ...ENDED_LEASE, state: 'dead', error: recorded, errors, finishedAt: now, updatedAt: now } }];
  const waiting = [
    { $set: { ...ENDED_LEASE, state: 'waiting', error: recorded, errors, workerId: null, updatedAt: now } },
  ];
  const writes = [...idsByName(found)].flatMap(([name, ids]): AnyBulkWriteOperation<JobDocument>[] => {
    const ofFound = { name, _id: { $in: ids }, ...expired };
    return [
      {
        updateMany: {
          filter: { ...ofFound, ...NOT_A_CHILD, $expr: lapsedAnd({ $gte: ['$attempts', '$maxAttempts'] }) },
          update: dead,
        },
      },
      {
        updateMany: {
          filter: { ...ofFound, $expr: lapsedAnd({ $lt: ['$attempts', '$maxAttempts'] }) },
          update: waiting,
        },
      },
    ];
  });
  await withCallLimit(limitMs, (signal) => {
    const options: Abortable<BulkWriteOptions> = { ordered: false, signal };
    return jobs.bulkWrite(writes, options);
  });
  // Children out of attempts, which the dead write left alone, die each with its parent's settling; a batch
  // without children reads nothing more.
  const childIds = found.filter((job) => typeof job.parentId === 'string').map((job) => job._id);
  if (childIds.length > 0) {
    const outOfAttempts = { _id: { $in: childIds }, ...expired };
    const lastAttempt = { $expr: lapsedAnd({ $gte: ['$attempts', '$maxAttempts'] }) };
    ready.push(...(await sweepExpiredChildren(flow, { ...outOfAttempts, ...lastAttempt }, dead, now, childIds.length)));
  }
  const sweptNow = {
    _id: { $in: found.map((job) => job._id) },
    updatedAt: now,
    'error.code': { $in: [error.code ?? null, 'TIMEOUT'] },
    leaseToken: null,
  };
  const swept = await withCallLimit(limitMs, (signal) =>
    jobs
      .find(sweptNow, {
        projection: { _id: 1, name: 1, version: 1, attempts: 1, state: 1, parentId: 1, 'error.code': 1 },
        signal,
      })
      .toArray(),
  );
  const ended = swept.map((job) => {
    const lease: SweptLease = {
      id: job._id,
      name: job.name,
      version: job.version,
      attempt: job.attempts,
      dead: job.state === 'dead',
    };
    if (typeof job.parentId === 'string') lease.parentId = job.parentId;
    if (job.error?.code === 'TIMEOUT') lease.timedOut = true;
    return lease;
  });
  return { read: found.length, ended };
}
