import { afterAll, beforeAll, expect, it } from 'vitest';
import { createPgliteStore } from '../stores/postgres/index.ts';
import { createEngine } from './engine.ts';
import type { Store } from './store.ts';

let store: Store;

beforeAll(async () => {
  store = await createPgliteStore();
});

afterAll(() => store?.close());

it("keeps the settings it read for settingsRefreshMs by the engine's clock, not the system's", async () => {
  let nowMs = Date.parse('2026-01-01T00:00:00.000Z');
  const engine = createEngine({ store, clock: { now: () => new Date(nowMs) }, settingsRefreshMs: 60_000 });
  const claim = { name: 'refresh', maxVersion: 1, limit: 1, workerId: 'w' };
  await engine.enqueueMany([1, 2, 3].map((n) => ({ name: 'refresh', version: 1, payload: { n } })));
  expect(await engine.claim(claim)).toHaveLength(1);
  // Paused through another server: this one goes on with the settings it read, until they are due again.
  await store.updateQueueSettings('refresh', { paused: true }, new Date(nowMs));
  expect(await engine.claim(claim)).toHaveLength(1);
  nowMs += 60_001;
  expect(await engine.claimUnderLimits(claim)).toMatchObject({ jobs: [], paused: true });
});
