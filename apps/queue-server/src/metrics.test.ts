import type { CountScope, JobCount } from '@workq/core/engine';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ServerMetrics } from './metrics.ts';

afterEach(() => vi.useRealTimers());

describe('ServerMetrics: the workq_jobs gauge', () => {
  it('reads the live counts at each scrape and every state at most every minute, keeping the finished counts between', async () => {
    vi.useFakeTimers({ now: new Date('2026-01-01T00:00:00Z'), toFake: ['Date'] });
    const scopes: CountScope[] = [];
    let ready = 1;
    const metrics = new ServerMetrics(async (scope) => {
      scopes.push(scope);
      const live: JobCount[] = [{ name: 'mail', version: 1, state: 'ready', count: ready }];
      return scope === 'all' ? [...live, { name: 'mail', version: 1, state: 'dead', count: 7 }] : live;
    });
    const gauge = async () =>
      (await metrics.render()).body.split('\n').filter((line) => line.startsWith('workq_jobs{'));

    expect(await gauge()).toEqual([
      'workq_jobs{name="mail",version="1",state="ready"} 1',
      'workq_jobs{name="mail",version="1",state="dead"} 7',
    ]);
    ready = 2;
    vi.advanceTimersByTime(5_000);
    expect(await gauge()).toEqual([
      'workq_jobs{name="mail",version="1",state="ready"} 2',
      'workq_jobs{name="mail",version="1",state="dead"} 7',
    ]);
    vi.advanceTimersByTime(55_000);
    await gauge();
    expect(scopes).toEqual(['all', 'live', 'all']);
  });
});
