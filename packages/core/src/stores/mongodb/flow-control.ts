/**
 * Flow control on MongoDB: a settings document per job type, and the limited claim (see `FlowControlStore`).
 *
 * A limited claim is one transaction whose first write bumps its type's settings document (`fence`). Two
 * claims of one type therefore write the same document: the second gets `WriteConflict` at once, waits for
 * the first to commit or abort (see `claimFenced`) and runs again, so it counts what the first leased. The fence is the server's own conflict check; no claimer's clock, lock expiry or stall can let two
 * claims overlap, so `concurrency`, `groupConcurrency` and `rateLimit` hold however slow a claimer is. The
 * leases are written in the same transaction: when anything fails before the commit (a read-back, the
 * settings' save, the claimer's connection), the transaction aborts and the jobs are as they were, ready and
 * with their attempts unspent. A commit whose outcome stays unknown for `writeTimeoutMS` (see `commitWithin`)
 * is followed by a give-back of the claim's token (see `giveBackLeases`), so no job stays leased to a claim that was never answered. A claim that leases
 * nothing aborts its transaction rather than commit it: it costs no majority write. A claim the settings as
 * read already refuse (a pause, a rate limit without room) answers without the fence. A server's own claims of a
 * type queue in the process (`inTurn`), and a type with no pause or limit, only turns between groups, is
 * claimed without the transaction (see `claimLimitedJobs`).
 */
import type { Collection, Filter, FindOneAndUpdateOptions, MongoClient, UpdateOptions } from 'mongodb';
import { breaksStrictOrder } from '../../engine/flow-control.ts';
import { ENGINE_JOB_DEFAULTS } from '../../engine/options.ts';
import type { ClaimRequest, JobRecord, LimitedClaim, QueueSettings, QueueSettingsChange } from '../../engine/store.ts';
import { WorkqError } from '../../errors.ts';
import { claimUnderSettings, type FlowState } from '../shared/limited-claim.ts';
import { type Abortable, withCallLimit } from './call-limit.ts';
import { claimJobs, claimReadyJobs, promoteDueJobs } from './claim-jobs.ts';
import { isDuplicateKeyError, isTransactionUnsupportedError, isWriteConflict } from './errors.ts';
import type { FlowCollections, QueueSettingsDocument } from './flow-documents.ts';
import { giveBackLeases } from './leases.ts';
import { claimSteps } from './limited-claim-steps.ts';
import { RateBuckets } from './rate-buckets.ts';
import { commitWithin, runTransaction } from './transactions.ts';

export type { FlowCollections, QueueGroupDocument, QueueSettingsDocument } from './flow-documents.ts';

function toSettings(doc: QueueSettingsDocument): QueueSettings {
  return {
    name: doc._id,
    paused: doc.paused,
    concurrency: doc.concurrency,
    rateLimit: doc.rateLimit,
    groupConcurrency: doc.groupConcurrency,
    groupOrder: doc.groupOrder ?? null,
    grouped: doc.grouped,
    heldUntil: doc.heldUntil ?? null,
    updatedAt: doc.updatedAt,
  };
}

/** Whether the type is held at `now` (`ctx.rateLimited`): its claims lease nothing until `heldUntil`. */
function heldAt(settings: QueueSettingsDocument, now: Date): settings is QueueSettingsDocument & { heldUntil: Date } {
  return settings.heldUntil != null && settings.heldUntil.getTime() > now.getTime();
}

/** Only what `QueueSettings` shows: every server reads the settings every few seconds, and the claims' state is not for it. */
const SETTINGS_PROJECTION = {
  paused: 1,
  concurrency: 1,
  rateLimit: 1,
  groupConcurrency: 1,
  groupOrder: 1,
  grouped: 1,
  heldUntil: 1,
  updatedAt: 1,
};

/** See `FlowControlStore.listQueueSettings`. */
export async function listQueueSettings(
  settings: Collection<QueueSettingsDocument>,
  name: string | undefined,
  limitMs: number,
): Promise<QueueSettings[]> {
  const docs = await withCallLimit(limitMs, (signal) =>
    settings
      .find(name === undefined ? {} : { _id: name }, { sort: { _id: 1 }, projection: SETTINGS_PROJECTION, signal })
      .toArray(),
  );
  return docs.map((doc) => toSettings(doc as QueueSettingsDocument));
}

