import { v7 as uuidv7 } from 'uuid';
import { WorkqError } from './errors.ts';

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
 * A new job id: a UUIDv7, unique, and ordered by creation time on the clock that made it, so jobs made one
 * after the other sort in that order (keyset paging, and the tie between jobs due in the same millisecond).
 * Within one millisecond the 31-bit sequence counts up from a random start (RFC 9562, method 1), as the
 * `uuid` package does for its own state; only the random bytes come from a pool. Browser-safe: the SDK makes
 * the ids of the jobs it enqueues with it, the engine those of jobs that come without one.
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

const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** `UUID_TEXT` in lower case only: the form the SDK and the engine make, taken as it is. */
const LOWER_UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * A caller-chosen job id (`EnqueueOptions.id`), as stored: a UUID in its 36-character text form, any version,
 * in lower case (an upper-case id names the same job). Every store keys jobs by this form, and the claim
 * order's tie-break and keyset paging compare it as text. `null` when none was given; `VALIDATION` otherwise.
 */
export function checkJobId(id: unknown): string | null {
  if (id === undefined || id === null) return null;
  if (typeof id === 'string' && LOWER_UUID_TEXT.test(id)) return id;
  if (typeof id !== 'string' || !UUID_TEXT.test(id)) {
    throw new WorkqError(
      'VALIDATION',
      `id must be a UUID such as 0190a8c4-3f2e-7c1a-9b6d-2f4e5a6b7c8d (36 characters, hex digits and dashes); got ${describe(id)}. Make one with crypto.randomUUID() or a UUIDv7 library, and keep it to enqueue the same job again.`,
    );
  }
  return id.toLowerCase();
}

function describe(value: unknown): string {
  if (typeof value !== 'string') return typeof value;
  return value.length > 40 ? `a string of ${value.length} characters` : JSON.stringify(value);
}
