import type { MongoServerError } from 'mongodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { wireDoubleSuite } from './suite-double.ts';

interface Item {
  _id: string;
  key: string;
}

/** A write that meets another transaction's uncommitted document in an index, as the server's index has it. */
describe('MongoDB wire double: writes that meet an uncommitted insert', () => {
  const wire = wireDoubleSuite();
  beforeAll(async () => {
    await wire.client.db('wire').collection<Item>('items').createIndex({ key: 1 }, { unique: true, name: 'key' });
  });

  const items = () => wire.client.db('wire').collection<Item>('items');
  const codeOf = (work: Promise<unknown>) =>
    work.then(
      () => 'ok',
      (error: MongoServerError) => ({
        code: error.code,
        transient: error.hasErrorLabel?.('TransientTransactionError'),
      }),
    );
  /** Whether `work` is still pending after a few round trips' time. */
  const pending = async (work: Promise<unknown>) =>
    Promise.race([
      work.then(
        () => false,
        () => false,
      ),
      new Promise((resolve) => setTimeout(() => resolve(true), 200)),
    ]);

  it('in another transaction, the same _id or unique key is a WriteConflict (112), not a duplicate key', async () => {
    const holder = wire.client.startSession();
    const other = wire.client.startSession();
    try {
      holder.startTransaction();
      await items().insertOne({ _id: 'a', key: 'k-a' }, { session: holder });
      for (const doc of [
        { _id: 'a', key: 'k-other' },
        { _id: 'a2', key: 'k-a' },
      ]) {
        other.startTransaction();
        expect(await codeOf(items().insertOne(doc, { session: other }))).toEqual({ code: 112, transient: true });
        await other.abortTransaction();
      }
      await holder.commitTransaction();
    } finally {
      await holder.endSession();
      await other.endSession();
    }
  });

  it('outside transactions, it waits for the holder: a duplicate once it commits, inserted once it aborts', async () => {
    const holder = wire.client.startSession();
    try {
      holder.startTransaction();
      await items().insertOne({ _id: 'b', key: 'k-b' }, { session: holder });
      const sameId = codeOf(items().insertOne({ _id: 'b', key: 'k-b2' }));
      const sameKey = codeOf(items().insertOne({ _id: 'b2', key: 'k-b' }));
      expect(await pending(sameKey)).toBe(true);
      await holder.commitTransaction();
      expect(await sameId).toEqual({ code: 11000, transient: false });
      expect(await sameKey).toEqual({ code: 11000, transient: false });

      holder.startTransaction();
      await items().insertOne({ _id: 'c', key: 'k-c' }, { session: holder });
      const afterAbort = codeOf(items().insertOne({ _id: 'c2', key: 'k-c' }));
      expect(await pending(afterAbort)).toBe(true);
      await holder.abortTransaction();
      expect(await afterAbort).toBe('ok');
      expect(await items().findOne({ key: 'k-c' })).toEqual({ _id: 'c2', key: 'k-c' });
    } finally {
      await holder.endSession();
    }
  });
});
