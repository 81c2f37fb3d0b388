import { JOB_EVENT_TYPES, type JobEvent, type JobEventError, type ResyncEvent } from './events.ts';

/** What an event carries beyond its type, id, name, version, time and attempt. */
export interface WireEventDetails {
  progress?: number;
  result?: unknown;
  error?: JobEventError;
  willRetry?: boolean;
}

/**
 * One event as the job-event stream carries it, compact because a busy queue
 * sends thousands a second: `[type, id, name, version, at, attempt, details?]`,
 * the type as its index in `JOB_EVENT_TYPES`, the name as its index in the
 * batch's `names`, `at` in epoch milliseconds, `attempt` 0 when it has none;
 * a resync is `[-1, at]`.
 */
export type WireEvent = [number, string, number, number, number, number, WireEventDetails?] | [-1, number];

/** A batch of events on the stream: plain JSON whenever the results in it are. */
export interface WireEventBatch {
  names: string[];
  events: WireEvent[];
}

const TYPE_INDEX = new Map<string, number>(JOB_EVENT_TYPES.map((type, index) => [type, index]));

export function encodeEventBatch(events: readonly (JobEvent | ResyncEvent)[]): WireEventBatch {
  const names: string[] = [];
  const nameIndex = new Map<string, number>();
  const wire: WireEvent[] = [];
  for (const event of events) {
    if (event.type === 'resync') {
      wire.push([-1, event.at.getTime()]);
      continue;
    }
    let name = nameIndex.get(event.name);
    if (name === undefined) {
      name = names.push(event.name) - 1;
      nameIndex.set(event.name, name);
    }
    const row: WireEvent = [
      TYPE_INDEX.get(event.type) as number,
      event.id,
      name,
      event.version,
      event.at.getTime(),
      event.attempt ?? 0,
    ];
    const details = detailsOf(event);
    if (details) row.push(details);
    wire.push(row);
  }
  return { names, events: wire };
}

function detailsOf(event: JobEvent): WireEventDetails | undefined {
  if (event.progress === undefined && event.result === undefined && event.error === undefined) {
    return event.willRetry === undefined ? undefined : { willRetry: event.willRetry };
  }
  const details: WireEventDetails = {};
  if (event.progress !== undefined) details.progress = event.progress;
  if (event.result !== undefined) details.result = event.result;
  if (event.error !== undefined) details.error = event.error;
  if (event.willRetry !== undefined) details.willRetry = event.willRetry;
  return details;
}

/** The events of a batch; rows it cannot read (from a newer server) are skipped. */
export function decodeEventBatch(batch: WireEventBatch): (JobEvent | ResyncEvent)[] {
  const events: (JobEvent | ResyncEvent)[] = [];
  for (const row of batch.events) {
    if (row.length === 2) {
      events.push({ type: 'resync', at: new Date(row[1]) });
      continue;
    }
    const [typeIndex, id, nameIndex, version, at, attempt, details] = row;
    const type = JOB_EVENT_TYPES[typeIndex];
    const name = batch.names[nameIndex];
    if (type === undefined || name === undefined) continue;
    const event: JobEvent = { type, id, name, version, at: new Date(at) };
    if (attempt > 0) event.attempt = attempt;
    if (details) Object.assign(event, details);
    events.push(event);
  }
  return events;
}
