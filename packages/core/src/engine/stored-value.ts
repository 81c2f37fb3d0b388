import superjson, { SuperJSON, type SuperJSONResult } from 'superjson';
import { WorkqError } from '../errors.ts';

/**
 * The key of the one-key object that carries a value plain JSON would change.
 * No `$` and no `.`, so every store keeps it as an ordinary field name.
 */
const ENCODED = '__superjson';

/** Encodes a value reached twice (shared or circular) once, so what is stored never repeats it. */
const encoder = new SuperJSON({ dedupe: true });

/** The most levels of arrays and objects a payload or result may nest, as stored. */
export const MAX_STORED_DEPTH = 64;

/**
 * Payloads and results as stores keep them: JSON. A value that is plain JSON
 * (the common case) is stored as it is, so it stays readable and queryable
 * in the database. A value JSON would change — a `bigint`, a `Date`, a `Map`
 * or `Set`, `undefined` in an array, `NaN`, shared or circular references —
 * is stored as `{ "__superjson": { json, meta } }`, the same encoding the
 * wire uses, and comes back from `fromStoredValue` as it went in. So does a
 * plain object whose only key is `__superjson`, so that decoding is never
 * ambiguous.
 *
 * Refused with `VALIDATION`, the same on every store, naming where: text
 * with a NUL character or a lone UTF-16 surrogate (PostgreSQL cannot keep
 * either, the drivers of the others would store them differently or change
 * them), and arrays and objects nested more than `MAX_STORED_DEPTH` levels.
 * `what` names the value in the message, e.g. `Payload of "sendEmail"`.
 */
export function toStoredValue(value: unknown, what = 'The value'): unknown {
  if (value === undefined) return null;
  if (plainStoredBytesBound(value) !== undefined) return value;
  if (checkStorable(value, what)) return isEncoded(value) ? { [ENCODED]: { json: value } } : value;
  let encoded: SuperJSONResult;
  try {
    encoded = encoder.serialize(value);
  } catch (error) {
    if (error instanceof RangeError) throw tooDeep(what, '');
    throw error;
  }
  checkStorable(encoded.json, what);
  return { [ENCODED]: encoded };
}

/**
 * For a value `toStoredValue` stores as it is, found in one walk that allocates nothing — plain JSON (as
 * `checkStorable` defines it) whose text, keys included, has no character that may be unstorable, nested at
 * most `MAX_STORED_DEPTH` levels in at most `UNTRACKED_CONTAINERS` containers, and not a one-key
 * `__superjson` object — an upper bound of the UTF-8 bytes of its JSON text (each character of a string or
 * key counted as 6, the most JSON escapes one to). `undefined` for any other value, which `toStoredValue`
 * and the exact measure then walk in full: a string with a surrogate pair (well-formed, but one scan cannot
 * tell it from a lone surrogate) takes that path too. The check every payload of a bulk enqueue takes.
 */
export function plainStoredBytesBound(value: unknown): number | undefined {
  if (isEncoded(value)) return undefined;
  plainWalkContainers = 0;
  const bytes = plainBytes(value, 0);
  return bytes < 0 ? undefined : bytes;
}

/** Containers the current `plainBytes` walk has entered (one walk at a time: it never awaits). */
let plainWalkContainers = 0;
/** The most characters a finite number takes in JSON (`-2.2250738585072014e-308`). */
const NUMBER_MAX_CHARS = 24;

/** `value`'s bound for `plainStoredBytesBound`, or -1 when it is not such a value. */
function plainBytes(value: unknown, depth: number): number {
  if (typeof value === 'string') return SUSPECT_CHARACTER.test(value) ? -1 : 6 * value.length + 2;
  if (value === null) return 4;
  if (typeof value === 'boolean') return 5;
  if (typeof value === 'number') return Number.isFinite(value) && !Object.is(value, -0) ? NUMBER_MAX_CHARS : -1;
  if (typeof value !== 'object' || depth >= MAX_STORED_DEPTH || ++plainWalkContainers > UNTRACKED_CONTAINERS) {
    return -1;
  }
  // Brackets or braces, and a comma (or colon) after every item.
  let bytes = 2;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item = plainBytes(value[i], depth + 1);
      if (item < 0) return -1;
      bytes += item + 1;
    }
    return bytes;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return -1;
  for (const key in value) {
    const item = (value as Record<string, unknown>)[key];
    if (item === undefined) continue;
    const itemBytes = SUSPECT_CHARACTER.test(key) ? -1 : plainBytes(item, depth + 1);
    if (itemBytes < 0) return -1;
    bytes += 6 * key.length + 4 + itemBytes;
  }
  return bytes;
}

/** The value `toStoredValue` was given, from what a store read back. */
export function fromStoredValue(stored: unknown): unknown {
  if (!isEncoded(stored)) return stored;
  return superjson.deserialize((stored as Record<typeof ENCODED, SuperJSONResult>)[ENCODED]);
}

/**
 * `text` as every store keeps it: each NUL and lone surrogate replaced by
 * U+FFFD. For free text such as an error message, which is recorded rather
 * than refused.
 */
export function toStoredText(text: string): string {
  if (!SUSPECT_CHARACTER.test(text)) return text;
  return text.replace(UNSTORABLE_CHARACTERS, '\uFFFD');
}

