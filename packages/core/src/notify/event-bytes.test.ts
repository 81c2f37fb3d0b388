import { describe, expect, it } from 'vitest';
import { encodeEventBatch, eventBatchBytes } from '../event-wire.ts';
import type { JobEventRun } from '../events.ts';
import { valueBytes } from '../value-bytes.ts';
import { runBytes } from './event-bytes.ts';

describe('valueBytes', () => {
  it('counts strings by length, numbers and other scalars as eight, keys by length', () => {
    expect(valueBytes('x'.repeat(1_000))).toBe(1_002);
    expect(valueBytes(42)).toBe(8);
    expect(valueBytes({ ab: 'cd' })).toBe(2 + 2 + 3 + 4);
    expect(valueBytes([1, 'a'])).toBe(2 + 8 + 3);
  });

  it('counts what superjson carries besides JSON, and a value reached twice once, circular ones included', () => {
    const big = 'y'.repeat(10_000);
    expect(valueBytes(new Map([['k', big]]))).toBeGreaterThan(10_000);
    expect(valueBytes(new Set([big]))).toBeGreaterThan(10_000);
    expect(valueBytes(new Uint8Array(5_000))).toBeGreaterThanOrEqual(5_000);
    const shared = { big };
    expect(valueBytes([shared, shared])).toBeLessThan(10_100);
    const loop: Record<string, unknown> = { big };
    loop.self = loop;
    expect(valueBytes(loop)).toBeLessThan(10_100);
  });
});

/** Two runs of one type: `enqueued`, and `completed` with a result of 100,000 characters for its first job. */
function mailRuns(at: Date): [JobEventRun, JobEventRun] {
  return [
    { type: 'enqueued', name: 'mail', at, ids: ['a', 'b'], versions: [1, 1] },
    {
      type: 'completed',
      name: 'mail',
      at,
      ids: ['a', 'b'],
      versions: [1, 1],
      details: [{ result: 'r'.repeat(100_000) }, undefined],
    },
  ];
}

describe('runBytes', () => {
  it("counts each event and what its details carry, a result's size above all", () => {
    const [enqueued, completed] = mailRuns(new Date());
    const small = runBytes(enqueued);
    const large = runBytes(completed);
    expect(large - small).toBeGreaterThan(100_000);
    expect(large - small).toBeLessThan(100_100);
  });
});

describe('eventBatchBytes', () => {
  it('counts a batch as it arrives on the stream as runBytes counts its runs, so client and server agree', () => {
    const at = new Date();
    const runs = mailRuns(at);
    const batch = encodeEventBatch([...runs, { type: 'resync', at }]);
    const counted = runs.reduce((sum, run) => sum + runBytes(run), 0);
    expect(eventBatchBytes(batch)).toBeGreaterThan(counted);
    expect(eventBatchBytes(batch)).toBeLessThan(counted + 1_000);
  });
});
