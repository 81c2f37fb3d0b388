import type { JobEvent, JobEventError } from '../events.ts';
import type { JobError } from '../jobs.ts';
import type { ClaimedJob } from './claims.ts';
import type { JobRecord } from './store.ts';

/**
 * Where the engine sends its events: the one seam between state changes and
 * whoever watches them (the server's event hub). The engine builds events
 * only while `listening` is true, so a queue nobody watches pays nothing.
 * `publish` must not throw or block: it is called on the engine's path.
 */
export interface JobEventSink {
  readonly listening: boolean;
  publish(events: readonly JobEvent[]): void;
}

/** What an event needs to know of a held job that its lease alone does not say. */
interface HeldJob {
  name: string;
  version: number;
  attempt: number;
}

/** Jobs remembered per process while listening; past it the oldest are forgotten (they are then read back). */
const MAX_HELD = 100_000;

/**
 * Builds the engine's events and hands them to the sink. It remembers the
 * name, version and attempt of the jobs this process leased while someone
 * listened, so that an ack (which carries only the lease) makes a complete
 * event without a read; a job leased elsewhere or earlier is read back by id,
 * off the engine's path.
 */
export class JobEventEmitter {
  private readonly held = new Map<string, HeldJob>();

  constructor(
    private readonly sink: JobEventSink | undefined,
    /** Reads jobs by id, for events about jobs this process does not remember. */
    private readonly readJobs: (ids: readonly string[]) => Promise<readonly JobRecord[]>,
  ) {}

  get listening(): boolean {
    return this.sink?.listening === true;
  }

  enqueued(jobs: readonly JobRecord[], at: Date): void {
    if (!this.listening || jobs.length === 0) return;
    this.publish(jobs.map((job) => ({ type: 'enqueued', id: job.id, name: job.name, version: job.version, at })));
  }

  started(jobs: readonly ClaimedJob[], at: Date): void {
    if (!this.listening || jobs.length === 0) return;
    const events: JobEvent[] = [];
    for (const job of jobs) {
      const { id, name, version, attempt } = job;
      this.remember(id, { name, version, attempt });
      events.push({ type: 'started', id, name, version, at, attempt });
    }
    this.publish(events);
  }

  /** `completed` for each job acked, with the result it was acked with. */
  completed(items: readonly { id: string; result?: unknown }[], at: Date): void {
    if (!this.listening || items.length === 0) return;
    this.withHeld(
      items.map((item) => item.id),
      (id, job, index) => {
        const event: JobEvent = { type: 'completed', id, ...job, at };
        const result = items[index]?.result;
        if (result !== undefined) event.result = result;
        return event;
      },
    );
  }

  progress(id: string, progress: number, at: Date): void {
    if (!this.listening) return;
    this.withHeld([id], (_, job) => ({ type: 'progress', id, ...job, at, progress }), false);
  }

  /** `failed` for the attempt that failed, and `dead` after it when none remains. */
  failed(job: JobRecord, error: JobError, willRetry: boolean, at: Date): void {
    this.held.delete(job.id);
    if (!this.listening) return;
    const { id, name, version } = job;
    const eventError: JobEventError = { message: error.message };
    if (error.permanent) eventError.permanent = true;
    const events: JobEvent[] = [
      { type: 'failed', id, name, version, at, attempt: error.attempt, error: eventError, willRetry },
    ];
    if (!willRetry) events.push({ type: 'dead', id, name, version, at, attempt: error.attempt, error: eventError });
    this.publish(events);
  }

  cancelled(job: JobRecord, at: Date): void {
    this.held.delete(job.id);
    if (!this.listening) return;
    this.publish([{ type: 'cancelled', id: job.id, name: job.name, version: job.version, at }]);
  }

  /** Forgets jobs given back unstarted. */
  released(ids: readonly string[]): void {
    for (const id of ids) this.held.delete(id);
  }

  private remember(id: string, job: HeldJob): void {
    this.held.set(id, job);
    if (this.held.size > MAX_HELD) {
      const oldest = this.held.keys().next().value;
      if (oldest !== undefined) this.held.delete(oldest);
    }
  }

  /**
   * Publishes `make(id, job, index)` for each id: at once for the jobs this
   * process remembers, after one read for the rest. `forget` ends the memory
   * of them (their lease ended).
   */
  private withHeld(
    ids: readonly string[],
    make: (id: string, job: HeldJob, index: number) => JobEvent,
    forget = true,
  ): void {
    const events: JobEvent[] = [];
    const unknown: number[] = [];
    ids.forEach((id, index) => {
      const job = this.held.get(id);
      if (forget) this.held.delete(id);
      if (job) events.push(make(id, job, index));
      else unknown.push(index);
    });
    if (events.length > 0) this.publish(events);
    if (unknown.length === 0) return;
    const wanted = unknown.map((index) => ids[index] as string);
    this.readJobs(wanted).then(
      (records) => {
        const byId = new Map(records.map((record) => [record.id, record]));
        const late: JobEvent[] = [];
        for (const index of unknown) {
          const record = byId.get(ids[index] as string);
          if (record) late.push(make(record.id, heldOf(record), index));
        }
        if (late.length > 0) this.publish(late);
      },
      // A job that cannot be read now yields no event; a subscriber that needs certainty reads the job.
      () => undefined,
    );
  }

  private publish(events: readonly JobEvent[]): void {
    try {
      this.sink?.publish(events);
    } catch {
      // A watcher's failure never fails the queue operation that made the event.
    }
  }
}

function heldOf(record: JobRecord): HeldJob {
  return { name: record.name, version: record.version, attempt: record.attempts };
}
