/** What one job event holds besides its details: its id, version, attempt and its place in its run's arrays. */
const EVENT_BYTES = 100;

/**
 * About how many bytes of memory `count` job events hold, with `details` one entry per event (or none): a fixed
 * share per event and `valueBytes` of what each one's details carry, a `completed` event's result above all.
 */
export function eventsBytes(count: number, details: readonly unknown[] | undefined): number {
  let bytes = count * EVENT_BYTES;
  if (details) for (const item of details) if (item) bytes += valueBytes(item);
  return bytes;
}

/**
 * About how many bytes of memory a value holds, as the event buffers count it (`runBytes`, `eventBatchBytes`):
 * strings one byte per character, numbers eight, each key its length; a walk, no encoding. It counts JSON and
 * what superjson carries besides (a `Map`, a `Set`, a typed array, shared and circular references, each object
 * counted once).
 */
export function valueBytes(value: unknown): number {
  let bytes = 0;
  const pending: unknown[] = [value];
  const seen = new Set<object>();
  while (pending.length > 0) {
    const next = pending.pop();
    if (typeof next === 'string') bytes += next.length + 2;
    else if (typeof next !== 'object' || next === null) bytes += 8;
    else if (!seen.has(next)) {
      seen.add(next);
      bytes += 2;
      if (ArrayBuffer.isView(next)) bytes += next.byteLength;
      else if (Array.isArray(next) || next instanceof Set) for (const item of next) pending.push(item);
      else if (next instanceof Map) {
        for (const [key, item] of next) pending.push(key, item);
      } else {
        for (const key in next) {
          bytes += key.length + 3;
          pending.push((next as Record<string, unknown>)[key]);
        }
      }
    }
  }
  return bytes;
}
