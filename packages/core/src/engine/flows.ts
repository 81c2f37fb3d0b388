import { WorkqError } from '../errors.ts';
import { CHILD_FAILURE_POLICIES, type ChildFailurePolicy, FLOW_LIMITS, type JobStatus } from '../jobs.ts';
import { insertedRecord } from '../stores/shared/inserted-record.ts';
import type { Clock } from './clock.ts';
import type { FlowControl } from './flow-control.ts';
import { checkedIds, KEY_HOLDER_TRIES, keyHolderGone } from './inserts.ts';
import type { JobEventEmitter } from './job-events.ts';
import { leaseLost } from './leased-jobs.ts';
import type { LocalListeners } from './local-listeners.ts';
import { batchSettings, buildNewJob, type EnqueueInput, type EnqueueResult, type SettingsOf } from './new-job.ts';
import type { ResolvedJobOptions } from './options.ts';
import { toJobStatus, visibleState } from './status.ts';
import type { ChildOutcome, ChildrenPageQuery, JobRecord, LeaseRef, NewJob, Store } from './store.ts';
import { fromStoredValue } from './stored-value.ts';

/** A child in a flow: a job like any enqueued one, with what its failure does to its parent, and its own children. */
export interface ChildInput extends EnqueueInput {
  /** What this child ending dead or cancelled does to its parent. @defaultValue 'fail-parent' */
  onFailure?: ChildFailurePolicy;
  /** This child's own children: it waits for them as its parent waits for it. */
  children?: readonly ChildInput[];
}

/** A parent and its children, enqueued together (`Flows.enqueue`). */
export interface FlowInput extends EnqueueInput {
  children: readonly ChildInput[];
}

/** What the flow operations are handed by the engine that composes them. */
export interface FlowsDeps {
  store: Store;
  clock: Clock;
  flow: FlowControl;
  events: JobEventEmitter;
  listeners: LocalListeners;
  /** Engine-wide job defaults. */
  defaults: Partial<ResolvedJobOptions> | undefined;
}

/**
 * Flows: parents that wait for their children (`FlowStore` has the semantics). Enqueues a flow, parks a running
 * job on children it makes, lists a job's children, and replays a parent with its flow. The store makes
 * parents ready; this announces them to the claims waiting here.
 */
export class Flows {
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly flow: FlowControl;
  private readonly events: JobEventEmitter;
  private readonly listeners: LocalListeners;
  private readonly defaults: Partial<ResolvedJobOptions> | undefined;

  constructor(deps: FlowsDeps) {
    this.store = deps.store;
    this.clock = deps.clock;
    this.flow = deps.flow;
    this.events = deps.events;
    this.listeners = deps.listeners;
    this.defaults = deps.defaults;
    this.store.onParentsReady((names) => {
      for (const name of new Set(names)) this.listeners.emitReady(name);
    });
  }

  /**
   * Enqueues `input` and every child below it, all or nothing: the parent is `waiting-children` until its
   * children have ended (each child likewise), then ready once. Each child is checked as an enqueue is, before
   * anything is stored; a child takes neither an idempotency key nor `debounce` (the parent's key makes the
   * whole flow idempotent), nor an id (ids order a parent's children). Under a key a retained job holds, that
   * job is returned (`created: false`) and nothing is stored. At most `FLOW_LIMITS.children` children, nested
   * at most `FLOW_LIMITS.depth` deep.
   */
  async enqueue(input: FlowInput): Promise<EnqueueResult> {
    const now = this.clock.now();
    const settingsOf = batchSettings(this.defaults, now);
    const root = buildNewJob(input, now, null, settingsOf);
    if (root.debounceKey !== null) {
      throw new WorkqError('VALIDATION', 'A parent with children takes no debounce; use an idempotencyKey instead.');
    }
    const descendants = flatten(root, input.children, (child) => buildNewJob(child, now, null, settingsOf));
    refuseRetention([root, ...descendants]);
    return this.insert([root, ...descendants], now);
  }

