export { newJobId } from '../job-ids.ts';

/**
 * The least id a job created at `ms` (epoch milliseconds) can have: its time, then zeros, which sorts before
 * every UUIDv7 made at or after it. A keyset bound for "created at or after `ms`".
 */
export function firstIdAt(ms: number): string {
  const hex = Math.min(Math.max(0, Math.floor(ms)), 0xffff_ffff_ffff)
    .toString(16)
    .padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}

/**
 * A lease's fencing token: 122 random bits, unguessable by other workers. Given the time of its claim, the
 * token begins with it (epoch milliseconds in base 36, then `.`), so whichever server later sees the
 * lease end can tell how long it was held (`leaseClaimedAtMs`) without storing the claim time.
 */
export function newLeaseToken(claimedAt?: Date): string {
  const random = globalThis.crypto.randomUUID();
  return claimedAt === undefined ? random : `${claimedAt.getTime().toString(36)}.${random}`;
}

const CLAIM_TIME_PREFIX = /^([0-9a-z]{1,11})\./;

/** The claim time a lease token begins with (see `newLeaseToken`), in epoch milliseconds; `null` when it has none. */
export function leaseClaimedAtMs(leaseToken: string): number | null {
  const match = CLAIM_TIME_PREFIX.exec(leaseToken);
  if (!match) return null;
  const ms = Number.parseInt(match[1] as string, 36);
  return Number.isSafeInteger(ms) ? ms : null;
}
