import { failCommandAfter, startMongoWireDouble, until } from '@workq/test-support';
import { BSON, MongoClient } from 'mongodb';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine/engine.ts';
import { newLeaseToken } from '../src/engine/ids.ts';
import type { ClaimRequest, Store } from '../src/engine/store.ts';
import { createMongoStore } from '../src/stores/mongodb/index.ts';
import { RATE_BUCKETS, RateBuckets } from '../src/stores/mongodb/rate-buckets.ts';
import { afterStarts, type FlowState, rateWindow } from '../src/stores/shared/limited-claim.ts';

// The MongoDB store's limited claim under the real driver, against the fake
// primary that speaks the wire protocol: its fail points stall or fail one
// client's command, and its transactions conflict as the server's do.
const DB = 'workq_flow_control';
const double = await startMongoWireDouble({ database: DB });
afterAll(() => double.close());

const opened: Store[] = [];
afterEach(async () => {
  double.configureFailPoint('failCommand', 'off');
  await Promise.all(opened.splice(0).map((store) => store.close()));
  double.state.databases.delete(DB);
});

/** A store with a client of its own, named `appName` (which a fail point can single out). */
async function openStore(appName = 'workq'): Promise<Store> {
  const store = await createMongoStore({ url: `${double.url}&appName=${appName}`, dbName: DB, notify: false });
  opened.push(store);
  return store;
}

function claimAt(name: string, limit: number, now: Date): ClaimRequest {
  return {
    name,
    minVersion: 1,
    maxVersion: 1,
    limit,
    leaseToken: newLeaseToken(),
    workerId: 'w',
    leaseMs: 60_000,
    now,
  };
}

async function enqueued(store: Store, name: string, count: number): Promise<void> {
  const engine = createEngine({ store, leaseSweepIntervalMs: 0 });
  for (let from = 0; from < count; from += 1_000) {
    const batch = Array.from({ length: Math.min(1_000, count - from) }, (_, n) => ({
      name,
      version: 1,
      payload: { n },
    }));
    await engine.enqueueMany(batch);
  }
}

describe('mongodb store: the limited claim is one fenced transaction', () => {
  it('gives the jobs back when it fails after leasing them: ready again, no attempt spent', async () => {
    const store = await openStore();
    await enqueued(store, 'flow.fails', 3);
    await store.updateQueueSettings('flow.fails', { concurrency: 5, rateLimit: { max: 10, perMs: 1000 } }, new Date());
    // The lease is the claim's first `update`; the second, which saves the rate-limit state, fails.
    failCommandAfter(double, 1, 1, { failCommands: ['update'], errorCode: 2 });
    await expect(store.claimLimitedJobs(claimAt('flow.fails', 3, new Date()))).rejects.toThrow();
    const jobs = await store.listJobs({ name: 'flow.fails', limit: 10 });
    expect(jobs.map((job) => [job.state, job.attempts, job.leaseToken])).toEqual([
      ['waiting', 0, null],
      ['waiting', 0, null],
      ['waiting', 0, null],
    ]);
  });

  it('under concurrency 1, a claim made while another stalls mid-claim (past the 10 s a clock-bound lock held) waits for it', async () => {
    const stalled = await openStore('stalled');
    const other = await openStore();
    await enqueued(other, 'flow.fenced', 2);
    await other.updateQueueSettings('flow.fenced', { concurrency: 1 }, new Date());
    // The stalled claimer's lease write is held half a second before the server runs it.
    double.configureFailPoint(
      'failCommand',
      { times: 1 },
      { failCommands: ['update'], appName: 'stalled', blockConnection: true, blockTimeMS: 500 },
    );
    const now = new Date();
    const sent = double.commands.length;
    const first = stalled.claimLimitedJobs(claimAt('flow.fenced', 1, now));
    // Its lease write has reached the server, which holds it.
    await until(() => double.commands.slice(sent).some((command) => command.body.update === 'workq_jobs'));
    // The second claimer's clock reads 11 s later: a lock taken by the first claimer's clock would have expired.
    const second = other.claimLimitedJobs(claimAt('flow.fenced', 1, new Date(now.getTime() + 11_000)));
    const claims = await Promise.all([first, second]);
    expect(claims.map((claim) => claim.jobs.length)).toEqual([1, 0]);
    expect(await other.listJobs({ name: 'flow.fenced', states: ['active'], limit: 10 })).toHaveLength(1);
    // The second claim met the fence once, and waited for it to be free (a write outside the transaction
    // waits for the one holding the document) instead of trying it again after each of the driver's backoffs.
    const fenceWrites = double.commands
      .slice(sent)
      .filter((command) => command.body.findAndModify === 'workq_queue_settings' && command.body.autocommit === false);
    expect(fenceWrites.map((command) => command.outcome)).toEqual(['ok', 112, 'ok']);
  });
});

