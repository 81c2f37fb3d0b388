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

it('goes on with the settings it read while it reads them again, and never keeps a read begun before a change was announced', async () => {
  let nowMs = Date.parse('2026-01-01T00:00:00.000Z');
  let reads = 0;
  /** The reads after the first, each held until the test lets it answer. */
  const held: (() => void)[] = [];
  const slowStore = new Proxy(store, {
    get(target, key, receiver) {
      if (key !== 'listQueueSettings') return Reflect.get(target, key, receiver);
      return async () => {
        reads++;
        const list = await target.listQueueSettings();
        if (reads > 1) await new Promise<void>((resolve) => held.push(resolve));
        return list;
      };
    },
  });
  const engine = createEngine({ store: slowStore, clock: { now: () => new Date(nowMs) }, settingsRefreshMs: 1_000 });
  const name = 'reread';
  const answered = () => new Promise((resolve) => setTimeout(resolve, 20));
  await engine.flow.change(name, { paused: true });
  expect(await engine.flow.settingsOf(name)).toMatchObject({ paused: true });
  expect(reads).toBe(1);

  // Due again: the read starts, but the caller has the old settings at once.
  await store.updateQueueSettings(name, { paused: false }, new Date(nowMs));
  nowMs += 1_000;
  expect(await engine.flow.settingsOf(name)).toMatchObject({ paused: true });
  expect(reads).toBe(2);
  await answered();
  held.shift()?.();
  await answered();
  expect(await engine.flow.settingsOf(name)).toMatchObject({ paused: false });

  // A read begun before `forget` is neither joined nor kept when it answers last.
  nowMs += 1_000;
  expect(await engine.flow.settingsOf(name)).toMatchObject({ paused: false });
  await answered();
  const begunBefore = held.shift();
  await store.updateQueueSettings(name, { paused: true }, new Date(nowMs));
  engine.flow.forget();
  const after = engine.flow.settingsOf(name);
  await answered();
  expect(reads).toBe(4);
  held.shift()?.();
  expect(await after).toMatchObject({ paused: true });
  begunBefore?.();
  await answered();
  expect(await engine.flow.settingsOf(name)).toMatchObject({ paused: true });
});
