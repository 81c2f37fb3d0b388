import { v7 as uuidv7 } from 'uuid';

/** Random bytes for 256 ids, drawn at once, so that an enqueue does not pay for a `getRandomValues` call per id. */
const POOL_IDS = 256;
const pool = new Uint8Array(16 * POOL_IDS);
let poolNext = POOL_IDS;

function randomBytes16(): Uint8Array {
  if (poolNext === POOL_IDS) {
    globalThis.crypto.getRandomValues(pool);
    poolNext = 0;
  }
  const at = 16 * poolNext++;
  return pool.subarray(at, at + 16);
}

/** The last id's millisecond and sequence, so ids made within one millisecond still ascend. */
const last = { msecs: Number.NEGATIVE_INFINITY, seq: 0 };

/**
 * Job ids are UUIDv7: unique, and ordered by creation time, which keyset
 * paging and FIFO order rely on. Within one millisecond the 31-bit sequence
 * counts up from a random start (RFC 9562, method 1), as the `uuid` package
 * does for its own state; only the random bytes come from a pool.
 */
export function newJobId(): string {
  const random = randomBytes16();
  const now = Date.now();
  if (now > last.msecs) {
    last.msecs = now;
    const [, , , , , , r6 = 0, r7 = 0, r8 = 0, r9 = 0] = random;
    last.seq = ((r6 & 0x7f) << 24) | (r7 << 16) | (r8 << 8) | r9;
  } else {
    last.seq = (last.seq + 1) | 0;
    if (last.seq === 0) last.msecs++;
  }
  return uuidv7({ random, msecs: last.msecs, seq: last.seq });
}

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
