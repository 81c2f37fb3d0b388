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

/** A lease's fencing token: 122 random bits, unguessable by other workers. */
export function newLeaseToken(): string {
  return globalThis.crypto.randomUUID();
}
