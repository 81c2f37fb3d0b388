import type { JobRead } from '../../engine/store.ts';

/**
 * The stored values a `JobRead` may leave unread, in the order its options leave them: `withoutPayload` the
 * first, `withoutResult` the first three, `withoutValues` all four.
 */
export const VALUE_COLUMNS = ['payload', 'result', 'errors', 'error'] as const;

/** How many of `VALUE_COLUMNS`, from the first, `read` leaves unread. */
function unreadCount(read: JobRead): number {
  return read.withoutValues ? 4 : read.withoutResult ? 3 : read.withoutPayload ? 1 : 0;
}

/** Whether `read` leaves the job column (or document field) `column` unread. */
export function isUnread(column: string, read: JobRead): boolean {
  const place = (VALUE_COLUMNS as readonly string[]).indexOf(column);
  return place >= 0 && place < unreadCount(read);
}

/**
 * `make` once per way of reading (the reads that leave the same values unread share one), made when first asked
 * for: a store's select lists, built once rather than per call.
 */
export function perRead<T>(make: (read: JobRead) => T): (read: JobRead) => T {
  const made = new Map<number, T>();
  return (read) => {
    const count = unreadCount(read);
    let value = made.get(count);
    if (value === undefined) {
      value = make(read);
      made.set(count, value);
    }
    return value;
  };
}
