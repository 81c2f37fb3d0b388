import type { RunConfig } from '../config.ts';
import { percentile } from '../stats.ts';
import type { QueueUnderTest } from '../systems/types.ts';
import type { Scenario } from './types.ts';

export function claimLabel(ready: number): string {
  return `claim p50 at ${ready.toLocaleString('en-US')} ready`;
}

const WARMUP_CLAIMS = 5;

/** How many claims `claimP50` makes (and so how many jobs it completes): the samples and the warm-up. */
export function claimsTimed(config: RunConfig): number {
  return config.claimSamples + WARMUP_CLAIMS;
}

/** Times `claimSamples` single-job claims through `claimOne`, after a few untimed ones; resolves to their p50. */
export async function claimP50(claimOne: () => Promise<number>, config: RunConfig): Promise<number> {
  return (await claimP50s([claimOne], config))[0] as number;
}

/**
 * As `claimP50` for each of `claimers` on the same queue, their claims taken in turn (one of each, then again), so
 * that what the machine is doing meanwhile weighs on each alike; resolves to their p50s, in order.
 */
export async function claimP50s(claimers: readonly (() => Promise<number>)[], config: RunConfig): Promise<number[]> {
  const samples: number[][] = claimers.map(() => []);
  for (let i = 0; i < claimsTimed(config); i++) {
    for (const [c, claimOne] of claimers.entries()) {
      const ms = await claimOne();
      if (i >= WARMUP_CLAIMS) samples[c]?.push(ms);
    }
  }
  return samples.map((s) => percentile(s, 50));
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
      const p50 = await claimP50(queue.claimOne, config);
      const completed = await queue.countCompleted();
      if (completed !== claimsTimed(config)) {
        throw new Error(`check failed: store shows ${completed} completed, expected ${claimsTimed(config)}`);
      }
      return [{ scenario: claimLabel(ready), concurrency: 1, value: p50, unit: 'ms' }];
    },
  };
}
