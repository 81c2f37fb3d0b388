import { WorkqError } from '../errors.ts';
import { MAX_BATCH_SIZE } from '../jobs.ts';

/** A `VALIDATION` error when a batch call (`what`) is given more than `MAX_BATCH_SIZE` items. */
export function checkBatch(size: number, what: string): void {
  if (size > MAX_BATCH_SIZE) {
    throw new WorkqError('VALIDATION', `${what} takes at most ${MAX_BATCH_SIZE} items; got ${size}.`);
  }
}

/** `name` when it can name a job type in an admin call; a `VALIDATION` error otherwise. */
export function checkName(name: string): string {
  if (typeof name !== 'string' || name === '' || name.length > 100) {
    throw new WorkqError(
      'VALIDATION',
      `A job type name is a non-empty string of at most 100 characters; got ${String(name)}.`,
    );
  }
  return name;
}