function isEncoded(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  for (const key in value) if (key !== ENCODED) return false;
  return ENCODED in value;
}

/** Any character that may be unstorable: one test per string, so well-formed text costs one scan. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is one of the characters looked for.
const SUSPECT_CHARACTER = /[\u0000\uD800-\uDFFF]/;
/** NUL, and surrogates that are not half of a pair. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is one of the characters looked for.
const UNSTORABLE_CHARACTERS = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

type Problem = 'nul' | 'surrogate';

function problemOf(text: string): Problem | undefined {
  if (!SUSPECT_CHARACTER.test(text)) return undefined;
  UNSTORABLE_CHARACTERS.lastIndex = 0;
  const found = UNSTORABLE_CHARACTERS.exec(text);
  if (found === null) return undefined;
  return found[0] === '\u0000' ? 'nul' : 'surrogate';
}

/** Containers a walk enters before it remembers each one, so a value with shared references costs no more than its size. */
const UNTRACKED_CONTAINERS = 10_000;

/** Thrown, and caught, to walk again from the start, remembering every container. */
const TRACK_FROM_START = new Error('walk again, remembering every container');

interface Walk {
  what: string;
  /** The key of each step on the path to the value being visited, for messages. */
  keys: (string | number)[];
  /** The containers on that path. */
  path: object[];
  /** Every container entered, once the walk remembers them. */
  entered: Set<object> | undefined;
  /** Containers entered so far, until then. */
  containers: number;
}

/**
 * One walk of `root`: refuses unstorable text (in values and keys) and
 * nesting deeper than `MAX_STORED_DEPTH`; resolves to whether the value is
 * plain JSON — null, booleans, strings, finite numbers (not -0), and arrays
 * and plain objects of those, with no cycle (an object key set to
 * `undefined` counts as plain: JSON drops it, and an absent key reads the
 * same). Other values (bigint, Date, Map, …) are not entered: their encoding
 * is checked instead. A value with more containers than
 * `UNTRACKED_CONTAINERS` is walked again entering each container once, a
 * container reached twice then counting as not plain (superjson stores it
 * once), so shared references cannot make the walk, or what is stored,
 * exponential.
 */
function checkStorable(root: unknown, what: string): boolean {
  const walk: Walk = { what, keys: [], path: [], entered: undefined, containers: 0 };
  try {
    return visit(root, 0, walk);
  } catch (error) {
    if (error !== TRACK_FROM_START) throw error;
    walk.entered = new Set();
    return visit(root, 0, walk);
  }
}

function visit(value: unknown, depth: number, walk: Walk): boolean {
  if (typeof value === 'string') {
    const problem = problemOf(value);
    if (problem) throw unstorable(walk.what, problem, pathTo(walk, depth));
    return true;
  }
  if (value === null || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value) && !Object.is(value, -0);
  if (typeof value !== 'object') return false;
  if (walk.entered === undefined) {
    if (++walk.containers > UNTRACKED_CONTAINERS) throw TRACK_FROM_START;
  } else if (walk.entered.has(value)) {
    return false;
  } else {
    walk.entered.add(value);
  }
  if (depth >= MAX_STORED_DEPTH) {
    // A reference repeated on its own path is a cycle, which superjson encodes; anything else is too deep.
    if (walk.path.includes(value)) return false;
    throw tooDeep(walk.what, pathTo(walk, depth));
  }
  walk.path[depth] = value;
  let plain = true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      walk.keys[depth] = i;
      if (!visit(value[i], depth + 1, walk)) plain = false;
    }
    return plain;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return false;
  for (const key in value) {
    walk.keys[depth] = key;
    const problem = problemOf(key);
    if (problem) throw unstorable(walk.what, problem, pathTo(walk, depth + 1), 'key');
    const item = (value as Record<string, unknown>)[key];
    if (item !== undefined && !visit(item, depth + 1, walk)) plain = false;
  }
  return plain;
}

function pathTo(walk: Walk, depth: number): string {
  return walk.keys.slice(0, depth).map(String).join('.');
}

/** Where in the value, for messages; the path's own unstorable characters shown as U+FFFD. */
function where(path: string, place: 'value' | 'key' = 'value'): string {
  if (place === 'key') return ` in the key ${toStoredText(path)}`;
  return path === '' ? '' : ` at ${toStoredText(path)}`;
}

function unstorable(what: string, problem: Problem, path: string, place: 'value' | 'key' = 'value'): WorkqError {
  const message =
    problem === 'nul'
      ? `${what} contains a NUL character (\\u0000)${where(path, place)}, which job stores cannot keep; remove it or encode the data.`
      : `${what} contains a lone UTF-16 surrogate${where(path, place)}: half of a pair (\\uD800-\\uDFFF), which is not valid Unicode and job stores cannot keep; send well-formed text.`;
  return new WorkqError('VALIDATION', message, { details: [{ path: path.split('.').filter(Boolean), message }] });
}

function tooDeep(what: string, path: string): WorkqError {
  const message = `${what} nests arrays and objects more than ${MAX_STORED_DEPTH} levels deep${where(path)}; flatten it, or store the data elsewhere and enqueue a reference.`;
  return new WorkqError('VALIDATION', message, { details: [{ path: path.split('.').filter(Boolean), message }] });
}
