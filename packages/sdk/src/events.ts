import {
  type Catalog,
  type JobEvent as CoreJobEvent,
  type ResyncEvent as CoreResyncEvent,
  decodeEventBatch,
  eventBatchBytes,
  type JobEventError,
  type JobEventType,
  type JobName,
  type ResultOutput,
  type WireEventBatch,
  WorkqError,
} from '@workq/core';
import { toWorkqError } from './errors.ts';
import { oneByOne } from './one-by-one.ts';
import { sleep } from './retry.ts';
import type { QueueApi } from './transport.ts';

/**
 * One change of one job's state, typed by the catalog: `result` is the job
 * type's result as its schema parses it. `attempt` is set on `started`,
 * `failed` and `dead`; `progress` on `progress`; `result` on `completed`;
 * `error` on `failed` and `dead` (a parent killed by a child: `CHILD_FAILED`)
 * and on the `cancelled` of a job cancelled with its flow (`FLOW_CANCELLED`),
 * and `willRetry` on `failed`; `parentId` on every event of a child in a flow.
 */
export type JobEvent<C extends Catalog, N extends JobName<C> = JobName<C>> = {
  [K in N]: {
    type: JobEventType;
    id: string;
    name: K;
    version: number;
    at: Date;
    attempt?: number;
    progress?: number;
    result?: ResultOutput<C, K>;
    error?: JobEventError;
    willRetry?: boolean;
    parentId?: string;
  };
}[N];

/**
 * Events may have been missed (the subscriber fell behind, or reconnected
 * where its place could not be resumed): what it knows of job states may be
 * stale, so it should read the jobs it cares about again.
 */
export interface ResyncEvent {
  type: 'resync';
  at: Date;
}

export interface EventsOptions {
  /** Ends the iteration. */
  signal?: AbortSignal | undefined;
  /**
   * Events kept while the loop body is busy; past it they are dropped and the
   * next event is a `resync`. @defaultValue 10_000
   */
  maxBufferedEvents?: number | undefined;
  /**
   * Bytes of events kept while the loop body is busy, counted as the server
   * counts its own buffers (a `completed` event holds its result); past it
   * they are dropped and the next event is a `resync`. The client reads the
   * stream as it comes, so without it a slow loop over large results would
   * hold as many as `maxBufferedEvents` of them. @defaultValue 67_108_864 (64 MiB)
   */
  maxBufferedBytes?: number | undefined;
}

/** `sdk.events(name?, options)`. */
export type EventsFn<C extends Catalog> = <N extends JobName<C> = JobName<C>>(
  name?: N,
  options?: EventsOptions,
) => AsyncIterable<JobEvent<C, N> | ResyncEvent>;

/** Each `EventsOptions` default, in one place. */
const EVENTS_DEFAULTS = { maxBufferedEvents: 10_000, maxBufferedBytes: 64 * 1024 * 1024 } as const;
/** Waits between reconnections after a failure: doubling from the first to the last. */
const RECONNECT_MIN_MS = 250;
const RECONNECT_MAX_MS = 4_000;
/**
 * Failures that another try cannot mend: the iteration ends with them. But
 * an `UNAUTHORIZED` that ends a stream which had delivered (a signed token
 * expired under it) is tried once more, after the first wait, with the token
 * asked for again; refused again at once, the iteration ends.
 */
const FINAL = new Set(['UNAUTHORIZED', 'FORBIDDEN', 'VALIDATION', 'UNKNOWN_JOB', 'NOT_FOUND']);

export function createEvents<C extends Catalog>(jobs: C, api: QueueApi): EventsFn<C> {
  return ((name?: string, options: EventsOptions = {}) => {
    if (name !== undefined && !Object.hasOwn(jobs, name)) {
      throw new WorkqError('UNKNOWN_JOB', `"${name}" is not in this client's catalog.`);
    }
    return { [Symbol.asyncIterator]: () => oneByOne(watch(jobs, api, name, options)) };
  }) as EventsFn<C>;
}

/**
 * Subscribes, and subscribes again after a connection fails or the server
 * goes away, passing the id of the last batch received, so the server
 * resumes after it or starts with `resync`. Yields what arrived since its last step, as one array.
 */
async function* watch(
  jobs: Catalog,
  api: QueueApi,
  name: string | undefined,
  options: EventsOptions,
): AsyncGenerator<unknown[], void> {
  const maxBuffered = options.maxBufferedEvents ?? EVENTS_DEFAULTS.maxBufferedEvents;
  const maxBufferedBytes = options.maxBufferedBytes ?? EVENTS_DEFAULTS.maxBufferedBytes;
  const signal = options.signal;
  let buffer: unknown[] = [];
  let bufferedBytes = 0;
  let wake: (() => void) | undefined;
  let failure: WorkqError | undefined;
  let ended = false;
  let lastEventId: string | undefined;
  let failures = 0;
  const notify = () => {
    const resolve = wake;
    wake = undefined;
    resolve?.();
  };
  const resync = () => {
    buffer = [{ type: 'resync', at: new Date() }];
    bufferedBytes = 0;
  };
  const take = (batch: WireEventBatch) => {
    bufferedBytes += eventBatchBytes(batch);
    // Over the bytes, the batch is dropped whole, and what was kept before it: the loop reads a resync next.
    if (bufferedBytes > maxBufferedBytes) resync();
    else {
      for (const event of decodeEventBatch(batch)) {
        if (event.type !== 'resync' && !Object.hasOwn(jobs, event.name)) continue;
        if (buffer.length >= maxBuffered) resync();
        else buffer.push(parsedResult(jobs, event));
      }
    }
    notify();
  };
  signal?.addEventListener('abort', notify);
  try {
    while (!signal?.aborted) {
      failure = undefined;
      ended = false;
      let delivered = false;
      const subscription = api.events.watch.subscribe(
        { name, lastEventId },
        {
          onData: ({ id, data }) => {
            delivered = true;
            lastEventId = id;
            failures = 0;
            take(data);
          },
          onError: (error) => {
            failure = toWorkqError(error);
            notify();
          },
          onComplete: () => {
            ended = true;
            notify();
          },
        },
      );
      try {
        while (!signal?.aborted) {
          if (buffer.length > 0) {
            const events = buffer;
            buffer = [];
            bufferedBytes = 0;
            yield events;
            continue;
          }
          if (failure || ended) break;
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
        }
      } finally {
        subscription.unsubscribe();
      }
      if (signal?.aborted) return;
      // Set by the subscription's callbacks, which the compiler does not follow.
      const failed = failure as WorkqError | undefined;
      const expiredUnderway = failed?.code === 'UNAUTHORIZED' && delivered;
      if (failed && FINAL.has(failed.code) && !expiredUnderway) throw failed;
      const delayMs = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** failures);
      failures += 1;
      await sleep(delayMs, signal);
    }
  } finally {
    signal?.removeEventListener('abort', notify);
  }
}

/** An event with its result parsed by the catalog; a result its schema refuses is left out. */
function parsedResult(jobs: Catalog, event: CoreJobEvent | CoreResyncEvent): unknown {
  if (event.type !== 'completed' || event.result === undefined) return event;
  const schema = jobs[event.name]?.result;
  if (!schema) return event;
  const parsed = schema.safeParse(event.result);
  if (parsed.success) event.result = parsed.data;
  else delete event.result;
  return event;
}