  /**
   * Ends the attempt of the job `lease` holds without counting it (no error, no attempt spent) and parks it
   * `waiting-children` on `children`, enqueued in the same step; it runs again, told it is resumed, once they
   * have all ended (their failures as each child's `onFailure` says). `LEASE_LOST` when the lease does not
   * hold, and then nothing is enqueued. Resolves to the direct children, in order.
   */
  async waitForChildren(lease: LeaseRef, children: readonly ChildInput[]): Promise<EnqueueResult[]> {
    if (!Array.isArray(children) || children.length === 0) {
      throw new WorkqError('VALIDATION', 'waitForChildren needs at least one child.');
    }
    const now = this.clock.now();
    const settingsOf = batchSettings(this.defaults, now);
    const jobs = flatten({ id: lease.id }, children, (child) => buildNewJob(child, now, null, settingsOf));
    refuseRetention(jobs);
    await this.flow.placeInGroups(jobs);
    if (!(await this.store.waitForChildren(lease, jobs, now))) {
      throw new WorkqError(
        'LEASE_LOST',
        `Job ${lease.id} is not held by this lease any more (it expired, the job was cancelled, or another worker claimed it); no children were enqueued.`,
      );
    }
    this.events.waitingForChildren(lease.id, now);
    const records = this.announce(jobs, now);
    return records.filter((job) => job.parentId === lease.id).map((job) => enqueued(job, now));
  }

  /**
   * The children of job `id`, in enqueue order, after `afterId` when given, at most `limit`
   * (`FLOW_LIMITS.statusChildren` by default), and with `maxBytes` up to the child whose stored size brings the
   * page to it (`ChildrenPageQuery`: such a page may end before the last child; the one after it that comes
   * back empty says there are no more); `NOT_FOUND` when there is no such job.
   */
  async children(id: string, page: Partial<ChildrenPageQuery> = {}): Promise<JobStatus[]> {
    const limit = Math.min(Math.max(1, Math.floor(page.limit ?? FLOW_LIMITS.statusChildren)), FLOW_LIMITS.children);
    // A child's status never shows its payload: it is left unread, and counts nothing toward `maxBytes`.
    const children = await this.store.listChildren(id, { ...pageAfter(page), limit, withoutPayload: true });
    if (
      children.length === 0 &&
      page.afterId === undefined &&
      !(await this.store.getJob(id, { withoutValues: true }))
    ) {
      throw new WorkqError('NOT_FOUND', `No job with id ${id} (it may have been pruned from history).`);
    }
    const now = this.clock.now();
    return children.map((child) => toJobStatus(child, now));
  }

  /**
   * A page of the children of the job `lease` holds, for its handler: in enqueue order, after `afterId` when
   * given, at most `limit` (1 to `FLOW_LIMITS.statusChildren`) and, with `maxBytes`, up to the child whose
   * result and error bring the page to it; and whether more follow, each with only what `ctx.children` shows.
   * The lease is checked in the same read (`FlowStore.listHeldChildren`), so a resumed parent's page costs its
   * worker one round trip and one store read. `LEASE_LOST` when the lease does not hold the job.
   */
  async heldChildren(lease: LeaseRef, page: ChildrenPageQuery): Promise<{ children: HeldChild[]; more: boolean }> {
    const limit = Math.min(Math.max(1, Math.floor(page.limit)), FLOW_LIMITS.statusChildren);
    const now = this.clock.now();
    const read = await this.store.listHeldChildren(lease, { ...pageAfter(page), limit }, now);
    if (read === null) throw leaseLost(lease.id);
    return { children: read.children.map((child) => heldChild(child, now)), more: read.more };
  }

  /** One job's status (`Engine.get`): with its errors, and for a parent its first children (`JobStatus.children`). */
  async status(job: JobRecord): Promise<JobStatus> {
    const now = this.clock.now();
    const status = toJobStatus(job, now, { errors: true });
    if ((job.childCount ?? 0) === 0) return status;
    const children = await this.store.listChildStates(job.id, { limit: FLOW_LIMITS.statusChildren });
    status.children = children.map((child) => ({ id: child.id, name: child.name, state: visibleState(child, now) }));
    return status;
  }

