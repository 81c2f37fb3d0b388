import { isWorkqError } from '@workq/core';
import { describe, expect, it } from 'vitest';
import { timeLimitError, withinTimeLimit } from './time-limit.ts';

const never = new Promise<never>(() => undefined);

describe('withinTimeLimit', () => {
  it('resolves with what the handler returned before the deadline, and never calls onTimeout', async () => {
    let timedOut = false;
    const run = await withinTimeLimit(Promise.resolve(7), Date.now() + 50, () => {
      timedOut = true;
    });
    expect(run).toEqual({ timedOut: false, value: 7 });
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(timedOut).toBe(false);
  });

  it('rejects with what the handler threw before the deadline', async () => {
    const thrown = new Error('bad');
    await expect(withinTimeLimit(Promise.reject(thrown), Date.now() + 50, () => undefined)).rejects.toBe(thrown);
  });

  it('resolves timedOut at the deadline without waiting for the handler, after onTimeout ran', async () => {
    let timedOutAtMs: number | undefined;
    const startMs = Date.now();
    const run = await withinTimeLimit(never, startMs + 40, () => {
      timedOutAtMs = Date.now();
    });
    expect(run).toEqual({ timedOut: true });
    expect(timedOutAtMs! - startMs).toBeGreaterThanOrEqual(39);
  });

  it('leaves a handler that fails after the deadline unheard, with no unhandled rejection', async () => {
    const late = new Promise((_, reject) => setTimeout(() => reject(new Error('late')), 30));
    expect(await withinTimeLimit(late, Date.now(), () => undefined)).toEqual({ timedOut: true });
    await new Promise((resolve) => setTimeout(resolve, 50));
  });
});

it('names the job, its type and the limit in a TIMEOUT', () => {
  const error = timeLimitError('j1', 'render', 400);
  expect(isWorkqError(error, 'TIMEOUT')).toBe(true);
  expect(error.message).toBe('Job j1 (render) ran past its time limit of 400 ms (timeoutMs); stop work on it.');
});
