import type {
  AnyBulkWriteOperation,
  BulkWriteOptions,
  Collection,
  Filter,
  FindOneAndUpdateOptions,
  UpdateOptions,
} from 'mongodb';
import { ENGINE_JOB_DEFAULTS } from '../../engine/options.ts';
import type { ClaimRequest, JobRecord } from '../../engine/store.ts';
import { type Abortable, withCallLimit } from './call-limit.ts';
import { CLAIM_INDEX, CLAIM_INDEX_KEY, DELAYED_INDEX } from './indexes.ts';
import { giveBackLeases } from './leases.ts';
import { CLAIM_SORT, type JobDocument, literal, toJobRecord } from './records.ts';

/** Rounds of a batch claim that lost candidates to competing claims before it leases one job at a time. */
const MAX_ROUNDS = 4;

/**
 * The widest version range a claim names version by version, so the claim
 * index gives each version's jobs in claim order and the server merges them.
 * A wider range is read as a range and sorted in memory.
 */
const MAX_LISTED_VERSIONS = 64;

/** The versions a claim reads, as a condition the claim index serves; `null` when the range is empty. */
export function versionsOf(request: ClaimRequest): Filter<JobDocument>['version'] | null {
  const from = Math.ceil(Number(request.minVersion));
  const to = Math.floor(Number(request.maxVersion));
  if (!(from <= to)) return null;
  if (to - from >= MAX_LISTED_VERSIONS) return { $gte: from, $lte: to };
  return { $in: Array.from({ length: to - from + 1 }, (_, i) => from + i) };
}

/**
 * The random-token batch claim. It first moves the name's delayed jobs that
 * came due into the claim index (see `NOT_STARTED` in stores/shared/not-started.ts),
 * a bounded batch, writing only when its look-up finds one (`promoteDueJobs`). Each round then reads up to the
 * missing number of candidate ids along the claim index, and leases them
 * with one `bulkWrite` of `updateOne`s whose filters re-check every claim
 * condition, so each job flips to `active` atomically and at most one claim
 * wins it; being single-document writes, the driver retries them after a
 * failover, and the server applies each once. Candidates a competing claim
 * took meanwhile are not updated; the next round looks further. After
 * `MAX_ROUNDS` rounds that lost candidates, the claim leases one job at a
 * time with `findOneAndUpdate`, which cannot lose a job to another claim, so
 * a claim never answers empty while a job it could take is ready. The
 * leased jobs are read back by their token. If a write or the read-back
 * fails, the jobs leased under the token are given back before the error
 * is reported (through a failover too, see `giveBackLeases`; with each
 * job's own lease, for the engine's default lease), so none stays leased to
 * a claim that was never answered. Each call to the server is abandoned after `limitMs` (see
 * `withCallLimit`).
 */
export async function claimJobs(
  jobs: Collection<JobDocument>,
  request: ClaimRequest,
  limitMs: number,
): Promise<JobRecord[]> {
  await promoteDueJobs(jobs, String(request.name), request.now, limitMs);
  return claimReadyJobs(jobs, request, limitMs);
}

/** `claimJobs` once the name's due jobs have been promoted: the rounds, the read-back and the give-back. */
export async function claimReadyJobs(
  jobs: Collection<JobDocument>,
  request: ClaimRequest,
  limitMs: number,
): Promise<JobRecord[]> {
  const limit = Math.floor(request.limit);
  const version = versionsOf(request);
  if (!(limit > 0) || version === null) return [];
  const name = String(request.name);
  const token = String(request.leaseToken);
  const ready = { state: 'waiting' as const, name, version, runAt: { $lte: request.now } };
  try {
    const leased = await leaseReadyJobs(jobs, request, ready, limit, limitMs);
    if (leased.length === 0) return [];
    const mine = { _id: { $in: leased }, name, leaseToken: token, state: 'active' as const };
    const claimed = await withCallLimit(limitMs, (signal) => jobs.find(mine, { sort: CLAIM_SORT, signal }).toArray());
    return claimed.map((doc) => toJobRecord(doc as JobDocument));
  } catch (error) {
    const leaseMs = request.leaseMs ?? ENGINE_JOB_DEFAULTS.leaseMs;
    await giveBackLeases(jobs, { name, token, now: request.now, leaseMs }, limitMs);
    throw error;
  }
}

/** The most delayed jobs one update of a promotion moves into the claim index. */
export const PROMOTION_BATCH = 1_000;

/** The promotion running for each job name, by the jobs collection of the store running it. */
const promoting = new WeakMap<Collection<JobDocument>, Map<string, Promise<void>>>();

