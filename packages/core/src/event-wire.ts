import superjson from 'superjson';
import {
  eventsOfRun,
  JOB_EVENT_TYPES,
  type JobEvent,
  type JobEventDetails,
  type JobEventRun,
  type ResyncEvent,
} from './events.ts';
import { isPlainJson } from './plain-json.ts';
import { eventsBytes } from './value-bytes.ts';

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

/** A run's part of a batch on the wire; only its index in the batch's `names` is left to fill in. */
interface RunBytes {
  /** `[type,` */
  head: string;
  /** `,at,ids,versions,attempts,details]`, as UTF-8. */
  tail: Uint8Array;
  /** superjson's annotations of the run's `details` (relative to them), when they are not plain JSON. */
  meta?: unknown;
}

/**
 * Each run's bytes, made once however many subscribers' batches carry it:
 * the hub hands the same run object to every subscriber that wants it, so a
 * 4 MiB result is serialized and encoded once, not once per stream. Kept as
 * long as the run is (the hub keeps its recent runs for resumption).
 */
const runBytes = new WeakMap<JobEventRun, RunBytes>();
const utf8 = new TextEncoder();

/**
 * A batch as the stream carries it, in pieces to write one after the other:
 * exactly the UTF-8 of `JSON.stringify(wireTransformer.serialize(encodeEventBatch(runs)))`
 * when the batch is plain JSON (`{"json":…}`), and what deserializes to the
 * same value when a result is not (`{"json":…,"meta":…}`, superjson's
 * annotations nested per run). Each run's bytes are made once (`runBytes`);
 * a batch only lines them up, so serving many subscribers costs copies, not
 * serializations.
 */
export function eventBatchWireParts(runs: readonly (JobEventRun | ResyncEvent)[]): (string | Uint8Array)[] {
  const names: string[] = [];
  const parts: (string | Uint8Array)[] = [];
  const meta: Record<string, unknown> = {};
  runs.forEach((run, index) => {
    const comma = index === 0 ? '' : ',';
    if (run.type === 'resync') {
      parts.push(`${comma}[-1,${run.at.getTime()}]`);
      return;
    }
    let name = names.indexOf(run.name);
    if (name < 0) name = names.push(run.name) - 1;
    let bytes = runBytes.get(run);
    if (!bytes) {
      bytes = encodeRun(run);
      runBytes.set(run, bytes);
    }
    parts.push(`${comma}${bytes.head}${name}`, bytes.tail);
    if (bytes.meta !== undefined) meta[String(index)] = { 6: bytes.meta };
  });
  const metaText = Object.keys(meta).length === 0 ? '' : `,"meta":${JSON.stringify({ values: { runs: meta }, v: 1 })}`;
  return [`{"json":{"names":${JSON.stringify(names)},"runs":[`, ...parts, `]}${metaText}}`];
}

function encodeRun(run: JobEventRun): RunBytes {
  const { ids, versions, attempts, details } = run;
  const wireAttempts = attempts ? nullForMissing(attempts, ids.length) : 0;
  const wireDetails = details ? nullForMissing(details, ids.length) : 0;
  let detailsText: string;
  let meta: unknown;
  if (isPlainJson(wireDetails)) {
    detailsText = JSON.stringify(wireDetails);
  } else {
    const serialized = superjson.serialize(wireDetails);
    detailsText = JSON.stringify(serialized.json);
    meta = serialized.meta?.values;
  }
  const tail = `,${run.at.getTime()},${JSON.stringify(ids)},${JSON.stringify(versions)},${JSON.stringify(wireAttempts)},${detailsText}]`;
  const head = `[${TYPE_INDEX.get(run.type) as number},`;
  return { head, tail: utf8.encode(tail), ...(meta === undefined ? {} : { meta }) };
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

/**
 * About how many bytes of memory the events of `batch` hold once decoded, as the server's event hub counts a
 * run (a fixed share per event and what its details carry, a `completed` event's result above all): what a
 * subscriber's own buffer bounds besides its count of events.
 */
export function eventBatchBytes(batch: WireEventBatch): number {
  let bytes = 0;
  for (const run of batch.runs) {
    // A resync is one event without details; a run's details are 0 when none of its events has any.
    bytes += run.length === 2 ? eventsBytes(1, undefined) : eventsBytes(run[3].length, run[6] || undefined);
  }
  return bytes;
}
