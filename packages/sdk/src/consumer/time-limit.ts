import { WorkqError } from '@workq/core';

/** What a handler run under a time limit came to: its value, or the limit first. */
export type TimedRun = { timedOut: false; value: unknown } | { timedOut: true };

/**
 * Waits for a handler's outcome (`running`) until `deadlineMs` (epoch ms, this process's clock). At the
 * deadline it calls `onTimeout`, which aborts the job's signal, and resolves `timedOut` at once, without
 * waiting for the handler: one that ignores its signal runs on unwatched, its outcome dropped, and its slot
 * takes the next job. A handler that fails before the deadline rejects with its error.
 */
export function withinTimeLimit(running: unknown, deadlineMs: number, onTimeout: () => void): Promise<TimedRun> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => {
        resolve({ timedOut: true });
        onTimeout();
      },
      Math.max(0, deadlineMs - Date.now()),
    );
    Promise.resolve(running).then(
      (value) => {
        clearTimeout(timer);
        resolve({ timedOut: false, value });
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/** The reason a timed-out job's signal aborts with, and the failure its attempt is recorded with. */
export function timeLimitError(id: string, name: string, timeoutMs: number): WorkqError {
  return new WorkqError(
    'TIMEOUT',
    `Job ${id} (${name}) ran past its time limit of ${timeoutMs} ms (timeoutMs); stop work on it.`,
  );
}
