import { WorkqError } from '../errors.ts';
import type { Catalog } from './types.ts';

/** Job names travel in URLs, logs and database keys: letters first, then letters, digits, `_`, `-` or `.`. */
const JOB_NAME = /^[A-Za-z][A-Za-z0-9_.-]{0,99}$/;

/** Declares a deployment's job types. Fails with a `VALIDATION` error on a bad name or a value that is not a `defineJob` result. */
export function defineCatalog<const C extends Catalog>(jobs: C): C {
  for (const [name, definition] of Object.entries(jobs)) {
    if (!JOB_NAME.test(name)) {
      throw new WorkqError(
        'VALIDATION',
        `Job name "${name}" is not allowed: use 1-100 letters, digits, "_", "-" or ".", starting with a letter.`,
      );
    }
    if (definition?.kind !== 'workq.job') {
      throw new WorkqError('VALIDATION', `Catalog entry "${name}" is not a job: declare it with defineJob({...}).`);
    }
  }
  return Object.freeze({ ...jobs });
}

export function isValidJobName(name: string): boolean {
  return JOB_NAME.test(name);
}
