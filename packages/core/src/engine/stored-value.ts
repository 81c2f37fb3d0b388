import superjson, { type SuperJSONResult } from 'superjson';
import { isPlainJson } from '../plain-json.ts';

/**
 * The key of the one-key object that carries a value plain JSON would change.
 * No `$` and no `.`, so every store keeps it as an ordinary field name.
 */
const ENCODED = '__superjson';

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
