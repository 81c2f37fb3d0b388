/**
 * Flow control on MongoDB: a settings document per job type, and the limited claim (see `FlowControlStore`).
 * A limited claim holds its type's settings document by a claim lock (a token with an expiry, set and cleared
 * by single-document writes), so the limited claims of one type run one at a time without a transaction.
 */
import type { Collection } from 'mongodb';
import { newLeaseToken } from '../../engine/ids.ts';
import type { ClaimRequest, LimitedClaim, QueueSettings, QueueSettingsChange } from '../../engine/store.ts';
import { WorkqError } from '../../errors.ts';
import { claimUnderSettings, type FlowState } from '../shared/limited-claim.ts';
import { claimJobs, leaseUpdate, promoteDueJobs } from './claim-jobs.ts';
import { CLAIM_SORT, type JobDocument, toJobRecord } from './documents.ts';
import { GROUP_INDEX } from './indexes.ts';

/** A job type's settings, keyed by its name. */
export interface QueueSettingsDocument {
  _id: string;
  paused: boolean;
  concurrency: number | null;
  rateLimit: { max: number; perMs: number } | null;
  groupConcurrency: number | null;
  grouped: boolean;
  /** See `FlowState.recentStarts`. */
  recentStarts: number[];
  lastTurn: number;
  updatedAt: Date;
  /** Held by the limited claim running for the type, until `until` (by the claims' clocks) at the latest. */
  claimLock: { token: string; until: Date } | null;
}

/** The last turn of one group of a type; `_id` is `JSON.stringify([name, group])`. */
export interface QueueGroupDocument {
  _id: string;
  name: string;
  group: string;
  lastTurn: number;
}

/** How long a claim lock holds if its claim never clears it (its process died mid-claim). */
const CLAIM_LOCK_MS = 10_000;
/** How long a limited claim waits for its type's claim lock, in pauses of a few milliseconds, before giving up. */
const CLAIM_LOCK_TRIES = 2_000;

function toSettings(doc: QueueSettingsDocument): QueueSettings {
  return {
    name: doc._id,
    paused: doc.paused,
    concurrency: doc.concurrency,
    rateLimit: doc.rateLimit,
    groupConcurrency: doc.groupConcurrency,
    grouped: doc.grouped,
    updatedAt: doc.updatedAt,
  };
}

/** See `FlowControlStore.listQueueSettings`. */
export async function listQueueSettings(
  settings: Collection<QueueSettingsDocument>,
  name?: string,
): Promise<QueueSettings[]> {
  const docs = await settings.find(name === undefined ? {} : { _id: name }, { sort: { _id: 1 } }).toArray();
  return docs.map((doc) => toSettings(doc as QueueSettingsDocument));
}

/** See `FlowControlStore.updateQueueSettings`: one upsert. */
export async function updateQueueSettings(
  settings: Collection<QueueSettingsDocument>,
  name: string,
  change: QueueSettingsChange,
  now: Date,
): Promise<QueueSettings> {
  const set: Partial<QueueSettingsDocument> = { updatedAt: now };
  const defaults: Partial<QueueSettingsDocument> = {
    paused: false,
    concurrency: null,
    rateLimit: null,
    groupConcurrency: null,
    grouped: false,
    recentStarts: [],
    lastTurn: 0,
    claimLock: null,
  };
  if (change.paused !== undefined) set.paused = change.paused;
  if (change.concurrency !== undefined) set.concurrency = change.concurrency;
  if (change.rateLimit !== undefined) {
    set.rateLimit = change.rateLimit === null ? null : { max: change.rateLimit.max, perMs: change.rateLimit.perMs };
  }
  if (change.groupConcurrency !== undefined) set.groupConcurrency = change.groupConcurrency;
  if (change.grouped) set.grouped = true;
  for (const key of Object.keys(set)) delete defaults[key as keyof QueueSettingsDocument];
  const doc = await settings.findOneAndUpdate(
    { _id: name },
    { $set: set, $setOnInsert: defaults },
    { upsert: true, returnDocument: 'after' },
  );
  return toSettings(doc as QueueSettingsDocument);
}

/** The collections a limited claim reads and writes. */
export interface FlowCollections {
  jobs: Collection<JobDocument>;
  settings: Collection<QueueSettingsDocument>;
  groups: Collection<QueueGroupDocument>;
}

/**
 * Takes the type's claim lock, resolving to its settings, or to `null` when the type has none; waits while
 * another limited claim of the type holds it.
 */
