import { WorkqError } from '@workq/core';
import type { Store } from '@workq/core/engine';
import { describe, expect, it } from 'vitest';
import { ServerMetrics } from './metrics.ts';
import type { Logger } from './options.ts';
import { StoreHealth } from './store-health.ts';
import { StoreTurns } from './store-turns.ts';

const unreachable = () => new WorkqError('UNAVAILABLE', 'Cannot reach the test store.', { retryable: true });

/** A store whose calls and probes fail while `down` is set; only the operations used here. */
function fakeStore() {
  const state = { down: false, probes: 0 };
  const answer = async () => {
    if (state.down) throw unreachable();
  };
  const store = {
    kind: 'fake',
    countJobs: async () => {
      await answer();
      return [];
    },
    getJob: async () => {
      await answer();
      return null;
    },
    ping: async () => {
      state.probes++;
      await answer();
    },
    close: async () => undefined,
  } as unknown as Store;
  return { store, state };
}

function collect(): Logger & { lines: { level: string; message: string; fields?: Record<string, unknown> }[] } {
  const lines: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
  const push = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    void lines.push({ level, message, ...(fields ? { fields } : {}) });
  return { lines, info: push('info'), warn: push('warn'), error: push('error') };
}

function healthOf(store: Store) {
  const logger = collect();
  const metrics = new ServerMetrics(async () => []);
  const health = new StoreHealth(store, {
    storeUrl: 'fake://store',
    logger,
    metrics,
    probeEveryMs: 10,
    probeTimeoutMs: 1_000,
    turns: new StoreTurns(16),
  });
  const gauge = async (name: string) => (await metrics.registry.getSingleMetric(name)?.get())?.values[0]?.value;
  return { health, logger, gauge };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('store health', () => {
  it('lets a one-off retryable failure pass unlogged when the probe that follows answers', async () => {
    const { store } = fakeStore();
    const { health, logger, gauge } = healthOf(store);
    await expect(health.store.countJobs(new Date())).resolves.toEqual([]);
    // A deadlock, say: the call fails, the store itself answers.
    const flaky = health.store as Store & { countJobs: () => Promise<unknown> };
    const original = store.countJobs;
    store.countJobs = async () => {
      throw unreachable();
    };
    await expect(flaky.countJobs()).rejects.toThrow('Cannot reach');
    store.countJobs = original;
    await settle();
    expect(health.up).toBe(true);
    expect(logger.lines).toEqual([]);
    expect(await gauge('workq_store_outages_total')).toBe(0);
    health.close();
  });

  it('logs an outage once when it starts and once when it ends, with its length and the requests that failed', async () => {
    const { store, state } = fakeStore();
    const { health, logger, gauge } = healthOf(store);
    state.down = true;
    for (let i = 0; i < 3; i++) {
      await expect(health.store.countJobs(new Date())).rejects.toThrow();
      health.requestFailed();
    }
    await expect.poll(() => health.up).toBe(false);
    expect(await gauge('workq_store_up')).toBe(0);
    expect(await gauge('workq_store_outages_total')).toBe(1);
    expect(await health.check()).toBe(false);
    expect(logger.lines).toEqual([
      {
        level: 'warn',
        message: expect.stringContaining('job store unreachable'),
        fields: { store: 'fake://store', error: 'Cannot reach the test store.' },
      },
    ]);

    state.down = false;
    // The periodic probe finds it back.
    await expect.poll(() => health.up).toBe(true);
    expect(await gauge('workq_store_up')).toBe(1);
    expect(logger.lines).toHaveLength(2);
    expect(logger.lines[1]).toMatchObject({
      level: 'info',
      message: 'job store reachable again',
      fields: { store: 'fake://store', failedRequests: 3, outageMs: expect.any(Number) },
    });
    health.close();
  });

  it('ignores failures that are not about reaching the store', async () => {
    const { store, state } = fakeStore();
    const { health, logger } = healthOf(store);
    store.countJobs = async () => {
      throw new WorkqError('UNAVAILABLE', 'A statement failed.', { retryable: false });
    };
    await expect(health.store.countJobs(new Date())).rejects.toThrow();
    await settle();
    expect(state.probes).toBe(0);
    expect(logger.lines).toEqual([]);
    health.close();
  });

  it("counts the calls of a store's optional parts as the store's own: a handoff that cannot reach it starts a probe", async () => {
    const { store, state } = fakeStore();
    const unreachableCall = async () => {
      await Promise.resolve();
      throw unreachable();
    };
    const withParts = Object.assign(store, {
      handoff: { insertAndClaimJob: unreachableCall },
      completeAndClaim: { completeAndClaimLimitedJobs: unreachableCall },
    });
    const { health } = healthOf(withParts);
    const { handoff, completeAndClaim } = health.store;
    await expect(handoff?.insertAndClaimJob({} as never, {} as never)).rejects.toThrow('Cannot reach');
    await expect.poll(() => state.probes).toBe(1);
    expect(health.store.handoff).toBe(handoff);
    await settle();
    await expect(completeAndClaim?.completeAndClaimLimitedJobs([], {} as never)).rejects.toThrow('Cannot reach');
    await expect.poll(() => state.probes).toBe(2);
    health.close();
  });

  it('probes the store with ping', async () => {
    const { store, state } = fakeStore();
    const { health } = healthOf(store);
    expect(await health.check()).toBe(true);
    state.down = true;
    expect(await health.check()).toBe(false);
    expect(state.probes).toBe(2);
    health.close();
  });
});
