import { WorkqError } from './errors.ts';

/** Random bytes for 256 ids, drawn at once, so that an enqueue does not pay for a `getRandomValues` call per id. */
const POOL_IDS = 256;
const pool = new Uint8Array(16 * POOL_IDS);
let poolNext = POOL_IDS;

/** The offset in `pool` of 16 fresh random bytes. */
function randomOffset(): number {
  if (poolNext === POOL_IDS) {
    globalThis.crypto.getRandomValues(pool);
    poolNext = 0;
  }
  return 16 * poolNext++;
}

/** The last id's millisecond and sequence, so ids made within one millisecond still ascend. */
const last = { msecs: Number.NEGATIVE_INFINITY, seq: 0, prefix: '' };

/**
 * A new job id: a UUIDv7, unique, and ordered by creation time on the clock that made it, so jobs made one
 * after the other sort in that order (keyset paging, and the tie between jobs due in the same millisecond).
 * Within one millisecond the 31-bit sequence counts up from a random start (RFC 9562, method 1), laid out as
 * the `uuid` package lays out its own (`v7({ random, msecs, seq })` gives the same text); only the random
 * bytes come from a pool. Browser-safe: the SDK makes the ids of the jobs it enqueues with it (a thousand for
 * one `enqueueMany`), the engine those of jobs that come without one.
 */
export function newJobId(): string {
  const at = randomOffset();
  const now = Date.now();
  if (now > last.msecs) {
    last.msecs = now;
    last.seq = (((pool[at + 6] as number) & 0x7f) << 24) | ((pool[at + 7] as number) << 16);
    last.seq |= ((pool[at + 8] as number) << 8) | (pool[at + 9] as number);
    last.prefix = timePrefix(now);
  } else {
    last.seq = (last.seq + 1) | 0;
    if (last.seq === 0) {
      last.msecs++;
      last.prefix = timePrefix(last.msecs);
    }
  }
  return jobIdText(last.prefix, last.seq, pool, at);
}

/** Each byte as two lower-case hex digits. */
const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/** The first 48 bits of a UUIDv7, `msecs`, as its text: `xxxxxxxx-xxxx-`. */
function timePrefix(msecs: number): string {
  const high = Math.floor(msecs / 0x10000);
  const low = msecs % 0x10000;
  return `${(high >>> 0).toString(16).padStart(8, '0')}-${low.toString(16).padStart(4, '0')}-`;
}

/**
 * The text of the UUIDv7 after `prefix` (its time, from `timePrefix`): version 7, the 31-bit `seq` in the
 * bits after it and the variant, then two bits and five bytes of `random` from `at`.
 */
function jobIdText(prefix: string, seq: number, random: Uint8Array, at: number): string {
  const b6 = 0x70 | ((seq >>> 28) & 0x0f);
  const b8 = 0x80 | ((seq >>> 14) & 0x3f);
  const b10 = ((seq << 2) & 0xff) | ((random[at + 10] as number) & 0x03);
  return `${prefix}${HEX[b6]}${HEX[(seq >>> 20) & 0xff]}-${HEX[b8]}${HEX[(seq >>> 6) & 0xff]}-${HEX[b10]}${
    HEX[random[at + 11] as number]
  }${HEX[random[at + 12] as number]}${HEX[random[at + 13] as number]}${HEX[random[at + 14] as number]}${
    HEX[random[at + 15] as number]
  }`;
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
