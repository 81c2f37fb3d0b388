import { describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine/engine.ts';
import { ManualClock } from './support/manual-clock.ts';
import { untargetedJobWrites, writeStatements } from './support/mongodb-writes.ts';
import { withWireStore } from './support/wire-store.ts';

// Ready to shard `jobs` on { name: 1 }: the commands the real driver sends
// to a fake primary over a run through every job operation, and what mongos
// would make of each write statement to `jobs`: one naming the type goes to
// the shard holding it, any other to every shard.

describe('mongodb store: ready to shard on { name: 1 }', () => {
  it('names the job type in every write statement to jobs, the writes a lease fences included', async () => {
    const dbName = 'workq_sharding';
    await withWireStore(dbName, async (wire, store) => {
      const clock = new ManualClock();
      const engine = createEngine({ store, clock, leaseSweepIntervalMs: 0 });
      await engine.enqueueMany([
        { name: 'shard.a', version: 1, payload: {}, options: { maxAttempts: 1 } },
        { name: 'shard.a', version: 1, payload: {}, options: { idempotencyKey: 'k' } },
        { name: 'shard.b', version: 1, payload: {}, options: { leaseMs: 1_000 } },
        { name: 'shard.b', version: 1, payload: {}, options: { delayMs: 500 } },
      ]);
      await engine.enqueue({ name: 'shard.a', version: 1, payload: {}, options: { idempotencyKey: 'k' } });
      const [failed, keyed] = await engine.claim({ name: 'shard.a', maxVersion: 1, limit: 2, workerId: 'w' });
      await engine.extend(keyed!, 5_000);
      await engine.progress(keyed!, 50);
      await engine.updatePayload(keyed!, { name: 'shard.a', version: 1, payload: { edited: true } });
      await engine.fail(failed!, { message: 'boom' });
      await engine.retryDead({ ids: [failed!.id] });
      const [again] = await engine.claim({ name: 'shard.a', maxVersion: 1, limit: 1, workerId: 'w' });
      await engine.complete(again!, { ok: true });
      await engine.moveTo(keyed!, { name: 'shard.c', version: 1, payload: {} });
      clock.advance(600);
      const [lost, delayed] = await engine.claim({ name: 'shard.b', maxVersion: 1, limit: 2, workerId: 'w' });
      await engine.release([delayed!]);
      clock.advance(1_000);
      expect(await engine.sweepExpiredLeases()).toEqual({ requeued: 1, dead: 0 });
      await engine.cancel(lost!.id);
      const { id: later } = await engine.enqueue({
        name: 'shard.f',
        version: 1,
        payload: {},
        options: { delayMs: 60_000 },
      });
      expect(await engine.promote(later)).toBe(true);
      // A debounced enqueue twice, and a claim under limits and groups.
      const debounce = { key: 'user-7', delayMs: 1_000 };
      await engine.enqueue({ name: 'shard.d', version: 1, payload: { n: 1 }, options: { debounce } });
      await engine.enqueue({ name: 'shard.d', version: 1, payload: { n: 2 }, options: { debounce } });
      await engine.setLimits('shard.e', { concurrency: 1, rateLimit: { max: 10, perMs: 1_000 } });
      await engine.enqueue({ name: 'shard.e', version: 1, payload: {}, options: { group: 'g' } });
      expect(await engine.claim({ name: 'shard.e', maxVersion: 1, limit: 1, workerId: 'w' })).toHaveLength(1);
      clock.advance(8 * 86_400_000);
      expect(await engine.prune()).toBe(3);

      const jobWrites = wire.commands.filter(
        (command) => command.db === dbName && Object.values(command.body)[0] === 'workq_jobs',
      );
      expect(new Set(jobWrites.flatMap(writeStatements).map(({ command }) => command))).toEqual(
        new Set(['update', 'delete', 'findAndModify']),
      );
      expect(untargetedJobWrites(wire.commands, dbName)).toEqual([]);
    });
  });

  it('refuses a forged or garbled lease token with LEASE_LOST, changing nothing; any write it makes names a type', async () => {
    const dbName = 'workq_sharding_tokens';
    await withWireStore(dbName, async (wire, store) => {
      const engine = createEngine({ store, clock: new ManualClock(), leaseSweepIntervalMs: 0 });
      await engine.enqueue({ name: 'token.a', version: 1, payload: {} });
      const [held] = await engine.claim({ name: 'token.a', maxVersion: 1, limit: 1, workerId: 'w' });
      const token = held!.leaseToken;
      expect(token.endsWith('@token.a')).toBe(true);
      const engineToken = token.slice(0, token.lastIndexOf('@'));
      const forged = [
        'forged',
        '',
        '@',
        `${engineToken}@`,
        '@token.a',
        engineToken,
        `${engineToken}@token.b`,
        `${token}@token.a`,
        `${'x'.repeat(100_000)}${token}`,
        `${token}\u0000`,
        42 as unknown as string,
        null as unknown as string,
      ];
      const sent = wire.commands.length;
      for (const leaseToken of forged) {
        const lease = { id: held!.id, leaseToken };
        for (const attempt of [
          () => engine.complete(lease, { ok: true }),
          () => engine.extend(lease, 5_000),
          () => engine.progress(lease, 10),
          () => engine.moveTo(lease, { name: 'token.b', version: 1, payload: {} }),
        ]) {
          await expect(attempt()).rejects.toMatchObject({ code: 'LEASE_LOST' });
        }
        expect(await engine.release([{ ...lease, name: 'token.a' }])).toEqual([]);
      }
      expect(untargetedJobWrites(wire.commands.slice(sent), dbName)).toEqual([]);
      expect(await engine.get(held!.id)).toMatchObject({ state: 'active', attempts: 1 });
      await engine.complete(held!, { ok: true });
      expect((await engine.get(held!.id)).state).toBe('completed');
    });
  });
});
