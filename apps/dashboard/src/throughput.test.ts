import { describe, expect, it } from 'vitest';
import { ThroughputCounter, WINDOW_MINUTES } from './throughput.ts';

const NOW = Date.parse('2026-06-01T12:00:30Z');
const MINUTE = 60_000;
const at = (msAgo: number) => new Date(NOW - msAgo);

describe('ThroughputCounter', () => {
  it('counts per minute of the last hour, oldest first, the current minute last', () => {
    const counter = new ThroughputCounter();
    counter.count({ name: 'a', id: '1', kind: 'completed', at: at(0) }, NOW);
    counter.count({ name: 'a', id: '2', kind: 'completed', at: at(10_000) }, NOW);
    counter.count({ name: 'a', id: '3', kind: 'failed', attempt: 1, at: at(5 * MINUTE) }, NOW);
    counter.count({ name: 'b', id: '4', kind: 'completed', at: at(0) }, NOW);
    const { completed, failed } = counter.series('a', NOW);
    expect(completed).toHaveLength(WINDOW_MINUTES);
    expect(completed.at(-1)).toBe(2);
    expect(failed.at(-6)).toBe(1);
    expect(completed.reduce((sum, n) => sum + n, 0)).toBe(2);
    expect(counter.series('b', NOW).completed.at(-1)).toBe(1);
  });

  it('counts a completion once and a failure once per attempt, however often each is seen', () => {
    const counter = new ThroughputCounter();
    for (let i = 0; i < 2; i++) {
      counter.count({ name: 'a', id: '1', kind: 'completed', at: at(0) }, NOW);
      counter.count({ name: 'a', id: '2', kind: 'failed', attempt: 1, at: at(0) }, NOW);
      counter.count({ name: 'a', id: '2', kind: 'failed', attempt: 2, at: at(0) }, NOW);
    }
    expect(counter.series('a', NOW).completed.at(-1)).toBe(1);
    expect(counter.series('a', NOW).failed.at(-1)).toBe(2);
  });

  it('leaves out what finished before the hour, and forgets minutes as they pass out of it', () => {
    const counter = new ThroughputCounter();
    counter.count({ name: 'a', id: 'old', kind: 'completed', at: at(WINDOW_MINUTES * MINUTE + MINUTE) }, NOW);
    counter.count({ name: 'a', id: 'new', kind: 'completed', at: at(0) }, NOW);
    expect(counter.series('a', NOW).completed.reduce((sum, n) => sum + n, 0)).toBe(1);
    const later = NOW + WINDOW_MINUTES * MINUTE;
    counter.count({ name: 'a', id: 'newer', kind: 'completed', at: new Date(later) }, later);
    expect(counter.series('a', later).completed.reduce((sum, n) => sum + n, 0)).toBe(1);
  });
});
