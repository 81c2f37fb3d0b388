import { afterEach, expect } from 'vitest';
import { newJobId } from '../../src/engine/ids.ts';
import type { NewJob } from '../../src/engine/store.ts';
import { WorkqError } from '../../src/errors.ts';

const FIXED_NOW = new Date('2026-01-01T00:00:00.000Z');

/** A ready job of `name` as a store receives it, with fixed options; `overrides` change any field. */
export function newJob(name: string, overrides: Partial<NewJob> = {}): NewJob {
  return {
    id: newJobId(),
    name,
    version: 1,
    payload: { n: 1 },
    priority: 0,
    order: 'fifo',
    runAt: FIXED_NOW,
    createdAt: FIXED_NOW,
    maxAttempts: 3,
    backoff: { type: 'fixed', delayMs: 0 },
    leaseMs: 30_000,
    idempotencyKey: null,
    idempotencyExpiresAt: null,
    debounceKey: null,
    replayOf: null,
    traceContext: null,
    ...overrides,
  };
}

/** The `WorkqError` a promise rejects with; fails the test if it resolves or rejects with anything else. */
export async function rejection(promise: Promise<unknown>): Promise<WorkqError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(WorkqError);
  return error as WorkqError;
}

/** The `VALIDATION` `WorkqError` that `run` throws; fails the test if it returns or throws anything else. */
export function validationError(run: () => unknown): WorkqError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(WorkqError);
    expect((error as WorkqError).code).toBe('VALIDATION');
    return error as WorkqError;
  }
  throw new Error('expected a VALIDATION error');
}

/**
 * Opens a store whose server cannot be reached and checks how it fails: a retryable `UNAVAILABLE`, within
 * `withinMs`, whose message names the server (`names`, its host and port) and never the password (`hides`).
 */
export async function expectUnreachable(
  open: () => Promise<unknown>,
  { names, hides, withinMs }: { names: string; hides: string; withinMs: number },
): Promise<void> {
  const started = Date.now();
  const error = await rejection(open());
  expect(Date.now() - started).toBeLessThan(withinMs);
  expect(error).toMatchObject({ code: 'UNAVAILABLE', retryable: true });
  expect(error.message).toContain(names);
  expect(error.message).not.toContain(hides);
}

/** A list of what a test opens: everything on it is closed after each test of the calling file or block. */
export function closedAfterEach<T extends { close(): Promise<unknown> }>(): T[] {
  const open: T[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((item) => item.close()));
  });
  return open;
}