/**
 * See `FlowControlStore.updateQueueSettings`: one upsert. A hold is kept in the database's time
 * (`heldUntil`, shifted as the claims' `now` is), and only grows (`$max`) until it is lifted (`null`). A change
 * of one group limit that could break strict order is the upsert of a document whose other group limit still
 * allows it (`strictOrderFilter`): none matching, it writes nothing.
 */
export async function updateQueueSettings(
  settings: Collection<QueueSettingsDocument>,
  name: string,
  change: QueueSettingsChange,
  now: Date,
  limitMs: number,
): Promise<QueueSettings | null> {
  const set: Partial<QueueSettingsDocument> = { updatedAt: now };
  const defaults: Partial<QueueSettingsDocument> = {
    paused: false,
    concurrency: null,
    rateLimit: null,
    groupConcurrency: null,
    groupOrder: null,
    grouped: false,
    lastTurn: 0,
  };
  if (change.paused !== undefined) set.paused = change.paused;
  if (change.concurrency !== undefined) set.concurrency = change.concurrency;
  if (change.rateLimit !== undefined) {
    set.rateLimit = change.rateLimit === null ? null : { max: change.rateLimit.max, perMs: change.rateLimit.perMs };
  }
  if (change.groupConcurrency !== undefined) set.groupConcurrency = change.groupConcurrency;
  if (change.groupOrder !== undefined) set.groupOrder = change.groupOrder;
  if (change.grouped) set.grouped = true;
  if (change.heldUntil === null) set.heldUntil = null;
  for (const key of Object.keys(set)) delete defaults[key as keyof QueueSettingsDocument];
  const condition = strictOrderFilter(change);
  if (condition === 'refused') return null;
  const doc = await withCallLimit(limitMs, (signal) => {
    const options: Abortable<FindOneAndUpdateOptions> = {
      upsert: condition.upsert,
      returnDocument: 'after',
      projection: SETTINGS_PROJECTION,
      signal,
    };
    const held = change.heldUntil == null ? {} : { $max: { heldUntil: change.heldUntil } };
    const filter: Filter<QueueSettingsDocument> = { ...condition.filter, _id: name };
    return settings.findOneAndUpdate(filter, { $set: set, $setOnInsert: defaults, ...held }, options);
  }).catch((error: unknown) => {
    // The upsert's insert met the stored document its filter refused.
    if (isDuplicateKeyError(error)) return null;
    throw error;
  });
  return doc ? toSettings(doc as QueueSettingsDocument) : null;
}

/**
 * What stored settings a change may apply to without breaking strict order (`breaksStrictOrder`): `'refused'`
 * when it breaks it by itself; strict order alone needs stored settings with `groupConcurrency` 1 (new ones
 * have none, so no upsert); a `groupConcurrency` other than 1 alone needs stored settings without strict order,
 * or none.
 */
function strictOrderFilter(
  change: QueueSettingsChange,
): 'refused' | { filter: Filter<QueueSettingsDocument>; upsert: boolean } {
  const { groupOrder, groupConcurrency } = change;
  if (groupOrder !== undefined && groupConcurrency !== undefined) {
    return breaksStrictOrder(null, change) ? 'refused' : { filter: {}, upsert: true };
  }
  if (groupOrder === 'strict') return { filter: { groupConcurrency: 1 }, upsert: false };
  if (groupConcurrency !== undefined && groupConcurrency !== 1) {
    return { filter: { groupOrder: { $ne: 'strict' } }, upsert: true };
  }
  return { filter: {}, upsert: true };
}

function toFlowState(doc: QueueSettingsDocument): FlowState {
  return { ...toSettings(doc), recentStarts: [], lastTurn: doc.lastTurn ?? 0 };
}

/** Whether the settings hold claims back (a pause or a limit), and so need the fence. */
function holdsBack(settings: QueueSettingsDocument): boolean {
  const { paused, concurrency, rateLimit, groupConcurrency, groupOrder } = settings;
  return paused === true || concurrency != null || rateLimit != null || groupConcurrency != null || groupOrder != null;
}

/** Whether a type's settings document holds its plain claims back at `now`: a pause, a limit, groups or a hold. */
function holdsClaimsBack(settings: QueueSettingsDocument | null, now: Date): boolean {
  return settings !== null && (holdsBack(settings) || Boolean(settings.grouped) || heldAt(settings, now));
}

/** The settings document of type `name` as a plain claim reads it (`SETTINGS_PROJECTION`), or null: one read. */
function readClaimSettings(
  c: Pick<FlowCollections, 'settings' | 'limitMs'>,
  name: string,
): Promise<QueueSettingsDocument | null> {
  return withCallLimit(c.limitMs, (signal) =>
    c.settings.findOne({ _id: name }, { projection: SETTINGS_PROJECTION, signal }),
  ) as Promise<QueueSettingsDocument | null>;
}

