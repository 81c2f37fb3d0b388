import type { JobRead } from '../../engine/store.ts';

/** The stored values a `JobRead` may leave unread: the payload, or with `withoutValues` all of these. */
export const VALUE_COLUMNS = ['payload', 'result', 'error', 'errors'] as const;

const VALUES: ReadonlySet<string> = new Set(VALUE_COLUMNS);

/** Whether `read` leaves the job column (or document field) `column` unread. */
export function isUnread(column: string, read: JobRead): boolean {
  return read.withoutValues ? VALUES.has(column) : column === 'payload' && read.withoutPayload === true;
}
