import type { Collection, Filter } from 'mongodb';
import type { ClaimRequest, JobRecord } from '../../engine/store.ts';
import { CLAIM_SORT, type JobDocument, literal, toJobRecord } from './documents.ts';
import { CLAIM_INDEX, DELAYED_INDEX } from './indexes.ts';

/** Rounds of a claim that lost candidates to competing claims before it settles for fewer jobs. */
const MAX_ROUNDS = 8;

/**
 * The widest version range a claim names version by version, so the claim
 * index gives each version's jobs in claim order and the server merges them.
 * A wider range is read as a range and sorted in memory.
 */
const MAX_LISTED_VERSIONS = 64;

/** The versions a claim reads, as a condition the claim index serves; `null` when the range is empty. */
function versionsOf(request: ClaimRequest): Filter<JobDocument>['version'] | null {
  const from = Math.ceil(Number(request.minVersion));
  const to = Math.floor(Number(request.maxVersion));
  if (!(from <= to)) return null;
  if (to - from >= MAX_LISTED_VERSIONS) return { $gte: from, $lte: to };
  return { $in: Array.from({ length: to - from + 1 }, (_, i) => from + i) };
}

/**
 * The random-token batch claim. It first moves the name's due delayed jobs
 * into the claim index (see `NOT_STARTED` in stores/shared/not-started.ts). Each round
 * then reads up to the missing number of candidate ids along the claim index, of
 * the versions the claim reads,
 * and leases them with one `updateMany` whose filter re-checks every claim
 * condition, so each job flips to `active` atomically and at most one claim
 * wins it. Candidates taken by a competing claim meanwhile are simply not
 * updated; the next round looks further. The leased jobs are read back by
 * their token.
 */
export async function claimJobs(jobs: Collection<JobDocument>, request: ClaimRequest): Promise<JobRecord[]> {
  const limit = Math.floor(request.limit);
  const version = versionsOf(request);
  if (!(limit > 0) || version === null) return [];
  const ready = { state: 'waiting' as const, name: String(request.name), version, runAt: { $lte: request.now } };
  const leaseExpiresAt =
    request.leaseMs === null ? { $add: [request.now, '$leaseMs'] } : new Date(request.now.getTime() + request.leaseMs);
  const lease = [
    {
      $set: {
        state: 'active',
        leaseToken: literal(String(request.leaseToken)),
        leaseExpiresAt,
        workerId: literal(String(request.workerId)),
        attempts: { $add: ['$attempts', 1] },
        updatedAt: request.now,
      },
    },
  ];

  await jobs.updateMany(
    { state: 'delayed', name: ready.name, runAt: { $lte: request.now } },
    { $set: { state: 'waiting' } },
    { hint: DELAYED_INDEX },
  );
  const tried: string[] = [];
  let leased = 0;
  for (let round = 0; round < MAX_ROUNDS && leased < limit; round++) {
    const candidates = await jobs
      .find(ready, { sort: CLAIM_SORT, limit: limit - leased, projection: { _id: 1 }, hint: CLAIM_INDEX })
      .toArray();
    if (candidates.length === 0) break;
    const ids = candidates.map((doc) => doc._id);
    tried.push(...ids);
    const { modifiedCount } = await jobs.updateMany({ ...ready, _id: { $in: ids } }, lease);
    leased += modifiedCount;
    if (modifiedCount === candidates.length) break;
  }
  if (leased === 0) return [];
  const claimed = await jobs
    .find({ _id: { $in: tried }, leaseToken: String(request.leaseToken), state: 'active' }, { sort: CLAIM_SORT })
    .toArray();
  return claimed.map((doc) => toJobRecord(doc as JobDocument));
}
