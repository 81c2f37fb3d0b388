import { v7 as uuidv7 } from 'uuid';

/** Job ids are UUIDv7: unique, and ordered by creation time, which keyset paging relies on. */
export function newJobId(): string {
  return uuidv7();
}

/** A lease's fencing token: 122 random bits, unguessable by other workers. */
export function newLeaseToken(): string {
  return globalThis.crypto.randomUUID();
}
