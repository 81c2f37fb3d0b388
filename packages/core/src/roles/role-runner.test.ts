import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine } from '../engine/engine.ts';
import type { Store } from '../engine/store.ts';
import { createPgliteStore } from '../stores/postgres/index.ts';
import type { LeaderElection } from './leadership.ts';
import { periodicRole, RoleRunner } from './role-runner.ts';

let store: Store;
beforeAll(async () => {
  store = await createPgliteStore();
});
afterAll(() => store?.close());

const LEASE_MS = 300;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A server: its engine on `over`, a role that counts its runs, and the runner. */
function server(over: Store) {
  let runs = 0;
  const role = periodicRole('count', 20, async () => void runs++);
  const runner = new RoleRunner(createEngine({ store: over }), { roles: [role], leadershipLeaseMs: LEASE_MS });
  return { runner, runs: () => runs };
}

/** The store as one server sees it, whose connection can be made to die: every election then fails. */
function dyingView(inner: Store): { store: Store; die: () => void } {
  let dead = false;
  const election = inner.leadership as LeaderElection;
  const leadership: LeaderElection = {
    tryLead: (...args) => (dead ? Promise.reject(new Error('connection lost')) : election.tryLead(...args)),
    resign: (...args) => (dead ? Promise.reject(new Error('connection lost')) : election.resign(...args)),
  };
  const die = () => {
    dead = true;
  };
  return { store: Object.assign(Object.create(inner) as Store, { leadership }), die };
}

describe('RoleRunner', () => {
  it('runs the roles on one server of two; the other takes over when the leader resigns', async () => {
    const a = server(store);
    const b = server(store);
    a.runner.start();
    await sleep(50);
    b.runner.start();
    await sleep(250);
    expect([a.runner.leading, b.runner.leading]).toEqual([true, false]);
    expect(a.runs()).toBeGreaterThan(2);
    expect(b.runs()).toBe(0);
    await a.runner.close();
    await sleep(250);
    expect(b.runner.leading).toBe(true);
    expect(b.runs()).toBeGreaterThan(0);
    await b.runner.close();
  });

  it('when the leader dies without resigning, another takes over once its lease runs out, not before', async () => {
    const dying = dyingView(store);
    const a = server(dying.store);
    const b = server(store);
    a.runner.start();
    await sleep(50);
    b.runner.start();
    await sleep(150);
    expect(a.runner.leading).toBe(true);
    dying.die();
    const diedAt = Date.now();
    while (!b.runner.leading && Date.now() - diedAt < 3_000) await sleep(10);
    const tookOverAfterMs = Date.now() - diedAt;
    expect(b.runner.leading).toBe(true);
    expect(tookOverAfterMs).toBeGreaterThan(LEASE_MS / 3);
    expect(a.runner.leading).toBe(false);
    await Promise.all([a.runner.close(), b.runner.close()]);
  });

  it('without election in the store, every server runs the roles', async () => {
    const noElection = Object.assign(Object.create(store) as Store, { leadership: undefined });
    const [a, b] = [server(noElection), server(noElection)];
    a.runner.start();
    b.runner.start();
    await sleep(120);
    expect([a.runner.leading, b.runner.leading]).toEqual([true, true]);
    expect(Math.min(a.runs(), b.runs())).toBeGreaterThan(0);
    await Promise.all([a.runner.close(), b.runner.close()]);
  });
});
