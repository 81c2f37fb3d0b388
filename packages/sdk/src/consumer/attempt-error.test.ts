import { WorkqError } from '@workq/core';
import { describe, expect, it } from 'vitest';
import { describeThrown, MAX_ERROR_STACK, trimStack } from './attempt-error.ts';
import { whatToCheck } from './claim-failures.ts';

describe('a failed attempt as it is sent', () => {
  it("keeps the error's class and message, and its stack without the runtime's frames, cut at a line within 4 KiB", () => {
    const frames = Array.from({ length: 300 }, (_, i) => `    at step${i} (/srv/app/convert.ts:${i + 1}:7)`);
    const error = new RangeError('quality out of range');
    error.stack = [
      'RangeError: quality out of range',
      '    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)',
      ...frames,
    ].join('\n');
    const sent = describeThrown(error);
    expect(sent).toMatchObject({ errorName: 'RangeError', message: 'quality out of range' });
    expect(sent.stack?.length).toBeLessThanOrEqual(MAX_ERROR_STACK);
    expect(sent.stack).not.toContain('node:internal');
    expect(sent.stack?.split('\n').slice(0, 2)).toEqual(['RangeError: quality out of range', frames[0]]);
    expect(frames).toContain(sent.stack?.split('\n').at(-1));
    expect(describeThrown('a string')).toEqual({ message: 'a string' });
    expect(trimStack('x'.repeat(5_000))).toHaveLength(MAX_ERROR_STACK);
  });

  it('says what to check for a host that cannot be found', () => {
    const lookup = Object.assign(new Error('getaddrinfo ENOTFOUND queue.internal'), { code: 'ENOTFOUND' });
    const failure = new WorkqError('UNAVAILABLE', 'Cannot reach the queue server', { cause: lookup });
    expect(whatToCheck('http://queue.internal:4000', failure)).toBe(
      'the host of http://queue.internal:4000 cannot be found (ENOTFOUND): is the URL right?',
    );
  });
});
