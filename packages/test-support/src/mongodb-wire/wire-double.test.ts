import {
  type ChangeStreamDocument,
  MongoClient,
  type MongoServerError,
  MongoWriteConcernError,
  ReadConcern,
} from 'mongodb';
import { describe, expect, it } from 'vitest';
import { startMongoWireDouble } from './server.ts';
import { wireDoubleSuite } from './suite-double.ts';

/** Through the real driver: the protocol, CRUD, and the server's rules and faults the fake primary plays. */
describe('MongoDB wire double', () => {
  const wire = wireDoubleSuite();

  const sent = (name: string) => wire.double.commands.filter((command) => command.name === name);

  it('answers CRUD, cursors and sessions as a replica set primary', async () => {
    const hello = await wire.client.db('admin').command({ hello: 1 });
    expect(hello).toMatchObject({ setName: 'rs0', isWritablePrimary: true, hosts: [`127.0.0.1:${wire.double.port}`] });
    const items = wire.client.db('wire').collection('items');
    await items.insertMany(Array.from({ length: 250 }, (_, n) => ({ n, even: n % 2 === 0 })));
    expect(await items.find({}, { sort: { n: -1 } }).toArray()).toHaveLength(250);
    expect(sent('getMore').length).toBeGreaterThan(0);
    expect(await items.countDocuments({ even: true })).toBe(125);
    await items.updateOne({ n: 1000 }, { $set: { upserted: true } }, { upsert: true });
    const after = await items.findOneAndUpdate({ n: 3 }, { $inc: { n: 1000 } }, { returnDocument: 'after' });
    expect(after?.n).toBe(1003);
    expect((await items.deleteMany({ n: { $gte: 1000 } })).deletedCount).toBe(2);
    const [insert] = sent('insert');
    expect(insert?.body).toMatchObject({ $db: 'wire', ordered: true, lsid: expect.anything(), txnNumber: 1 });
  });

  it("refuses what the server refuses, with the server's codes", async () => {
    const db = wire.client.db('wire');
    const keyed = db.collection('keyed');
    await keyed.createIndexes([{ key: { k: 1 }, name: 'k_unique', unique: true }]);
    await keyed.insertOne({ k: 'a' });
    const duplicate = await keyed.insertOne({ k: 'a' }).catch((error: unknown) => error);
    expect(duplicate).toMatchObject({ code: 11000, keyPattern: { k: 1 }, keyValue: { k: 'a' } });
    await expect(keyed.createIndex({ k: 1 }, { name: 'other', unique: true })).rejects.toMatchObject({ code: 85 });
    await expect(keyed.createIndex({ j: 1 }, { name: 'k_unique' })).rejects.toMatchObject({ code: 86 });
    await expect(keyed.find({ k: 'a' }, { hint: 'missing' }).toArray()).rejects.toMatchObject({
      code: 2,
      message: expect.stringContaining('hint provided does not correspond to an existing index'),
    });
    await expect(db.command({ noSuchCommand: 1 })).rejects.toMatchObject({ code: 59, codeName: 'CommandNotFound' });
    const huge = { k: 'huge', blob: 'x'.repeat(16 * 1024 * 1024) };
    await expect(keyed.insertOne(huge)).rejects.toMatchObject({
      code: 2,
      message: expect.stringContaining('object to insert too large'),
    });
    const tooBig = { k: 'too big', blob: 'x'.repeat(16 * 1024 * 1024 + 20 * 1024) };
    await expect(keyed.insertOne(tooBig)).rejects.toMatchObject({ code: 10334, codeName: 'BSONObjectTooLarge' });
    // An update that grows a document past 16 MiB fails its statement, as the server's update stage does.
    await keyed.insertOne({ k: 'grows', blob: 'x'.repeat(9 * 1024 * 1024) });
    const grown = await keyed
      .bulkWrite(
        [
          { updateOne: { filter: { k: 'grows' }, update: { $set: { more: 'y'.repeat(8 * 1024 * 1024) } } } },
          { updateOne: { filter: { k: 'a' }, update: { $set: { touched: true } } } },
        ],
        { ordered: false },
      )
      .catch((error: unknown) => error);
    expect(grown).toMatchObject({
      writeErrors: [{ index: 0, code: 17419, errmsg: 'Resulting document after update is larger than 16777216' }],
      result: { modifiedCount: 1 },
    });
    expect(await keyed.findOne({ k: 'grows' }, { projection: { more: 1 } })).toEqual({ _id: expect.anything() });
    // The driver copies a database's read concern into `$changeStream`; the server takes only majority.
    const local = wire.client
      .db('wire', { readConcern: new ReadConcern('local') })
      .collection('keyed')
      .watch();
    await expect(local.next()).rejects.toMatchObject({ code: 72, codeName: 'InvalidOptions' });
    await local.close();
  });

  it("evaluates $$NOW on the primary's clock, once per command", async () => {
    const clocks = wire.client.db('wire').collection('clocks');
    await clocks.insertMany(Array.from({ length: 50 }, (_, n) => ({ n, at: new Date() })));
    const past = { $expr: { $lt: ['$at', '$$NOW'] } };
    try {
      wire.double.state.clockOffsetMs = -3_600_000;
      expect(await clocks.countDocuments(past)).toBe(0);
      // In a query outside `$expr`, `$$NOW` is only a string.
      expect(await clocks.countDocuments({ at: '$$NOW' })).toBe(0);
      wire.double.state.clockOffsetMs = 3_600_000;
      expect(await clocks.countDocuments(past)).toBe(50);
      await clocks.updateMany(past, [{ $set: { stamped: '$$NOW', kept: { $literal: '$$NOW' } } }]);
      const stamps = await clocks.distinct('stamped');
      expect(stamps).toHaveLength(1);
      expect(Math.abs((stamps[0] as Date).getTime() - (Date.now() + 3_600_000))).toBeLessThan(60_000);
      expect(await clocks.distinct('kept')).toEqual(['$$NOW']);
    } finally {
      wire.double.state.clockOffsetMs = 0;
    }
  });

  it('streams changes, and resumes a stream after a dropped connection without losing one', async () => {
    const events = wire.client.db('wire').collection('events');
    const stream = events.watch<{ i: number }>([{ $match: { operationType: 'insert' } }]);
    const seen: number[] = [];
    stream.on('change', (change: ChangeStreamDocument<{ i: number }>) => {
      if (change.operationType === 'insert') seen.push(change.fullDocument.i);
    });
    await new Promise((resolve) => stream.once('resumeTokenChanged', resolve));
    await events.insertOne({ i: 1 });
    await expect.poll(() => seen).toEqual([1]);
    wire.double.dropConnections();
    const resumed = () => sent('aggregate').filter((command) => command.body.pipeline[0]?.$changeStream?.resumeAfter);
    await expect.poll(() => resumed().length, { timeout: 5_000 }).toBeGreaterThan(0);
    await events.insertOne({ i: 2 });
    await expect.poll(() => seen, { timeout: 5_000 }).toEqual([1, 2]);
    await stream.close();
  });

  it('ends a change stream for good at an invalidate, and one whose resume point left the oplog with 286', async () => {
    const renamed = wire.client.db('wire').collection('renamed');
    const stream = renamed.watch();
    const ended = new Promise((resolve) => stream.once('close', resolve));
    const kinds: string[] = [];
    stream.on('change', (change) => kinds.push(change.operationType));
    await new Promise((resolve) => stream.once('resumeTokenChanged', resolve));
    wire.double.invalidate('wire', 'renamed');
    await ended;
    await expect.poll(() => kinds).toEqual(['invalidate']);

    const lostCollection = wire.client.db('wire').collection('lost');
    const lost = lostCollection.watch();
    expect(await lost.tryNext()).toBeNull();
    await lostCollection.insertOne({ unread: true });
    wire.double.forgetHistory();
    await expect(lost.next()).rejects.toMatchObject({ code: 286, codeName: 'ChangeStreamHistoryLost' });
    await lost.close();
  });

  it("hides a transaction's writes until it commits, reads at its snapshot, and fails a second one writing the same document with WriteConflict", async () => {
    const accounts = wire.client.db('wire').collection('accounts');
    await accounts.insertOne({ _id: 'acct' as never, balance: 0 });
    const first = wire.client.startSession();
    const second = wire.client.startSession();
    first.startTransaction();
    second.startTransaction();
    await accounts.updateOne({ _id: 'acct' as never }, { $inc: { balance: 1 } }, { session: first });
    // Outside the transaction, its write is not seen before it commits.
    expect(await accounts.findOne({ _id: 'acct' as never })).toMatchObject({ balance: 0 });
    expect(await accounts.countDocuments({ balance: 1 })).toBe(0);
    const conflict = await accounts
      .updateOne({ _id: 'acct' as never }, { $inc: { balance: 10 } }, { session: second })
      .catch((error: MongoServerError) => error);
    expect(conflict).toMatchObject({ code: 112, codeName: 'WriteConflict' });
    expect((conflict as MongoServerError).hasErrorLabel('TransientTransactionError')).toBe(true);
    await first.commitTransaction();
    await second.abortTransaction();
    await Promise.all([first.endSession(), second.endSession()]);
    expect(await accounts.findOne({ _id: 'acct' as never })).toMatchObject({ balance: 1 });

    // A transaction reads the data as committed when it started, whatever is committed meanwhile.
    const reader = wire.client.startSession();
    reader.startTransaction();
    expect(await accounts.findOne({ _id: 'acct' as never }, { session: reader })).toMatchObject({ balance: 1 });
    await accounts.updateOne({ _id: 'acct' as never }, { $set: { balance: 5 } });
    expect(await accounts.findOne({ _id: 'acct' as never }, { session: reader })).toMatchObject({ balance: 1 });
    await reader.commitTransaction();
    await reader.endSession();
    expect(await accounts.findOne({ _id: 'acct' as never })).toMatchObject({ balance: 5 });
  });

  it('aborts a transaction older than its lifetime; its commit fails with NoSuchTransaction, a transient error', async () => {
    const brief = await startMongoWireDouble({ transactionLifetimeMs: 200 });
    const viaBrief = new MongoClient(brief.url, { serverSelectionTimeoutMS: 5_000 });
    const session = viaBrief.startSession();
    try {
      const notes = viaBrief.db('t').collection('notes');
      session.startTransaction();
      await notes.insertOne({ late: true }, { session });
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const failure = await session.commitTransaction().catch((error: MongoServerError) => error);
      expect(failure).toMatchObject({ code: 251, codeName: 'NoSuchTransaction' });
      expect((failure as MongoServerError).hasErrorLabel('TransientTransactionError')).toBe(true);
      expect(await notes.countDocuments()).toBe(0);
    } finally {
      await session.endSession();
      await viaBrief.close();
      await brief.close();
    }
  });

  it('answers a retried write from the record of its first try', async () => {
    const once = wire.client.db('wire').collection('once');
    wire.double.configureFailPoint('onPrimaryTransactionalWrite', { times: 1 }, { closeConnection: true });
    await once.insertOne({ tag: 'x' });
    expect(await once.countDocuments({ tag: 'x' })).toBe(1);
    const tries = sent('insert').filter((command) => command.body.insert === 'once');
    expect(tries).toHaveLength(2);
    expect(tries[1]?.body.txnNumber).toEqual(tries[0]?.body.txnNumber);
  });

  it('labels a step-down error retryable, and elects the primary back after the election', async () => {
    const steps = wire.client.db('wire').collection('steps');
    wire.double.configureFailPoint('failCommand', { times: 1 }, { failCommands: ['insert'], errorCode: 10107 });
    await steps.insertOne({ step: 1 });
    const failedTry = sent('insert').find((command) => command.outcome === 10107);
    expect(failedTry?.body.insert).toBe('steps');
    const election = wire.double.stepDown(300);
    const during = await wire.client.db('admin').command({ hello: 1 });
    expect(during.isWritablePrimary).toBe(false);
    await election;
    await steps.insertOne({ step: 2 });
    expect(await steps.countDocuments()).toBe(2);
  });

  it('answers a majority write that cannot be acknowledged with a write-concern timeout (64) once applied', async () => {
    const lagging = wire.client.db('wire').collection('lagging');
    wire.double.majorityAvailable = false;
    const write = lagging.insertOne({ late: true }, { writeConcern: { w: 'majority', wtimeoutMS: 100 } });
    await expect(write).rejects.toBeInstanceOf(MongoWriteConcernError);
    await expect(write).rejects.toMatchObject({ code: 64 });
    wire.double.majorityAvailable = true;
    expect(await lagging.countDocuments({ late: true })).toBe(1);
  });

  it('answers as a mongos when asked', async () => {
    const mongos = await startMongoWireDouble({ topology: 'mongos' });
    const viaMongos = new MongoClient(mongos.url, { serverSelectionTimeoutMS: 5_000 });
    try {
      expect(await viaMongos.db('admin').command({ hello: 1 })).toMatchObject({ msg: 'isdbgrid' });
      await viaMongos.db('m').collection('c').insertOne({ routed: true });
      expect(await viaMongos.db('m').collection('c').countDocuments()).toBe(1);
    } finally {
      await viaMongos.close();
      await mongos.close();
    }
  });
});
