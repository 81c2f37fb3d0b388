import { expect, it } from 'vitest';
import type { SuiteContext } from './context.ts';

/** Versions: a consumer never receives a job newer than it declares; unreadable jobs wait, never fail. */
export function registerVersionTests(ctx: SuiteContext): void {
  it('claims with maxVersion 1 never return a v2 job; v2 jobs wait untouched until a maxVersion 2 claim', async () => {
    const name = ctx.jobName('versions');
    const { engine, clock } = ctx.engine();
    const enqueued = await engine.enqueueMany(
      [1, 2, 1, 2, 1].map((version, n) => ({ name, version, payload: { n }, options: { leaseMs: 1_000 } })),
    );
    const v1Ids = enqueued.filter((_, n) => n % 2 === 0).map((r) => r.id);
    const v2Ids = enqueued.filter((_, n) => n % 2 === 1).map((r) => r.id);

    const v1 = await engine.claim({ name, maxVersion: 1, limit: 10, workerId: 'old-worker' });
    expect(v1.map((j) => j.id).sort()).toEqual([...v1Ids].sort());
    expect(v1.every((j) => j.version === 1)).toBe(true);
    await engine.completeMany(v1);

    for (const step of [1_001, 3_600_000, 86_400_000]) {
      clock.advance(step);
      expect(await engine.claim({ name, maxVersion: 1, limit: 10, workerId: 'old-worker' })).toEqual([]);
    }
    for (const id of v2Ids) {
      const status = await engine.get(id);
      expect(status).toMatchObject({ state: 'ready', attempts: 0, version: 2 });
      expect(status.error).toBeUndefined();
    }

    const v2 = await engine.claim({ name, maxVersion: 2, limit: 10, workerId: 'new-worker' });
    expect(v2.map((j) => j.id).sort()).toEqual([...v2Ids].sort());
    expect(v2.every((j) => j.version === 2 && j.attempt === 1)).toBe(true);
  });

  it('minVersion excludes older jobs, which stay ready for another consumer', async () => {
    const name = ctx.jobName('min-version');
    const { engine } = ctx.engine();
    const [v1, v2, v3] = await engine.enqueueMany([1, 2, 3].map((version) => ({ name, version, payload: {} })));

    const claimed = await engine.claim({ name, minVersion: 2, maxVersion: 2, limit: 10, workerId: 'w1' });
    expect(claimed.map((j) => j.id)).toEqual([v2!.id]);
    expect((await engine.get(v1!.id)).state).toBe('ready');
    expect((await engine.get(v3!.id)).state).toBe('ready');
    const wide = await engine.claim({ name, minVersion: 1, maxVersion: 3, limit: 10, workerId: 'w2' });
    expect(wide.map((j) => j.id).sort()).toEqual([v1!.id, v3!.id].sort());
  });

  it('the version range applies before the limit: a batch skips newer jobs rather than stopping at them', async () => {
    const name = ctx.jobName('version-limit');
    const { engine } = ctx.engine();
    await engine.enqueueMany(
      Array.from({ length: 10 }, () => ({ name, version: 2, payload: {}, options: { priority: 9 } })),
    );
    const old = await engine.enqueue({ name, version: 1, payload: {} });
    const claimed = await engine.claim({ name, maxVersion: 1, limit: 3, workerId: 'w1' });
    expect(claimed.map((j) => j.id)).toEqual([old.id]);
  });
}
