import {
  eventsOfRun,
  JOB_EVENT_TYPES,
  type JobEvent,
  type JobEventDetails,
  type JobEventRun,
  type ResyncEvent,
} from './events.ts';

/** What an event carries beyond its type, id, name, version, time and attempt. */
export type WireEventDetails = JobEventDetails;

/**
 * One run of events as the job-event stream carries it, compact because a
 * busy queue sends thousands a second:
 * `[type, name, at, ids, versions, attempts, details]`, the type as its index
 * in `JOB_EVENT_TYPES`, the name as its index in the batch's `names`, `at` in
 * epoch milliseconds, `ids`, `versions` and (when not 0) `attempts` and
 * `details` one entry per job (`null` where a job has none); a resync is
 * `[-1, at]`.
 */
export type WireEventRun =
  | [number, number, number, string[], number[], (number | null)[] | 0, (WireEventDetails | null)[] | 0]
  | [-1, number];

/** A batch of events on the stream: plain JSON whenever the results in it are. */
export interface WireEventBatch {
  names: string[];
  runs: WireEventRun[];
}

const TYPE_INDEX = new Map<string, number>(JOB_EVENT_TYPES.map((type, index) => [type, index]));

export function encodeEventBatch(runs: readonly (JobEventRun | ResyncEvent)[]): WireEventBatch {
  const names: string[] = [];
  const wire: WireEventRun[] = [];
  for (const run of runs) {
    if (run.type === 'resync') {
      wire.push([-1, run.at.getTime()]);
      continue;
    }
    let name = names.indexOf(run.name);
    if (name < 0) name = names.push(run.name) - 1;
    const { ids, versions, attempts, details } = run;
    wire.push([
      TYPE_INDEX.get(run.type) as number,
      name,
      run.at.getTime(),
      ids,
      versions,
      attempts ? nullForMissing(attempts, ids.length) : 0,
      details ? nullForMissing(details, ids.length) : 0,
    ]);
  }
  return { names, runs: wire };
}

/** `values` as JSON keeps it, `length` long, with `null` where a job has no value (holes, `undefined`). */
function nullForMissing<T>(values: readonly (T | undefined)[], length: number): (T | null)[] {
  if (values.length === length && !values.includes(undefined)) return values as T[];
  return Array.from({ length }, (_, index) => values[index] ?? null);
}

/** The events of a batch, one per job; runs it cannot read (from a newer server) are skipped. */
export function decodeEventBatch(batch: WireEventBatch): (JobEvent | ResyncEvent)[] {
  const events: (JobEvent | ResyncEvent)[] = [];
  for (const run of batch.runs) {
    if (run.length === 2) {
      events.push({ type: 'resync', at: new Date(run[1]) });
      continue;
    }
    const [typeIndex, nameIndex, atMs, ids, versions, attempts, details] = run;
    const type = JOB_EVENT_TYPES[typeIndex];
    const name = batch.names[nameIndex];
    if (type === undefined || name === undefined) continue;
    const entries = { attempts: attempts || undefined, details: details || undefined };
    events.push(...eventsOfRun({ type, name, at: new Date(atMs), ids, versions, ...entries }));
  }
  return events;
}
