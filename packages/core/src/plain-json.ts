/** Deeper values count as not plain, so superjson (which handles shared and circular references) takes them. */
const MAX_PLAIN_DEPTH = 64;

/**
 * Whether JSON keeps `value` exactly: null, booleans, strings, finite
 * numbers (not -0), arrays of those and objects with the plain prototype. An
 * object key set to `undefined` counts as plain: JSON drops it, and an absent
 * key reads the same.
 */
export function isPlainJson(value: unknown, depth = 0): boolean {
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
