import superjson, { type SuperJSONResult } from 'superjson';

/**
 * The key of the one-key object that carries a value plain JSON would change.
 * No `$` and no `.`, so every store keeps it as an ordinary field name.
 */
const ENCODED = '__superjson';

/** Deeper values go through superjson, which also handles shared and circular references. */
const MAX_PLAIN_DEPTH = 64;

/**
 * Payloads and results as stores keep them: JSON. A value that is plain JSON
 * (the common case) is stored as it is, so it stays readable and queryable
 * in the database. A value JSON would change — a `bigint`, a `Date`, a `Map`
 * or `Set`, `undefined` in an array, `NaN` — is stored as
 * `{ "__superjson": { json, meta } }`, the same encoding the wire uses, and
 * comes back from `fromStoredValue` as it went in. So does a plain object
 * whose only key is `__superjson`, so that decoding is never ambiguous.
 */
export function toStoredValue(value: unknown): unknown {
  if (value === undefined) return null;
  if (isPlainJson(value)) return isEncoded(value) ? { [ENCODED]: { json: value } } : value;
  return { [ENCODED]: superjson.serialize(value) };
}

/** The value `toStoredValue` was given, from what a store read back. */
export function fromStoredValue(stored: unknown): unknown {
  if (!isEncoded(stored)) return stored;
  return superjson.deserialize((stored as Record<typeof ENCODED, SuperJSONResult>)[ENCODED]);
}

function isEncoded(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  for (const key in value) if (key !== ENCODED) return false;
  return ENCODED in value;
}

/**
 * Whether JSON keeps `value` exactly: null, booleans, strings, finite
 * numbers (not -0), arrays of those and objects with the plain prototype. An
 * object key set to `undefined` counts as plain: JSON drops it, and an absent
 * key reads the same.
 */
function isPlainJson(value: unknown, depth = 0): boolean {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value) && !Object.is(value, -0);
  if (typeof value !== 'object' || depth > MAX_PLAIN_DEPTH) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!isPlainJson(value[i], depth + 1)) return false;
    return true;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return false;
  for (const key in value) {
    const item = (value as Record<string, unknown>)[key];
    if (item !== undefined && !isPlainJson(item, depth + 1)) return false;
  }
  return true;
}