/** Whether the settings of type `name` hold its plain claims back at `now` (see `holdsClaimsBack`): one read. */
export async function claimsHeldBack(
  c: Pick<FlowCollections, 'settings' | 'limitMs'>,
  name: string,
  now: Date,
): Promise<boolean> {
  return holdsClaimsBack(await readClaimSettings(c, name), now);
}

/**
 * See `FlowControlStore.claimJobsUnlessHeld`: the type's settings document is read (by `_id`) beside the
 * promotion of its due jobs, both before any job is leased; then `claimJobs` leases, unless the document holds
 * the type's claims back (a pause, a limit, or groups).
 */
export async function claimJobsUnlessHeld(c: FlowCollections, request: ClaimRequest): Promise<JobRecord[] | null> {
  const name = String(request.name);
  const [settings] = await Promise.all([
    readClaimSettings(c, name),
    promoteDueJobs(c.jobs, name, request.now, c.limitMs),
  ]);
  if (holdsClaimsBack(settings, request.now)) return null;
  return claimReadyJobs(c.jobs, { ...request, name }, c.limitMs);
}

/**
 * See `FlowControlStore.claimLimitedJobs`, and the top of this file. The settings are read first: a type
 * that is only `grouped` (its jobs take turns, with no limit to keep) is claimed without the fence and its
 * transaction (`claimTurns`), so its claims neither wait for each other nor pay for a commit; a claim those
 * settings refuse is answered at once (`refusedAsRead`); the others go through the fence, which reads the
 * settings again inside the transaction.
 */
export async function claimLimitedJobs(c: FlowCollections, request: ClaimRequest): Promise<LimitedClaim> {
  const named = { ...request, name: String(request.name) };
  // Due delayed jobs move into the claim index first: bounded, shared by the store's claims, and outside the
  // transaction, whose retries would repeat it.
  await promoteDueJobs(c.jobs, named.name, named.now, c.limitMs);
  const settings = (await withCallLimit(c.limitMs, (signal) =>
    c.settings.findOne({ _id: named.name }, { signal }),
  )) as QueueSettingsDocument | null;
  const claim =
    settings === null
      ? null
      : holdsBack(settings)
        ? (refusedAsRead(settings, named.now) ?? (await inTurn(c.client, named.name, () => claimFenced(c, named))))
        : (refusedAsRead(settings, named.now) ?? (await claimTurns(c, named, settings)));
  return claim ?? { jobs: await claimJobs(c.jobs, named, c.limitMs), paused: false, nextStartAt: null };
}

/**
 * The answer of a claim the settings as read already refuse: the type is paused or held, or its rate limit has
 * no room at `now`. A refusal leases nothing, so it needs no fence; later settings only count more starts at
 * `now` (see `RateBuckets`), so the fence would refuse it too. Left out of the fence, the claims polling a
 * full rate limit no longer hold it against the claims that can start jobs.
 */
function refusedAsRead(settings: QueueSettingsDocument, now: Date): LimitedClaim | null {
  if (settings.paused) return { jobs: [], paused: true, nextStartAt: null };
  if (heldAt(settings, now)) return { jobs: [], paused: false, nextStartAt: settings.heldUntil };
  const rate = RateBuckets.stored(settings.rateLimit, settings).window(now.getTime());
  return rate.allowed > 0 ? null : { jobs: [], paused: false, nextStartAt: rate.nextStartAt };
}

/** The fenced claims of this process, by client and type: the promise the next one waits for. */
const claimsRunning = new WeakMap<MongoClient, Map<string, Promise<unknown>>>();

/**
 * Runs `claim` once the fenced claims of `name` this process started earlier on `client` have ended. They
 * would conflict in the database anyway, each conflict costing an aborted try and a wait (see
 * `claimFenced`): queued here, a process's claims of one type follow each other at once, and only claims
 * from other processes meet in the fence.
 */
function inTurn<T>(client: MongoClient, name: string, claim: () => Promise<T>): Promise<T> {
  let byName = claimsRunning.get(client);
  if (!byName) {
    byName = new Map();
    claimsRunning.set(client, byName);
  }
  const queue = byName;
  const mine = (queue.get(name) ?? Promise.resolve()).then(claim, claim);
  const settled = mine.then(
    () => undefined,
    () => undefined,
  );
  queue.set(name, settled);
  void settled.then(() => {
    if (queue.get(name) === settled) queue.delete(name);
  });
  return mine;
}

