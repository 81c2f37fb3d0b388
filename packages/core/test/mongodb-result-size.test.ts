import { startMongoWireDouble } from '@workq/test-support';
import { afterAll, describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine/engine.ts';
import { createMongoStore } from '../src/stores/mongodb/index.ts';
import { rejection } from './support/fixtures.ts';
import { ManualClock } from './support/manual-clock.ts';

// A result that fits the store's limit on its own, but not beside its job's
// payload in one 16 MiB document: under the real driver, against a fake
// primary that refuses such an update as the server does (17419).

const dbName = 'workq_result_size';
const wire = await startMongoWireDouble({ database: dbName });
const store = await createMongoStore({ url: wire.url, dbName, notify: false });
afterAll(async () => {
  await store.close();
  await wire.close();
});

describe('mongodb store: results near 16 MiB', () => {
  it('ends a job whose result and payload together are over 16 MiB dead with PAYLOAD_TOO_LARGE, instead of failing its ack forever', async () => {
    const engine = createEngine({ store, clock: new ManualClock(), leaseSweepIntervalMs: 0 });
    await engine.enqueueMany([
      { name: 'grown.a', version: 1, payload: { text: 'x'.repeat(9 * 1024 * 1024) } },
      { name: 'grown.a', version: 1, payload: {} },
    ]);
    const [big, small] = await engine.claim({ name: 'grown.a', maxVersion: 1, limit: 2, workerId: 'w' });
    const acks = [
      { id: big!.id, leaseToken: big!.leaseToken, result: { text: 'y'.repeat(8 * 1024 * 1024) } },
      { id: small!.id, leaseToken: small!.leaseToken, result: { ok: true } },
    ];
    const sent = wire.commands.length;
    const error = await rejection(engine.completeMany(acks));
    expect(error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(error.message).toContain(big!.id);
    expect(wire.commands.slice(sent).map((command) => command.outcome)).toContain(17419);
    const dead = await store.getJob(big!.id);
    expect(dead).toMatchObject({ state: 'dead', result: null });
    expect(dead?.error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', permanent: true, attempt: 1 });
    // The batch's other ack was applied: sent again, it is answered as a repeat.
    expect((await engine.get(small!.id)).state).toBe('completed');
    expect(await engine.completeMany(acks.slice(1))).toEqual([{ id: small!.id, ok: false, repeated: true }]);
    // The dead job is not delivered again.
    expect(await engine.claim({ name: 'grown.a', maxVersion: 1, limit: 2, workerId: 'w' })).toEqual([]);
  });
});
