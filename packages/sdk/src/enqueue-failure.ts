import { WorkqError } from '@workq/core';
import { EnqueueAttemptsFailed } from './retry.ts';

/** What an enqueue was sent under, each one for the job (or the whole batch), one per job, or none. */
export interface SentIds {
  ids: string | readonly (string | null)[] | undefined;
  keys: string | readonly (string | null)[] | undefined;
}

/**
 * The error an enqueue ends with once its attempts ran out: the last
 * failure's code, and a message that says whether the job may have been
 * stored all the same and how to make sure. Other errors pass as they are.
 */
export function enqueueFailed(error: unknown, name: string, jobs: number, sent: SentIds): unknown {
  if (!(error instanceof EnqueueAttemptsFailed)) return error;
  const { last, attempts, mayBeStored } = error;
  const what = jobs === 1 ? `Enqueue of "${name}"` : `Enqueue of ${jobs} "${name}" jobs`;
  const tried = attempts === 1 ? '' : ` after ${attempts} attempts`;
  const { ids, keys } = sent;
  const sentUnder = {
    ...(typeof ids === 'string' ? { id: ids } : ids ? { ids } : {}),
    ...(typeof keys === 'string'
      ? { idempotencyKey: keys }
      : keys?.some((key) => key !== null)
        ? { idempotencyKeys: keys }
        : {}),
  };
  return new WorkqError(
    last.code,
    `${what} failed${tried}: ${last.message} ${outcome(jobs === 1, mayBeStored, sent)}`,
    {
      retryable: true,
      cause: last,
      details: { attempts, mayBeStored, ...sentUnder },
    },
  );
}

function outcome(one: boolean, mayBeStored: boolean, { ids, keys }: SentIds): string {
  if (!mayBeStored) return `${one ? 'The job was' : 'The jobs were'} not stored: the request never reached the server.`;
  const stored = `${one ? 'The job' : 'The jobs'} may have been stored all the same`;
  const duplicate = one ? 'a second job' : 'duplicates';
  if (typeof ids === 'string') {
    return `${stored}: enqueue ${one ? 'it' : 'them'} again with id "${ids}" to be sure; that cannot make ${duplicate}.`;
  }
  if (ids?.every((id) => id !== null)) {
    return `${stored}: enqueue them again with the same ids (details.ids, one per job, in order) to be sure; that cannot make ${duplicate}.`;
  }
  if (typeof keys === 'string') {
    return `${stored}: enqueue ${one ? 'it' : 'them'} again with idempotencyKey "${keys}" to be sure; that cannot make ${duplicate}.`;
  }
  if (keys?.every((key) => key !== null)) {
    return `${stored}: enqueue them again with the same keys (details.idempotencyKeys, one per job, in order) to be sure; that cannot make ${duplicate}.`;
  }
  return `${stored}; without an id or idempotencyKey, enqueueing again may make ${duplicate}.`;
}
