import type { RunConfig } from '../config.ts';
import { percentile } from '../stats.ts';
import type { QueueUnderTest } from '../systems/types.ts';
import type { Scenario } from './types.ts';

export function claimLabel(ready: number): string {
  return `claim p50 at ${ready.toLocaleString('en-US')} ready`;
}

/**
 * Claim latency with `ready` jobs waiting: the queue is filled in the
 * system's own tables, then `claimSamples` single-job claims are timed
 * (each acked right after, outside the timing). Figure: the p50.
 */
export function claimScenario(ready: number): Scenario {
  return {
    id: `claim-${ready}`,
    needs: 'claim',
    rows: () => [{ scenario: claimLabel(ready), concurrency: 1, unit: 'ms' }],
    async run(queue: QueueUnderTest, config: RunConfig) {
      if (!queue.seedReady || !queue.claimOne) throw new Error('this system cannot be seeded or claimed directly');
      await queue.seedReady(ready);
      const warmup = 5;
      const samples: number[] = [];
      for (let i = 0; i < config.claimSamples + warmup; i++) {
        const ms = await queue.claimOne();
        if (i >= warmup) samples.push(ms);
      }
      const completed = await queue.countCompleted();
      if (completed !== config.claimSamples + warmup) {
        throw new Error(`check failed: store shows ${completed} completed, expected ${config.claimSamples + warmup}`);
      }
      return [{ scenario: claimLabel(ready), concurrency: 1, value: percentile(samples, 50), unit: 'ms' }];
    },
  };
}
