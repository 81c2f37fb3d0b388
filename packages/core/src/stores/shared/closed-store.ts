import { WorkqError } from '../../errors.ts';

/** What `ping` of a store its owner closed fails with: the store answers nothing any more. */
export function storeClosed(kind: string): WorkqError {
  return new WorkqError('UNAVAILABLE', `The ${kind} store is closed; open a new one.`, { retryable: false });
}