/**
 * The limited claim in its fenced transaction (see the top of this file); `null`, having written nothing,
 * when the type's settings are gone.
 */
async function claimFenced(c: FlowCollections, request: ClaimRequest): Promise<LimitedClaim | null> {
  const deadline = Date.now() + FENCE_WAIT_LIMIT_MS;
  for (;;) {
    try {
      return await claimFencedOnce(c, request);
    } catch (error) {
      if (!(error instanceof FenceTaken)) throw error;
      if (Date.now() >= deadline) throw error.cause;
    }
    // Outside a transaction, a write of a document a transaction holds waits until that transaction ends, so
    // this claim runs again as soon as the fence is free. Its write concern is 1: it only waits.
    await withCallLimit(c.limitMs, (signal) => {
      const options: Abortable<UpdateOptions> = { writeConcern: { w: 1 }, signal };
      return c.settings.updateOne({ _id: request.name }, { $inc: { fence: 1 } }, options);
    });
  }
}

/** How long a claim keeps waiting for other claims of its type to release the fence (the driver's own limit). */
const FENCE_WAIT_LIMIT_MS = 120_000;

/** The fence write of a claim met another claim holding the fence; its `cause` is the `WriteConflict`. */
class FenceTaken extends Error {}

/**
 * One try of the fenced transaction. A `WriteConflict` on the fence ends it as `FenceTaken` rather than let
 * the driver run it again after its jittered backoff: with every claim of the type backing off so, the fence
 * stands free between claims, and a claim that keeps losing falls ever further behind, its `now` with it.
 */
async function claimFencedOnce(c: FlowCollections, request: ClaimRequest): Promise<LimitedClaim | null> {
  let committing = false;
  try {
    return await runTransaction(c.client, c.writeConcern, c.limitMs, async (session, signal) => {
      committing = false;
      const options: Abortable<FindOneAndUpdateOptions> = { session, signal, returnDocument: 'after' };
      const doc = await c.settings
        .findOneAndUpdate({ _id: request.name }, { $inc: { fence: 1 } }, options)
        .catch((error: unknown) => {
          throw isWriteConflict(error) ? new FenceTaken('the fence is held by another claim', { cause: error }) : error;
        });
      const settings = doc as QueueSettingsDocument | null;
      const claim = settings
        ? await claimUnderSettings(
            request,
            toFlowState(settings),
            claimSteps(c, request, { session, signal }, RateBuckets.stored(settings.rateLimit, settings)),
          )
        : null;
      // Nothing leased, nothing to commit: an abort costs no majority write.
      if (claim === null || claim.jobs.length === 0) await session.abortTransaction();
      else {
        committing = true;
        await commitWithin(session, c.writeConcern);
      }
      return claim;
    });
  } catch (error) {
    if (isTransactionUnsupportedError(error)) {
      throw new WorkqError(
        'UNAVAILABLE',
        `Flow control (pause, limits) needs a MongoDB replica set (or sharded cluster) for its transaction; the server at ${c.hosts} is a standalone. Run mongod with --replSet (a one-member replica set is enough).`,
        { retryable: false, cause: error },
      );
    }
    // The commit may have been applied, its answer lost: the leases go back before the error is reported.
    if (committing) await giveBack(c, request);
    throw error;
  }
}

/**
 * The claim of a type that only takes turns: the same steps, outside any transaction, beside the type's other
 * claims (see `claimSteps`). A failure after leasing gives the leases back before it is reported.
 */
async function claimTurns(
  c: FlowCollections,
  request: ClaimRequest,
  settings: QueueSettingsDocument,
): Promise<LimitedClaim> {
  try {
    return await claimUnderSettings(
      request,
      toFlowState(settings),
      claimSteps(c, request, undefined, RateBuckets.stored(null, {})),
    );
  } catch (error) {
    await giveBack(c, request);
    throw error;
  }
}

/** Gives back whatever the claim leased (see `giveBackLeases`). */
function giveBack(c: FlowCollections, request: ClaimRequest): Promise<void> {
  const leaseMs = request.leaseMs ?? ENGINE_JOB_DEFAULTS.leaseMs;
  return giveBackLeases(
    c.jobs,
    { name: request.name, token: String(request.leaseToken), now: request.now, leaseMs },
    c.limitMs,
  );
}
