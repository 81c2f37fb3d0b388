import type { Document } from 'bson';
import { wireError } from './errors.ts';

/** Command options the double does not model, which it refuses rather than ignore. */
const UNMODELLED = ['collation', 'arrayFilters'] as const;

/** The places a command carries options: the command itself, each of its statements, and each index it builds. */
function optionHolders(body: Document): Document[] {
  const nested = ['updates', 'deletes', 'indexes'].flatMap((field) =>
    Array.isArray(body[field]) ? (body[field] as Document[]) : [],
  );
  return [body, ...nested];
}

/**
 * Refuses a command that sets an option the double does not model (`collation`, `arrayFilters`) with
 * NotImplemented (238): the server would apply it, so running the command without it would answer what no
 * server answers.
 */
export function refuseUnmodelled(name: string, body: Document): void {
  for (const holder of optionHolders(body)) {
    const option = UNMODELLED.find((field) => holder[field] !== undefined);
    if (option) {
      throw wireError(
        238,
        `the MongoDB wire double does not model '${option}' (in ${name}); it refuses it rather than ignore it`,
      );
    }
  }
}