  /**
   * Replays a finished parent with its flow: a new parent and, below it, a new job for each of its children at
   * every depth (the children of its `waitForChildren` calls too), each a replay of the one it copies, with its
   * payload, options and `onFailure`. So the new parent runs after its new children, resumed.
   */
  async replay(job: JobRecord): Promise<EnqueueResult> {
    const now = this.clock.now();
    const settingsOf = batchSettings(this.defaults, now);
    const root = buildNewJob(replayInput(job), now, job.id, settingsOf);
    const jobs = [root, ...(await this.replayedChildren(job, root.id, now, settingsOf))];
    root.pendingChildren = jobs.filter((child) => child.parentId === root.id).length;
    return this.insert(jobs, now);
  }

  /** New jobs replaying the children of `original` below `parentId` (the replay of `original`), preorder. */
  private async replayedChildren(
    original: JobRecord,
    parentId: string,
    now: Date,
    settingsOf: SettingsOf,
  ): Promise<NewJob[]> {
    const jobs: NewJob[] = [];
    for (let afterId: string | undefined; ; ) {
      const page = await this.store.listChildren(original.id, { ...(afterId ? { afterId } : {}), limit: 1000 });
      for (const child of page) {
        const copy = buildNewJob(replayInput(child), now, child.id, settingsOf);
        copy.parentId = parentId;
        copy.onFailure = child.onFailure ?? 'fail-parent';
        const below = (child.childCount ?? 0) > 0 ? await this.replayedChildren(child, copy.id, now, settingsOf) : [];
        copy.pendingChildren = below.filter((job) => job.parentId === copy.id).length;
        jobs.push(copy, ...below);
        if (jobs.length > FLOW_LIMITS.children) throw tooManyChildren();
      }
      if (page.length < 1000) return jobs;
      afterId = page[page.length - 1]?.id;
    }
  }

  /**
   * Inserts a flow made at `now` (root first) and announces it. Under a root id a job holds, the answer is that
   * job when it is the same one (type, version and payload: the flow sent again), `CONFLICT` when it is not.
   */
  private async insert(jobs: NewJob[], now: Date): Promise<EnqueueResult> {
    await this.flow.placeInGroups(jobs);
    for (let tries = 1; ; tries++) {
      const outcome = await this.store.insertFlow(jobs);
      if (outcome.job !== null && !outcome.created) {
        checkedIds(jobs.slice(0, 1), [outcome]);
        return { id: outcome.job.id, created: false, state: visibleState(outcome.job, now) };
      }
      if (outcome.job !== null) {
        const [root] = this.announce(jobs, now);
        return enqueued(root as JobRecord, now);
      }
      if (tries >= KEY_HOLDER_TRIES) throw keyHolderGone(`the flow's parent ${jobs[0]?.id}`);
    }
  }

  /** Tells waiting claims and event subscribers of the inserted `jobs`; resolves to their records. */
  private announce(jobs: readonly NewJob[], now: Date): JobRecord[] {
    const records = jobs.map(flowRecord);
    this.listeners.announce(records.filter((job) => job.state === 'waiting'));
    this.events.enqueued(records, now);
    return records;
  }
}

/** The page's `afterId` and `maxBytes`, those it has. */
function pageAfter(page: Partial<ChildrenPageQuery>): Omit<ChildrenPageQuery, 'limit'> {
  return {
    ...(page.afterId ? { afterId: page.afterId } : {}),
    ...(page.maxBytes === undefined ? {} : { maxBytes: page.maxBytes }),
  };
}

/** A child as its parent's handler reads it (`Flows.heldChildren`): its state, and its result or last error. */
export type HeldChild = Pick<JobStatus, 'id' | 'name' | 'state' | 'result' | 'error' | 'childCount'>;

function heldChild(child: ChildOutcome, now: Date): HeldChild {
  const held: HeldChild = { id: child.id, name: child.name, state: visibleState(child, now) };
  if (child.state === 'completed' && child.result !== null && child.result !== undefined) {
    held.result = fromStoredValue(child.result);
  }
  if (child.error) held.error = child.error;
  if (child.childCount > 0) held.childCount = child.childCount;
  return held;
}

/** The enqueue result of a job just inserted. */
function enqueued(job: JobRecord, now: Date): EnqueueResult {
  return { id: job.id, created: true, state: visibleState(job, now) };
}