describe('mongodb store: what a limited claim costs', () => {
  it('waits on the majority once, at its commit, and not at all when it leases nothing', async () => {
    const store = await openStore();
    await enqueued(store, 'flow.cost', 4);
    await store.updateQueueSettings('flow.cost', { concurrency: 3, rateLimit: { max: 100, perMs: 1000 } }, new Date());
    /** The commands a claim sent, and those that waited for a majority to acknowledge. */
    const sentBy = async (claim: Promise<unknown>) => {
      const from = double.commands.length;
      await claim;
      const sent = double.commands.slice(from).filter((command) => command.name !== 'hello');
      const inTransaction = (command: (typeof sent)[number]) => command.body.autocommit === false;
      const majority = sent.filter(
        (command) =>
          command.name === 'commitTransaction' ||
          (!inTransaction(command) && command.body.writeConcern?.w === 'majority'),
      );
      return { sent: sent.map((command) => command.name), majority: majority.map((command) => command.name) };
    };
    const leasing = await sentBy(store.claimLimitedJobs(claimAt('flow.cost', 3, new Date())));
    expect(leasing.majority).toEqual(['commitTransaction']);
    expect(leasing.sent.length).toBeLessThanOrEqual(9);
    const full = await sentBy(store.claimLimitedJobs(claimAt('flow.cost', 3, new Date())));
    expect(full.majority).toEqual([]);
    expect(full.sent.at(-1)).toBe('abortTransaction');
  });
});

describe('mongodb store: a type whose jobs only take turns', () => {
  it('is claimed by turns without the fence: no transaction, no settings written but its turn', async () => {
    const store = await openStore();
    const engine = createEngine({ store, leaseSweepIntervalMs: 0 });
    const grouped = (group: string) => ({ name: 'flow.turns', version: 1, payload: { group }, options: { group } });
    await engine.enqueueMany([grouped('a'), grouped('a'), grouped('b'), grouped('b')]);
    expect((await store.listQueueSettings('flow.turns'))[0]).toMatchObject({ grouped: true, concurrency: null });
    const sent = double.commands.length;
    const { jobs } = await store.claimLimitedJobs(claimAt('flow.turns', 2, new Date()));
    expect(jobs.map((job) => (job.payload as { group: string }).group).sort()).toEqual(['a', 'b']);
    const claim = double.commands.slice(sent).filter((command) => command.db === DB);
    expect(claim.filter((command) => command.body.startTransaction !== undefined)).toEqual([]);
    const settingsWrites = claim.filter(
      (command) => command.name !== 'find' && Object.values(command.body)[0] === 'workq_queue_settings',
    );
    expect(settingsWrites.map((command) => command.body.updates?.[0]?.u)).toEqual([{ $max: { lastTurn: 2 } }]);
  });
});

describe('mongodb store: the group index', () => {
  it("reads only the versions a claim takes inside a group: newer versions' jobs are not scanned", async () => {
    const store = await openStore();
    const engine = createEngine({ store, leaseSweepIntervalMs: 0 });
    const job = (version: number, priority: number) => ({
      name: 'flow.versions',
      version,
      payload: {},
      options: { group: 'g', priority },
    });
    await engine.enqueueMany(Array.from({ length: 200 }, () => job(2, 9)));
    await engine.enqueue(job(1, 0));
    await store.updateQueueSettings('flow.versions', { groupConcurrency: 5 }, new Date());
    // The double plans each query by its model, counting the index keys it examines.
    double.state.costQueries = true;
    const from = double.commands.length;
    try {
      const { jobs } = await store.claimLimitedJobs(claimAt('flow.versions', 1, new Date()));
      expect(jobs.map((claimed) => claimed.version)).toEqual([1]);
    } finally {
      double.state.costQueries = false;
    }
    const finds = double.commands.slice(from).filter((command) => command.name === 'find');
    const [inGroup] = finds.flatMap((command) => command.queries).filter((query) => query.filter.group !== undefined);
    expect(inGroup?.plan).toMatchObject({ index: 'group_claim_by_version', sortedByIndex: true });
    expect(inGroup?.plan?.examined).toBeLessThanOrEqual(2);
  });
});

/** The settings of a type under `rate` with no start yet, for the log of starts the other stores keep. */
function logOfStarts(rate: { max: number; perMs: number }): FlowState {
  return {
    name: 'x',
    paused: false,
    grouped: false,
    concurrency: null,
    groupConcurrency: null,
    groupOrder: null,
    rateLimit: rate,
    heldUntil: null,
    updatedAt: new Date(0),
    recentStarts: [],
    lastTurn: 0,
  };
}

/** Numbers in [0, 1), the same ones for the same `seed`. */
function seededRandom(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 16807) % 2147483647;
    return state / 2147483647;
  };
}

