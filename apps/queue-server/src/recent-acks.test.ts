import { describe, expect, it } from 'vitest';
import { RecentAcks } from './recent-acks.ts';

describe('RecentAcks', () => {
  it('answers for an ack under the token that applied it, not under another', () => {
    const acks = new RecentAcks(10);
    acks.remember('job-1', 'token-a');
    expect(acks.wasApplied('job-1', 'token-a')).toBe(true);
    expect(acks.wasApplied('job-1', 'token-b')).toBe(false);
    expect(acks.wasApplied('job-2', 'token-a')).toBe(false);
  });

  it('keeps at most its capacity, forgetting the oldest first and always keeping the latest half', () => {
    const acks = new RecentAcks(10);
    for (let n = 0; n < 1_000; n++) acks.remember(`job-${n}`, `token-${n}`);
    const remembered = Array.from({ length: 1_000 }, (_, n) => acks.wasApplied(`job-${n}`, `token-${n}`));
    const kept = remembered.filter(Boolean).length;
    expect(kept).toBeGreaterThanOrEqual(5);
    expect(kept).toBeLessThanOrEqual(10);
    // What is kept is the most recent run of acks, ending with the last one.
    expect(remembered.slice(1_000 - kept).every(Boolean)).toBe(true);
  });
});