async function lockSettings(
  c: FlowCollections,
  name: string,
  token: string,
  now: Date,
): Promise<QueueSettingsDocument | null> {
  const free = { $or: [{ claimLock: null }, { 'claimLock.until': { $lte: now } }] };
  const lock = { claimLock: { token, until: new Date(now.getTime() + CLAIM_LOCK_MS) } };
  for (let tries = 0; tries < CLAIM_LOCK_TRIES; tries++) {
    const doc = await c.settings.findOneAndUpdate({ _id: name, ...free }, { $set: lock }, { returnDocument: 'after' });
    if (doc) return doc as QueueSettingsDocument;
    if (!(await c.settings.findOne({ _id: name }, { projection: { _id: 1 } }))) return null;
    await new Promise((resolve) => setTimeout(resolve, 1 + Math.random() * 3));
  }
  throw new WorkqError(
    'UNAVAILABLE',
    `Limited claims of "${name}" waited too long for each other; retry (a claim that died holding the type releases it after ${CLAIM_LOCK_MS} ms).`,
  );
}

function toFlowState(doc: QueueSettingsDocument): FlowState {
  return { ...toSettings(doc), recentStarts: doc.recentStarts ?? [], lastTurn: doc.lastTurn ?? 0 };
}

const groupRef = (name: string, group: string) => JSON.stringify([name, group]);

/** The number of `active` jobs of each group of the type (groups with none are left out). */
async function countActiveByGroup(c: FlowCollections, name: string): Promise<Map<string, number>> {
  const active = await c.jobs
    .find({ name, state: 'active', group: { $type: 'string' } }, { projection: { group: 1 } })
    .toArray();
  const counts = new Map<string, number>();
  for (const job of active) counts.set(job.group as string, (counts.get(job.group as string) ?? 0) + 1);
  return counts;
}

/** See `FlowControlStore.claimLimitedJobs`. */
export async function claimLimitedJobs(c: FlowCollections, request: ClaimRequest): Promise<LimitedClaim> {
  const { name, now } = request;
  const token = newLeaseToken();
  const doc = await lockSettings(c, name, token, now);
  if (!doc) return { jobs: await claimJobs(c.jobs, request), paused: false, nextStartAt: null };
  const held = { _id: name, 'claimLock.token': token };
  const ready = {
    state: 'waiting' as const,
    name,
    runAt: { $lte: now },
    version: { $gte: request.minVersion, $lte: request.maxVersion },
  };
  try {
    return await claimUnderSettings(request, toFlowState(doc), {
      countActive: async () =>
        (await c.jobs.find({ name, state: 'active' }, { projection: { _id: 1 } }).toArray()).length,
      readyGroups: async (countActive) => {
        // A claim of nothing moves the type's due delayed jobs into the claim index first, as a claim does.
        await promoteDueJobs(c.jobs, name, now);
        const found = await c.jobs
          .aggregate<{ _id: string }>([
            { $match: { state: 'waiting', name, group: { $type: 'string' } } },
            { $group: { _id: '$group' } },
          ])
          .toArray();
        const groups = found.map((g) => g._id);
        const turns = await c.groups.find({ _id: { $in: groups.map((g) => groupRef(name, g)) } }).toArray();
        const turnOf = new Map(turns.map((t) => [t.group, t.lastTurn]));
        const active = countActive ? await countActiveByGroup(c, name) : new Map<string, number>();
        return groups.map((group) => ({ group, lastTurn: turnOf.get(group) ?? null, active: active.get(group) ?? 0 }));
      },
      candidates: async (groups) => {
        const byGroup = new Map<string, string[]>();
        for (const { group, cap } of groups) {
          const docs = await c.jobs
            .find(
              // The filter names the index's partial condition (`$type`) so the server may use it.
              { ...ready, group: { $type: 'string', $eq: group } },
              { sort: CLAIM_SORT, limit: cap, projection: { _id: 1 }, hint: GROUP_INDEX },
            )
            .toArray();
          byGroup.set(
            group,
            docs.map((d) => d._id),
          );
        }
        return byGroup;
      },
      lease: async (ids) => {
        // Each job is leased only if still ready; no other limited claim of the type runs meanwhile.
        const lease = leaseUpdate(request);
        await c.jobs.bulkWrite(
          ids.map((_id) => ({ updateOne: { filter: { ...ready, _id }, update: lease } })),
          { ordered: false },
        );
        const leased = await c.jobs
          .find({ _id: { $in: [...ids] }, leaseToken: request.leaseToken, state: 'active' })
          .toArray();
        const byId = new Map(leased.map((job) => [job._id, toJobRecord(job as JobDocument)]));
        return ids.flatMap((id) => byId.get(id) ?? []);
      },
      claimInOrder: (limit) => claimJobs(c.jobs, { ...request, limit }),
      save: async ({ recentStarts, lastTurn, groupTurns }) => {
        await c.settings.updateOne(held, { $set: { recentStarts, lastTurn } });
        if (groupTurns.size === 0) return;
        await c.groups.bulkWrite(
          [...groupTurns].map(([group, turn]) => ({
            updateOne: {
              filter: { _id: groupRef(name, group) },
              update: { $set: { name, group, lastTurn: turn } },
              upsert: true,
            },
          })),
          { ordered: false },
        );
      },
    });
  } finally {
    await c.settings.updateOne(held, { $set: { claimLock: null } });
  }
}
