import type { JobEventRun } from '../events.ts';
import { eventsBytes } from '../value-bytes.ts';

/**
 * About how many bytes of memory `run`'s events hold while they are kept: a fixed share per event and the size
 * of what its details carry, a `completed` event's result above all (up to `maxResultBytes` each). What the
 * event hub bounds its buffers by besides their count of events, so that events with large results cannot keep
 * gigabytes. Strings count one byte per character, numbers eight, each key its length; a walk, no encoding.
 */
export function runBytes(run: JobEventRun): number {
  return eventsBytes(run.ids.length, run.details);
}
