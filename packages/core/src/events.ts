/** The job events the engine emits and subscribers read: browser-safe, shared by server and SDK. */

/** What happened to a job; `failed` is one failed attempt, followed by `dead` when no attempt remains. */
export const JOB_EVENT_TYPES = ['enqueued', 'started', 'progress', 'completed', 'failed', 'dead', 'cancelled'] as const;
export type JobEventType = (typeof JOB_EVENT_TYPES)[number];

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
 * `moveTo`); `error` and `willRetry` on `failed`, `error` on `dead`.
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
}

/** Said to a subscriber that may have missed events: what it knows of job states may be stale. */
export interface ResyncEvent {
  type: 'resync';
  at: Date;
}
