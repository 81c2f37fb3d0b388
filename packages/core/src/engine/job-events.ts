import type { JobEventDetails, JobEventError, JobEventRun, JobEventType } from '../events.ts';
import type { JobError } from '../jobs.ts';
import type { FlowEnds } from './flow-ends.ts';
import type { JobRecord, SweptLease } from './store.ts';
import { timedOutError } from './timed-out-error.ts';

/**
 * Where the engine sends its events: the one seam between state changes and
 * whoever watches them (the server's event hub). The engine builds events
 * only while `listening` is true, so a queue nobody watches pays nothing.
 * `publish` must not throw or block: it is called on the engine's path.
 */
export interface JobEventSink {
  readonly listening: boolean;
  publish(runs: readonly JobEventRun[]): void;
}

/** What an event needs to know of a held job that its lease alone does not say (a child's parent too). */
interface HeldJob {
  name: string;
  version: number;
  attempt: number;
  parentId?: string | null;
}

/** An attempt that failed: its job, and whether it was the job's last (the job is dead). */
interface FailedAttempt {
  id: string;
  name: string;
  version: number;
  attempt: number;
  dead: boolean;
  parentId?: string | null;
}

/** Jobs remembered per process while listening; past it the oldest are forgotten (they are then read back). */
const MAX_HELD = 100_000;

/**
 * One operation's events of one type, collected into one run per job name
 * (an operation's jobs almost always share one). The event of a child in a
 * flow names its parent (`parentId`); other jobs' events carry nothing for it.
 */
class RunCollector {
  private readonly runs = new Map<string, JobEventRun>();

  constructor(
    private readonly type: JobEventType,
    private readonly at: Date,
  ) {}

  add(
    id: string,
    job: { name: string; version: number; attempt?: number; parentId?: string | null },
    more?: JobEventDetails,
  ): void {
    const details = job.parentId ? { ...more, parentId: job.parentId } : more;
    let run = this.runs.get(job.name);
    if (!run) {
      run = { type: this.type, name: job.name, at: this.at, ids: [], versions: [] };
      if (job.attempt !== undefined) run.attempts = [];
      this.runs.set(job.name, run);
    }
    const index = run.ids.push(id) - 1;
    run.versions.push(job.version);
    if (job.attempt !== undefined) run.attempts?.push(job.attempt);
    if (details) run.details ??= Array(index).fill(undefined);
    run.details?.push(details);
  }

