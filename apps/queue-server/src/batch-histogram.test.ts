import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { BatchHistogram } from './batch-histogram.ts';

const BUCKETS = [0.005, 0.1, 1, 60];
const OBSERVED: [{ name: string; outcome: string }, number[]][] = [
  [{ name: 'mail', outcome: 'completed' }, [0.001, 0.005, 0.2, 0.2, 5, 120]],
  [{ name: 'pdf', outcome: 'dead' }, [0.05]],
  [{ name: 'mail', outcome: 'retry' }, [0, 1]],
  [{ name: 'mail', outcome: 'completed' }, [0.3]],
];

describe('BatchHistogram', () => {
  it('renders, for a batch observed per series, what a prom-client Histogram renders for each value observed alone', async () => {
    const expected = new Registry();
    const histogram = new Histogram({
      name: 'workq_test_seconds',
      help: 'Test',
      labelNames: ['name', 'outcome'],
      buckets: BUCKETS,
      registers: [expected],
    });
    for (const [labels, values] of OBSERVED) for (const value of values) histogram.observe(labels, value);

    const registry = new Registry();
    const batched = new BatchHistogram('workq_test_seconds', 'Test', ['name', 'outcome'], BUCKETS, registry);
    for (const [labels, values] of OBSERVED) {
      const series = batched.series(labels);
      for (const value of values) series.observe(value);
    }

    expect(await registry.metrics()).toBe(await expected.metrics());
  });

  it('starts again from nothing when the registry resets its metrics', async () => {
    const registry = new Registry();
    const batched = new BatchHistogram('workq_test_seconds', 'Test', ['name'], BUCKETS, registry);
    batched.series({ name: 'mail' }).observe(1);
    registry.resetMetrics();
    expect(await registry.metrics()).toBe('# HELP workq_test_seconds Test\n# TYPE workq_test_seconds histogram\n');
  });
});
