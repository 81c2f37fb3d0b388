import { afterAll, beforeAll, expect, it } from 'vitest';
import { createPgliteStore } from '../stores/postgres/index.ts';
import { createEngine } from './engine.ts';
import type { Store } from './store.ts';

let store: Store;

beforeAll(async () => {
  store = await createPgliteStore();
});

afterAll(() => store?.close());

it('holds a pause stored through another server at the next claim, though the settings it read are not due yet', async () => {
  const nowMs = Date.parse('2026-01-01T00:00:00.000Z');
  const engine = createEngine({ store, clock: { now: () => new Date(nowMs) }, settingsRefreshMs: 60_000 });
  const claim = { name: 'refresh', maxVersion: 1, limit: 1, workerId: 'w' };
  await engine.enqueueMany([1, 2, 3].map((n) => ({ name: 'refresh', version: 1, payload: { n } })));
  expect(await engine.claim(claim)).toHaveLength(1);
  // Paused through another server: the store's claim refuses, whatever this one read a moment ago.
  await store.updateQueueSettings('refresh', { paused: true }, new Date(nowMs));
  expect(await engine.claimUnderLimits(claim)).toMatchObject({ jobs: [], paused: true });
  // Resumed through another server, now that this one has read the pause: its next claim leases again.
  await store.updateQueueSettings('refresh', { paused: false }, new Date(nowMs));
  expect(await engine.claim(claim)).toHaveLength(1);
});