  get runList(): JobEventRun[] {
    return [...this.runs.values()];
  }
}

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

  /** `enqueued` for each job (a child's naming its parent), then `waiting-children` for a flow's parents. */
  enqueued(jobs: readonly JobRecord[], at: Date): void {
    if (!this.listening || jobs.length === 0) return;
    const runs = new RunCollector('enqueued', at);
    let parents: RunCollector | undefined;
    for (const job of jobs) {
      runs.add(job.id, job);
      if (job.state !== 'waiting-children') continue;
      parents ??= new RunCollector('waiting-children', at);
      parents.add(job.id, job);
    }
    this.publish(parents ? [...runs.runList, ...parents.runList] : runs.runList);
  }

  /** `waiting-children` for a held job parked on children it made; its lease has ended. */
  waitingForChildren(id: string, at: Date): void {
    if (!this.listening) {
      this.held.delete(id);
      return;
    }
    this.withHeld('waiting-children', at, [id], () => undefined);
  }

  /** `started` for each job a claim leased (a `ClaimedJob`, of which it reads the run's name, version, attempt and parent). */
  started(
    jobs: readonly { id: string; name: string; version: number; attempt: number; parentId?: string }[],
    at: Date,
  ): void {
    if (!this.listening || jobs.length === 0) return;
    const runs = new RunCollector('started', at);
    for (const job of jobs) {
      const held: HeldJob = { name: job.name, version: job.version, attempt: job.attempt };
      if (job.parentId) held.parentId = job.parentId;
      this.remember(job.id, held);
      runs.add(job.id, held);
    }
    this.publish(runs.runList);
  }

  /** `completed` for each job acked, with the result it was acked with. */
  completed(items: readonly { id: string; result?: unknown }[], at: Date): void {
    if (!this.listening || items.length === 0) return;
    this.withHeld(
      'completed',
      at,
      items.map((item) => item.id),
      (index) => {
        const result = items[index]?.result;
        return result === undefined ? undefined : { result };
      },
    );
  }

  progress(id: string, progress: number, at: Date): void {
    if (!this.listening) return;
    this.withHeld('progress', at, [id], () => ({ progress }), false);
  }

  /** `failed` for the attempt that failed, and `dead` after it when none remains. */
  failed(job: JobRecord, error: JobError, willRetry: boolean, at: Date): void {
    this.held.delete(job.id);
    if (!this.listening) return;
    const eventError: JobEventError = { message: error.message };
    if (error.permanent) eventError.permanent = true;
    const { id, name, version, parentId } = job;
    this.publishFailures([{ id, name, version, attempt: error.attempt, dead: !willRetry, parentId }], eventError, at);
  }

  /** `failed` for each attempt that lost its lease to a sweep, and `dead` after it when none remains. */
  leasesExpired(jobs: readonly SweptLease[], error: Omit<JobError, 'attempt'>, at: Date): void {
    for (const job of jobs) this.held.delete(job.id);
    if (!this.listening || jobs.length === 0) return;
    const eventError: JobEventError = { message: error.message };
    if (error.code !== undefined) eventError.code = error.code;
    const timedOut = jobs.filter((job) => job.timedOut);
    if (timedOut.length === 0) {
      this.publishFailures(jobs, eventError, at);
      return;
    }
    this.publishFailures(timedOut, { message: timedOutError(error).message, code: 'TIMEOUT' }, at);
    this.publishFailures(
      jobs.filter((job) => !job.timedOut),
      eventError,
      at,
    );
  }

  /** `failed` for each failed attempt, then `dead` for those that used the last one. */
  private publishFailures(jobs: readonly FailedAttempt[], error: JobEventError, at: Date): void {
    const failed = new RunCollector('failed', at);
    const dead = new RunCollector('dead', at);
    for (const job of jobs) {
      failed.add(job.id, job, { error, willRetry: !job.dead });
      if (job.dead) dead.add(job.id, job, { error });
    }
    this.publish([...failed.runList, ...dead.runList]);
  }

  /** `cancelled` for a job cancelled on its own. */
  cancelled(job: JobRecord, at: Date): void {
    this.held.delete(job.id);
    if (!this.listening) return;
    const runs = new RunCollector('cancelled', at);
    runs.add(job.id, job);
    this.publish(runs.runList);
  }

  /**
   * After a job ended at `at`, and after its own events: `dead` for each parent its end made dead of a child
   * (`ends.dead`), with the parent's `CHILD_FAILED` error, then `cancelled` for each job cancelled with the flow
   * (`ends.cancelled`), with its `FLOW_CANCELLED` error.
   */
  endedWithFlow({ dead, cancelled }: FlowEnds, at: Date): void {
    for (const child of cancelled) this.held.delete(child.id);
    if (!this.listening) return;
    const died = new RunCollector('dead', at);
    for (const parent of dead) died.add(parent.id, heldOf(parent), eventErrorOf(parent));
    const withFlow = new RunCollector('cancelled', at);
    for (const child of cancelled) withFlow.add(child.id, child, eventErrorOf(child));
    const runs = [...died.runList, ...withFlow.runList];
    if (runs.length > 0) this.publish(runs);
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
   * Publishes a `type` event for each id, with `detailsOf(index)`: at once for
   * the jobs this process remembers, after one read for the rest. `forget`
   * ends the memory of them (their lease ended).
   */
  private withHeld(
    type: JobEventType,
    at: Date,
    ids: readonly string[],
    detailsOf: (index: number) => JobEventDetails | undefined,
    forget = true,
  ): void {
    const runs = new RunCollector(type, at);
    const unknown: number[] = [];
    ids.forEach((id, index) => {
      const job = this.held.get(id);
      if (forget) this.held.delete(id);
      if (job) runs.add(id, job, detailsOf(index));
      else unknown.push(index);
    });
    const known = runs.runList;
    if (known.length > 0) this.publish(known);
    if (unknown.length === 0) return;
    this.readJobs(unknown.map((index) => ids[index] as string)).then(
      (records) => {
        const byId = new Map(records.map((record) => [record.id, record]));
        const late = new RunCollector(type, at);
        for (const index of unknown) {
          const record = byId.get(ids[index] as string);
          if (record) late.add(record.id, heldOf(record), detailsOf(index));
        }
        const found = late.runList;
        if (found.length > 0) this.publish(found);
      },
      // A job that cannot be read now yields no event; a subscriber that needs certainty reads the job.
      () => undefined,
    );
  }

  private publish(runs: readonly JobEventRun[]): void {
    try {
      this.sink?.publish(runs);
    } catch {
      // A watcher's failure never fails the queue operation that made the event.
    }
  }
}

/** The event `error` of a job ended with its flow: its recorded error's message and code. */
function eventErrorOf(record: JobRecord): JobEventDetails | undefined {
  if (!record.error) return undefined;
  const error: JobEventError = { message: record.error.message };
  if (record.error.code !== undefined) error.code = record.error.code;
  return { error };
}

function heldOf(record: JobRecord): HeldJob {
  return { name: record.name, version: record.version, attempt: record.attempts, parentId: record.parentId };
}
