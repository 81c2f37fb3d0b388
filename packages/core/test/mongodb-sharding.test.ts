import { type Doc, startMongoWireDouble } from '@workq/test-support';
import { describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine/engine.ts';
import { createMongoStore } from '../src/stores/mongodb/index.ts';
import { ManualClock } from './support/manual-clock.ts';

// Ready to shard `jobs` on { name: 1 }: the commands the real driver sends
// to a fake primary over a run through every job operation, and what mongos
// would make of each write statement to `jobs`.

/** Each write statement of a recorded command: its filter, and whether it may change several documents. */
function statements(body: Doc): { filter: Doc; multi: boolean }[] {
  if (Array.isArray(body.updates)) {
    return (body.updates as Doc[]).map((update) => ({ filter: update.q as Doc, multi: update.multi === true }));
  }
  if (Array.isArray(body.deletes)) {
    return (body.deletes as Doc[]).map((remove) => ({ filter: remove.q as Doc, multi: remove.limit !== 1 }));
  }
  if (body.findAndModify !== undefined) return [{ filter: body.query as Doc, multi: false }];
  return [];
}

describe('mongodb store: ready to shard on { name: 1 }', () => {
  it('names the job type in every multi-document write to jobs; the others select one exact id', async () => {
    const dbName = 'workq_sharding';
    const wire = await startMongoWireDouble({ database: dbName });
    const store = await createMongoStore({ url: wire.url, dbName, notify: false });
    try {
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
      const written = jobWrites.flatMap((command) => statements(command.body).map((s) => ({ ...s, command })));
      expect(new Set(written.map(({ command }) => command.name))).toEqual(
        new Set(['update', 'delete', 'findAndModify']),
      );
      const untargeted = written.filter(
        ({ filter, multi }) => typeof filter.name !== 'string' && (multi || typeof filter._id !== 'string'),
      );
      expect(untargeted.map(({ command, filter }) => ({ command: command.name, filter }))).toEqual([]);
    } finally {
      await store.close();
      await wire.close();
    }
  });
});
