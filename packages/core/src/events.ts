/** The job events the engine emits and subscribers read: browser-safe, shared by server and SDK. */

/**
 * What happened to a job; `failed` is one failed attempt, followed by `dead` when no attempt remains;
 * `waiting-children`: a parent began to wait for its children (enqueued with them, or parked by
 * `waitForChildren`). New types go last: the wire sends a type as its index here.
 */
export const JOB_EVENT_TYPES = [
  'enqueued',
  'started',
  'progress',
  'completed',
  'failed',
  'dead',
  'cancelled',
  'waiting-children',
] as const;
export type JobEventType = (typeof JOB_EVENT_TYPES)[number];

/** What an event carries beyond its type, job, time and attempt. */
export interface JobEventDetails {
  progress?: number;
  result?: unknown;
  error?: JobEventError;
  willRetry?: boolean;
  parentId?: string;
}

/** The error an event carries: the failed attempt's message, and whether it was permanent. */
export interface JobEventError {
  message: string;
  permanent?: boolean;
  code?: string;
}

/**
 * One change of one job's state, as the engine made it. `attempt` is set on
 * `started`, `failed` and `dead`; `progress` on `progress`; `result` on
 * `completed` (the value the handler returned; absent for a job ended by
 * `moveTo`); `error` and `willRetry` on `failed`, `error` on `dead` (for a
 * parent killed by a child, code `CHILD_FAILED`) and on the `cancelled` of a
 * job cancelled with its flow (code `FLOW_CANCELLED`).
 */
export interface JobEvent {
  type: JobEventType;
  id: string;
  name: string;
  version: number;
  at: Date;
  attempt?: number;
  progress?: number;
  result?: unknown;
  error?: JobEventError;
  /** On `failed`: whether another attempt follows. */
  willRetry?: boolean;
  /** On every event of a child in a flow: its parent's id. */
  parentId?: string;
}

/** Said to a subscriber that may have missed events: what it knows of job states may be stale. */
export interface ResyncEvent {
  type: 'resync';
  at: Date;
}

/**
 * Events of one type about jobs of one name, made by one queue operation at
 * one moment: the unit in which the engine hands events to its sink and the
 * server keeps and sends them, so that a busy queue pays per operation rather
 * than per job. The arrays are per job, in the order of `ids`.
 */
export interface JobEventRun {
  type: JobEventType;
  name: string;
  at: Date;
  ids: string[];
  versions: number[];
  /** Each job's attempt; absent for a type without one. */
  attempts?: number[];
  /** What else each job's event carries; absent when no event in the run carries anything. */
  details?: (JobEventDetails | undefined)[];
}

/** A run as `eventsOfRun` reads it: a job's entry in `attempts` or `details` may be missing (`null`, a hole). */
export interface EventRunEntries extends Omit<JobEventRun, 'attempts' | 'details'> {
  attempts?: readonly (number | null | undefined)[];
  details?: readonly (JobEventDetails | null | undefined)[];
}

/** The events of a run, one per job, each with a `Date` of its own. */
export function eventsOfRun(run: EventRunEntries): JobEvent[] {
  const { type, name, ids, versions, attempts, details } = run;
  const atMs = run.at.getTime();
  return ids.map((id, index) => {
    const event: JobEvent = { type, id, name, version: versions[index] as number, at: new Date(atMs) };
    const attempt = attempts?.[index];
    if (attempt !== null && attempt !== undefined) event.attempt = attempt;
    const more = details?.[index];
    if (more) Object.assign(event, more);
    return event;
  });
}

/** Runs of `events`, each event joining the run before it when type, name and time agree. */
export function runsOfEvents(events: readonly JobEvent[]): JobEventRun[] {
  const runs: JobEventRun[] = [];
  let last: JobEventRun | undefined;
  for (const event of events) {
    const { type, id, name, version, at, attempt, ...more } = event;
    if (!last || last.type !== type || last.name !== name || last.at.getTime() !== at.getTime()) {
      last = { type, name, at, ids: [], versions: [] };
      runs.push(last);
    }
    const index = last.ids.push(id) - 1;
    last.versions.push(version);
    if (attempt !== undefined) {
      last.attempts ??= [];
      last.attempts[index] = attempt;
    }
    if (Object.keys(more).length > 0) {
      last.details ??= [];
      last.details[index] = more;
    }
  }
  return runs;
}
