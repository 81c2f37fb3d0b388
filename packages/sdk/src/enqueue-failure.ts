import { WorkqError } from '@workq/core';
import { EnqueueAttemptsFailed } from './retry.ts';

/** The keys an enqueue was sent under: one for the job (or the whole batch), one per job, or none. */
export type SentKeys = string | readonly (string | null)[] | undefined;

/**
 * The error an enqueue ends with once its attempts ran out: the last
 * failure's code, and a message that says whether the job may have been
 * stored all the same and how to make sure. Other errors pass as they are.
 */
export function enqueueFailed(error: unknown, name: string, jobs: number, keys: SentKeys): unknown {
  if (!(error instanceof EnqueueAttemptsFailed)) return error;
  const { last, attempts, mayBeStored } = error;
  const what = jobs === 1 ? `Enqueue of "${name}"` : `Enqueue of ${jobs} "${name}" jobs`;
  const tried = attempts === 1 ? '' : ` after ${attempts} attempts`;
  const sentUnder = typeof keys === 'string' ? { idempotencyKey: keys } : keys ? { idempotencyKeys: keys } : {};
  return new WorkqError(
    last.code,
    `${what} failed${tried}: ${last.message} ${outcome(jobs === 1, mayBeStored, keys)}`,
    {
      retryable: true,
      cause: last,
      details: { attempts, mayBeStored, ...sentUnder },
    },
  );
}

function outcome(one: boolean, mayBeStored: boolean, keys: SentKeys): string {
  if (!mayBeStored) return `${one ? 'The job was' : 'The jobs were'} not stored: the request never reached the server.`;
  const stored = `${one ? 'The job' : 'The jobs'} may have been stored all the same`;
  const duplicate = one ? 'a second job' : 'duplicates';
  if (typeof keys === 'string') {
    return `${stored}: enqueue ${one ? 'it' : 'them'} again with idempotencyKey "${keys}" to be sure; that cannot make ${duplicate}.`;
  }
  if (keys) {
    return `${stored}: enqueue them again with the same keys (details.idempotencyKeys, one per job, in order) to be sure; that cannot make ${duplicate}.`;
  }
  return `${stored}; without an idempotencyKey, enqueueing again may make ${duplicate}.`;
}