/** The record of a job of a flow right after its insert. */
function flowRecord(job: NewJob): JobRecord {
  const record = insertedRecord(job);
  const pending = job.pendingChildren ?? 0;
  if (pending > 0) record.state = 'waiting-children';
  record.parentId = job.parentId ?? null;
  record.onFailure = job.onFailure ?? null;
  record.childCount = pending;
  record.pendingChildren = pending;
  return record;
}

/** What replaying `job` enqueues: its payload and options, as `Engine.replay` takes them. */
function replayInput(job: JobRecord): EnqueueInput {
  const { priority, maxAttempts, backoff, leaseMs, order } = job;
  const traceContext = job.traceContext ?? undefined;
  const group = job.group || undefined;
  const timeoutMs = job.timeoutMs ?? undefined;
  return {
    name: job.name,
    version: job.version,
    payload: fromStoredValue(job.payload),
    options: { priority, maxAttempts, backoff, leaseMs, timeoutMs, order, traceContext, group },
  };
}

function tooManyChildren(): WorkqError {
  return new WorkqError(
    'VALIDATION',
    `A flow takes at most ${FLOW_LIMITS.children} children at every depth; enqueue more through children that have children of their own, or in several flows.`,
  );
}

/**
 * The jobs for `children` of `parent` and their descendants, in preorder (each parent before its children, so
 * ids ascend in enqueue order among siblings), each child checked and linked to its parent, each parent's
 * `pendingChildren` its direct children. `build` makes a child's job as an enqueue would.
 */
function flatten(
  parent: { id: string; pendingChildren?: number },
  children: readonly ChildInput[],
  build: (child: ChildInput) => NewJob,
): NewJob[] {
  const jobs: NewJob[] = [];
  const visit = (parentJob: { id: string; pendingChildren?: number }, list: unknown, depth: number) => {
    if (!Array.isArray(list)) throw new WorkqError('VALIDATION', 'children must be an array of child jobs.');
    if (depth > FLOW_LIMITS.depth) {
      throw new WorkqError('VALIDATION', `Children nest at most ${FLOW_LIMITS.depth} deep below their parent.`);
    }
    parentJob.pendingChildren = list.length;
    for (const child of list as ChildInput[]) {
      const job = build(checkChild(child));
      job.parentId = parentJob.id;
      job.onFailure = child.onFailure ?? 'fail-parent';
      jobs.push(job);
      if (jobs.length > FLOW_LIMITS.children) throw tooManyChildren();
      visit(job, child.children ?? [], depth + 1);
    }
  };
  visit(parent, children, 1);
  return jobs;
}

/** `child`, once its flow options are known to be valid: a policy it names, and no key, debounce or id of its own. */
function checkChild(child: ChildInput): ChildInput {
  if (child.onFailure !== undefined && !(CHILD_FAILURE_POLICIES as readonly string[]).includes(child.onFailure)) {
    throw new WorkqError(
      'VALIDATION',
      `onFailure must be one of ${CHILD_FAILURE_POLICIES.join(', ')}; got ${String(child.onFailure)}.`,
    );
  }
  if ((child.idempotencyKey ?? child.options?.idempotencyKey) !== undefined || child.options?.debounce !== undefined) {
    throw new WorkqError(
      'VALIDATION',
      `A child job (${String(child.name)}) takes no idempotencyKey or debounce: its flow is enqueued at once, idempotent through its parent's key.`,
    );
  }
  if ((child.id ?? child.options?.id) !== undefined) {
    throw new WorkqError(
      'VALIDATION',
      `A child job (${String(child.name)}) takes no id: the engine makes each child's id, ascending in enqueue order, which is the order its parent reads its children in. Find a child through its parent (children, childResults) instead.`,
    );
  }
  return child;
}

/**
 * `VALIDATION` for a flow's job with a retention of its own: the jobs of a flow are kept, and pruned, by the
 * server-wide retention, as a parent's results depend on its children being there.
 */
function refuseRetention(jobs: readonly NewJob[]): void {
  if (jobs.some((job) => job.retainCompletedMs != null || job.retainDeadMs != null)) {
    throw new WorkqError(
      'VALIDATION',
      "The jobs of a flow (a parent and its children) take no retention of their own: they are kept for the server-wide historyRetentionMs. Leave retention out of their options and their types' defaults.",
    );
  }
}