/**
 * Moves the delayed jobs of `name` due at `now` to `waiting`, in batches of
 * at most `PROMOTION_BATCH`, those due first: a look-up of their ids, then
 * one update of those ids (through the `_id` index, so it reads no more than
 * it writes), until a look-up finds fewer; a claim with none due writes
 * nothing. Every due job is moved before the claim reads, since one due
 * last may come first by priority; each command stays bounded. The claims
 * of one store share the promotion running for their name rather than each
 * repeating it. Claims on other servers may run theirs meanwhile: each is
 * bounded, and a job moves once (the update re-checks `delayed`); a
 * cross-server lock would add two majority writes to every promoting claim
 * to save one bounded update.
 */
export function promoteDueJobs(jobs: Collection<JobDocument>, name: string, now: Date, limitMs: number): Promise<void> {
  let byName = promoting.get(jobs);
  if (!byName) {
    byName = new Map();
    promoting.set(jobs, byName);
  }
  const running = byName.get(name);
  if (running) return running;
  const promotion = promoteBatches(jobs, name, now, limitMs).finally(() => byName.delete(name));
  byName.set(name, promotion);
  return promotion;
}

async function promoteBatches(jobs: Collection<JobDocument>, name: string, now: Date, limitMs: number): Promise<void> {
  const due = { state: 'delayed' as const, name, runAt: { $lte: now } };
  for (;;) {
    const found = await withCallLimit(limitMs, (signal) =>
      jobs
        .find(due, { projection: { _id: 1 }, sort: { runAt: 1 }, limit: PROMOTION_BATCH, hint: DELAYED_INDEX, signal })
        .toArray(),
    );
    if (found.length === 0) return;
    const dueFound = { ...due, _id: { $in: found.map((job) => job._id) } };
    await withCallLimit(limitMs, (signal) => {
      const options: Abortable<UpdateOptions> = { signal };
      return jobs.updateMany(dueFound, { $set: { state: 'waiting' } }, options);
    });
    if (found.length < PROMOTION_BATCH) return;
  }
}

/** Leases up to `limit` jobs matching `ready`; resolves to the ids it may have leased (the read-back decides). */
async function leaseReadyJobs(
  jobs: Collection<JobDocument>,
  request: ClaimRequest,
  ready: Filter<JobDocument>,
  limit: number,
  limitMs: number,
): Promise<string[]> {
  const lease = leaseUpdate(request);
  const tried: string[] = [];
  let leased = 0;
  let lost = false;
  for (let round = 0; round < MAX_ROUNDS && leased < limit; round++) {
    const missing = limit - leased;
    const candidates = await withCallLimit(limitMs, (signal) =>
      jobs
        .find(ready, { sort: CLAIM_SORT, limit: missing, projection: { _id: 1 }, hint: CLAIM_INDEX, signal })
        .toArray(),
    );
    const ids = candidates.map((doc) => doc._id);
    if (ids.length === 0) return tried;
    tried.push(...ids);
    const writes: AnyBulkWriteOperation<JobDocument>[] = ids.map((_id) => ({
      updateOne: { filter: { ...ready, _id }, update: lease },
    }));
    const { modifiedCount } = await withCallLimit(limitMs, (signal) => {
      const options: Abortable<BulkWriteOptions> = { ordered: false, signal };
      return jobs.bulkWrite(writes, options);
    });
    leased += modifiedCount;
    lost = modifiedCount < ids.length;
    if (!lost) return tried;
  }
  // Competing claims took every round's candidates: one job at a time, each leased atomically where it is found.
  while (lost && leased < limit) {
    const doc = await withCallLimit(limitMs, (signal) => {
      const options: Abortable<FindOneAndUpdateOptions> = {
        sort: CLAIM_SORT,
        hint: CLAIM_INDEX_KEY,
        projection: { _id: 1 },
        signal,
      };
      return jobs.findOneAndUpdate(ready, lease, options);
    });
    if (!doc) break;
    tried.push(doc._id);
    leased += 1;
  }
  return tried;
}

/**
 * The update pipeline that leases a job to a claim. A job with a time limit gets its attempt's deadline (now +
 * `timeoutMs`) and a lease that ends no later; on one without, the deadline is `null` (`$add` of a missing
 * field) and `$min` skips it.
 */
export function leaseUpdate(request: ClaimRequest): Record<string, unknown>[] {
  const leaseEnd =
    request.leaseMs === null ? { $add: [request.now, '$leaseMs'] } : new Date(request.now.getTime() + request.leaseMs);
  const attemptDeadline = { $add: [request.now, '$timeoutMs'] };
  return [
    {
      $set: {
        state: 'active',
        leaseToken: literal(String(request.leaseToken)),
        attemptDeadline,
        leaseExpiresAt: { $min: [leaseEnd, attemptDeadline] },
        workerId: literal(String(request.workerId)),
        attempts: { $add: ['$attempts', 1] },
        updatedAt: request.now,
      },
    },
  ];
}