describe('mongodb store: the rate limit in bounded buckets', () => {
  it('keeps a constant-size document under rateLimit.max 1e6, however many start', async () => {
    const store = await openStore();
    await enqueued(store, 'flow.rate', 100);
    await store.updateQueueSettings('flow.rate', { rateLimit: { max: 1_000_000, perMs: 3_600_000 } }, new Date());
    const start = Date.now();
    const client = new MongoClient(double.url);
    try {
      const settingsDocs = client
        .db(DB)
        .collection<{ _id: string; recentStarts?: number[]; rateBuckets?: [number, number][] }>('workq_queue_settings');
      // 5,000 starts in the window, as the log kept them before the buckets: one timestamp each.
      const recentStarts = Array.from({ length: 5_000 }, (_, i) => start - 5_000 + i);
      await settingsDocs.updateOne({ _id: 'flow.rate' }, { $set: { recentStarts } });
      expect((await store.claimLimitedJobs(claimAt('flow.rate', 100, new Date(start)))).jobs).toHaveLength(100);
      const doc = await settingsDocs.findOne({ _id: 'flow.rate' });
      // The log would now hold 5,100 timestamps (about 66 KB), and up to a million.
      expect(BSON.calculateObjectSize(doc ?? {})).toBeLessThan(2_500);
      expect(doc?.recentStarts).toBeUndefined();
      const buckets = doc?.rateBuckets ?? [];
      expect(buckets).toHaveLength(RATE_BUCKETS);
      expect(buckets.reduce((sum, [, n]) => sum + n, 0)).toBe(5_100);
    } finally {
      await client.close();
    }
    const [settings] = await store.listQueueSettings('flow.rate');
    expect(Object.keys(settings ?? {}).sort()).toEqual([
      'concurrency',
      'groupConcurrency',
      'groupOrder',
      'grouped',
      'heldUntil',
      'name',
      'paused',
      'rateLimit',
      'updatedAt',
    ]);
  });

  it('answers as the log of starts would, or more strictly once claims outnumber the buckets', () => {
    const rate = { max: 7, perMs: 100 };
    const log = logOfStarts(rate);
    let recent: number[] = [];
    const buckets = RateBuckets.stored(rate, {});
    const random = seededRandom(7);
    for (let nowMs = 1_000, claims = 0; claims < 2_000; claims++, nowMs += Math.floor(random() * 9)) {
      const exact = rateWindow({ ...log, recentStarts: recent }, nowMs);
      const bucketed = buckets.window(nowMs);
      // With no more claims in a window than buckets (a claim every 2 ms at least here), the answers are the log's.
      expect(bucketed.allowed).toBe(Math.max(0, exact.allowed));
      expect(bucketed.nextStartAt).toEqual(exact.nextStartAt);
      const taking = Math.min(bucketed.allowed, 1 + Math.floor(random() * 3));
      if (taking === 0) continue;
      const after = afterStarts({ ...log, recentStarts: recent }, exact, taking, nowMs);
      expect(buckets.started(taking, nowMs)).toEqual(after.nextStartAt);
      recent = after.recentStarts;
    }
    // Many claims in one window: never more than the log allows.
    const crowded = RateBuckets.stored({ max: 1_000, perMs: 1_000 }, {});
    const starts: number[] = [];
    for (let nowMs = 0; nowMs < 5_000; nowMs += 3) {
      const taking = Math.min(crowded.window(nowMs).allowed, 5);
      if (taking > 0) crowded.started(taking, nowMs);
      for (let n = 0; n < taking; n++) starts.push(nowMs);
      expect(starts.filter((at) => at > nowMs - 1_000).length).toBeLessThanOrEqual(1_000);
    }
  });

  it("counts every start inside a claim's window, however far the claim's now is behind the latest start", () => {
    const rate = { max: 5, perMs: 100 };
    const buckets = RateBuckets.stored(rate, {});
    // A claim at 150 starts all 5; one at 251 (its window after 151) starts 2; one made at 200 and run last
    // (a claim retried after a conflict, or another server's clock) counts the 5 at 150 and has no room.
    buckets.started(5, 150);
    buckets.started(2, 251);
    expect(buckets.window(200)).toEqual({ allowed: 0, nextStartAt: new Date(250) });

    const log = logOfStarts(rate);
    let recent: number[] = [];
    const mixed = RateBuckets.stored(rate, {});
    const starts: number[] = [];
    const random = seededRandom(11);
    for (let clock = 1_000, claims = 0; claims < 2_000; claims++, clock += Math.floor(random() * 9)) {
      // One claim in four runs with a now up to 1.5 windows behind the latest.
      const nowMs = random() < 0.25 ? clock - Math.floor(random() * 150) : clock;
      const exact = rateWindow({ ...log, recentStarts: recent }, nowMs);
      expect(mixed.window(nowMs)).toEqual({ allowed: exact.allowed, nextStartAt: exact.nextStartAt });
      const taking = Math.min(exact.allowed, 1 + Math.floor(random() * 3));
      if (taking === 0) continue;
      const after = afterStarts({ ...log, recentStarts: recent }, exact, taking, nowMs);
      expect(mixed.started(taking, nowMs)).toEqual(after.nextStartAt);
      recent = after.recentStarts;
      for (let n = 0; n < taking; n++) starts.push(nowMs);
    }
    starts.sort((a, b) => a - b);
    for (const [i, at] of starts.entries())
      expect(starts[i + rate.max] ?? Number.POSITIVE_INFINITY).toBeGreaterThanOrEqual(at + rate.perMs);
  });
});
