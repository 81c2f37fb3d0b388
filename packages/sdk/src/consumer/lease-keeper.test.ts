import { describe, expect, it } from 'vitest';
import { JobAbort } from './lease-keeper.ts';

describe('JobAbort', () => {
  it('hands out a signal that is already aborted when it is first read after the abort', () => {
    const abort = new JobAbort();
    abort.abort('lost');
    abort.abort('second reason is ignored');
    expect([abort.aborted, abort.reason]).toEqual([true, 'lost']);
    expect([abort.signal.aborted, abort.signal.reason]).toEqual([true, 'lost']);
  });

  it('aborts a signal that was read before the abort, once', () => {
    const abort = new JobAbort();
    const reasons: unknown[] = [];
    abort.signal.addEventListener('abort', () => reasons.push(abort.signal.reason));
    expect(abort.aborted).toBe(false);
    abort.abort('closing');
    abort.abort('again');
    expect(reasons).toEqual(['closing']);
  });
});
