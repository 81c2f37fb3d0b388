import type { ClientSession, UpdateFilter } from 'mongodb';
import { type ClaimedRecord, type ClaimRequest, NO_GROUP } from '../../engine/store.ts';
import type { LimitedClaimSteps } from '../shared/limited-claim.ts';
import { withCallLimit } from './call-limit.ts';
import { leaseUpdate, versionsOf } from './claim-jobs.ts';
import type { FlowCollections, QueueSettingsDocument } from './flow-documents.ts';
import { CLAIM_INDEX, GROUP_INDEX, HELD_INDEXES, heldFilter } from './indexes.ts';
import type { RateBuckets } from './rate-buckets.ts';
import { CLAIM_SORT, type JobDocument, toJobRecord } from './records.ts';

const groupRef = (name: string, group: string) => JSON.stringify([name, group]);

/** The fenced transaction a limited claim's steps run in: its session, and the signal that abandons it. */
export interface ClaimTransaction {
  session: ClientSession;
  signal: AbortSignal;
}

/** What a step's call to the server adds to its options: the transaction's session and signal, or a signal. */
type CallOptions = { session?: ClientSession; signal: AbortSignal };

/** One call of a step to the server, given its options (see `claimSteps`). */
type StepCall = <T>(call: (options: CallOptions) => Promise<T>) => Promise<T>;

/**
 * The steps of a limited claim (see `LimitedClaimSteps`), each one round trip. In the fenced transaction
 * (`transaction`) they read and write as no other claim of the type runs meanwhile. Without one (a type that only
 * takes turns, see `claimLimitedJobs`) other claims run beside them: a job is leased only if still ready, and
 * turns are raised to at least what the claim took (`$max`), so that concurrent claims never move them back.
 * In the transaction every call takes its session and signal (the transaction is one call, see
 * `runTransaction`); without one each call is abandoned on its own after the store's limit (`withCallLimit`).
 */
export function claimSteps(
  c: FlowCollections,
  request: ClaimRequest,
  transaction: ClaimTransaction | undefined,
  rate: RateBuckets,
): LimitedClaimSteps {
  const { name, now } = request;
  const call: StepCall = (run) =>
    transaction ? run(transaction) : withCallLimit(c.limitMs, (signal) => run({ signal }));
  // The versions listed one by one where the range is short, so the claim and group indexes give each
  // version's jobs in claim order and the server merges them (see `versionsOf`).
  const ready = {
    state: 'waiting' as const,
    name,
    runAt: { $lte: now },
    version: versionsOf(request) ?? { $in: [] },
  };
  /** Leases the jobs with these ids that are still ready, and reads them back in this order. */
  const lease = async (ids: readonly string[]): Promise<ClaimedRecord[]> => {
    if (ids.length === 0) return [];
    const update = leaseUpdate(request);
    await call((options) =>
      c.jobs.bulkWrite(
        ids.map((_id) => ({ updateOne: { filter: { ...ready, _id }, update } })),
        { ordered: false, ...options },
      ),
    );
    const leased = await call((options) =>
      c.jobs.find({ _id: { $in: [...ids] }, name, leaseToken: request.leaseToken, state: 'active' }, options).toArray(),
    );
    const byId = new Map(leased.map((job) => [job._id, toJobRecord(job as JobDocument)]));
    return ids.flatMap((id) => byId.get(id) ?? []);
  };
  return {
    countActive: async () => {
      const [counted] = await call((options) =>
        c.jobs.aggregate<{ n: number }>([{ $match: { name, state: 'active' } }, { $count: 'n' }], options).toArray(),
      );
      return counted?.n ?? 0;
    },
    readyGroups: async (countActive) => {
      const found = await call((options) =>
        c.jobs
          .aggregate<{ _id: string }>(
            [{ $match: { state: 'waiting', name, group: { $type: 'string' } } }, { $group: { _id: '$group' } }],
            options,
          )
          .toArray(),
      );
      const groups = found.map((g) => g._id);
      const refs = groups.map((g) => groupRef(name, g));
      const turns = await call((options) => c.groups.find({ _id: { $in: refs } }, options).toArray());
      const turnOf = new Map(turns.map((t) => [t.group, t.lastTurn]));
      const active = countActive ? await countActiveByGroup(c, name, call) : new Map<string, number>();
      return groups.map((group) => ({ group, lastTurn: turnOf.get(group) ?? null, active: active.get(group) ?? 0 }));
    },
    candidates: async (groups) => {
      const byGroup = new Map<string, string[]>();
      for (const { group, cap } of groups) {
        const docs = await call((options) =>
          c.jobs
            .find(
              // The filter names the index's partial condition (`$type`) so the server may use it.
              { ...ready, group: { $type: 'string', $eq: group } },
              { sort: CLAIM_SORT, limit: cap, projection: { _id: 1 }, hint: GROUP_INDEX, ...options },
            )
            .toArray(),
        );
        byGroup.set(
          group,
          docs.map((d) => d._id),
        );
      }
      return byGroup;
    },
    heldGroups: async () => {
      const held = new Map<string, string | null>();
      for (const state of ['delayed', 'waiting'] as const) {
        const docs = await call((options) =>
          c.jobs
            .find(
              { ...heldFilter(state), name },
              { projection: { _id: 1, group: 1, runAt: 1, version: 1 }, hint: HELD_INDEXES[state], ...options },
            )
            .toArray(),
        );
        for (const doc of docs) {
          const group = doc.group as string;
          if (group === NO_GROUP) continue;
          const takes =
            state === 'waiting' &&
            doc.runAt <= now &&
            doc.version >= request.minVersion &&
            doc.version <= request.maxVersion;
          if (!held.get(group)) held.set(group, takes ? doc._id : null);
        }
      }
      return held;
    },
    lease,
    claimInOrder: async (limit) => {
      const candidates = await call((options) =>
        c.jobs
          .find(ready, { sort: CLAIM_SORT, limit, projection: { _id: 1 }, hint: CLAIM_INDEX, ...options })
          .toArray(),
      );
      return lease(candidates.map((doc) => doc._id));
    },
    rate,
    save: async ({ lastTurn, groupTurns }) => {
      const state: UpdateFilter<QueueSettingsDocument> = transaction
        ? { $set: { rateBuckets: rate.state, lastTurn }, $unset: { recentStarts: '' } }
        : { $max: { lastTurn } };
      await call((options) => c.settings.updateOne({ _id: name }, state, { ...options }));
      if (groupTurns.size === 0) return;
      const turns = [...groupTurns].map(([group, turn]) => ({
        updateOne: {
          filter: { _id: groupRef(name, group) },
          update: transaction
            ? { $set: { name, group, lastTurn: turn } }
            : { $set: { name, group }, $max: { lastTurn: turn } },
          upsert: true,
        },
      }));
      await call((options) => c.groups.bulkWrite(turns, { ordered: false, ...options }));
    },
  };
}

/** The number of `active` jobs of each group of the type (groups with none are left out). */
async function countActiveByGroup(c: FlowCollections, name: string, call: StepCall): Promise<Map<string, number>> {
  const counted = await call((options) =>
    c.jobs
      .aggregate<{ _id: string; n: number }>(
        [
          { $match: { name, state: 'active', group: { $type: 'string' } } },
          { $group: { _id: '$group', n: { $sum: 1 } } },
        ],
        options,
      )
      .toArray(),
  );
  return new Map(counted.map((g) => [g._id, g.n]));
}
