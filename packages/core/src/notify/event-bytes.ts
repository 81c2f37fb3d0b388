import type { JobEventRun } from '../events.ts';

/** What one event holds besides its details: its id, version, attempt and its place in the run's arrays. */
const EVENT_BYTES = 100;

/**
 * About how many bytes of memory `run`'s events hold while they are kept: a fixed share per event and the size
 * of what its details carry, a `completed` event's result above all (up to `maxResultBytes` each). What the
 * event hub bounds its buffers by besides their count of events, so that events with large results cannot keep
 * gigabytes. Strings count one byte per character, numbers eight, each key its length; a walk, no encoding.
 */
export function runBytes(run: JobEventRun): number {
  let bytes = run.ids.length * EVENT_BYTES;
  if (run.details) for (const details of run.details) if (details) bytes += valueBytes(details);
  return bytes;
}

/**
 * The size of a value as `runBytes` counts it: JSON and what superjson carries besides (a `Map`, a `Set`, a
 * typed array, shared and circular references, each object counted once).
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
