import { canonicalJson, type EnqueueOptions, MAX_BATCH_SIZE, type TraceContext } from '@workq/core';
import { nextTurn } from './next-turn.ts';
import type { Call } from './transport.ts';

/** What the server answers for each enqueued job. */
export interface EnqueueOutcome {
  id: string;
  /** `false` when an idempotency key or the job's id returned an existing job. */
  created: boolean;
}

interface PendingEnqueue {
  payload: unknown;
  id: string | undefined;
  idempotencyKey: string | undefined;
  traceContext: TraceContext | undefined;
  resolve: (result: EnqueueOutcome) => void;
  reject: (error: unknown) => void;
}

interface Group {
  name: string;
  version: number;
  /** The options the group's jobs share: their own, without their ids and keys. */
  options: EnqueueOptions;
  /** When the last of the group's enqueues runs out of time (epoch ms): their wait for a request counts. */
  deadlineAt: number;
  pending: PendingEnqueue[];
}

/**
 * Enqueue requests a client keeps unanswered at once. Past them, enqueues wait
 * and go out together when one is answered, so a producer that sends faster
 * than the server answers makes fewer, larger requests instead of queueing
 * one request per job; below them, nothing waits.
 */
export const ENQUEUE_REQUESTS_IN_FLIGHT = 2;

/**
 * Merges enqueues into one `enqueueMany` request per job type, version and
 * options; each job keeps its own id, idempotency key and trace context. An
 * enqueue goes out at once when nothing is waiting and fewer than
 * `ENQUEUE_REQUESTS_IN_FLIGHT` requests are unanswered; the enqueues made
 * after it in the same turn of the event loop (e.g. under `Promise.all`) go
 * out together at the turn's end, and those made while that many requests
 * are unanswered go out together when one is answered.
 */
export class EnqueueBatcher {
  private groups = new Map<string, Group>();
  private flushScheduled = false;
  private inFlight = 0;

  constructor(private readonly call: Call) {}

  /** Enqueues one job; `options` may carry its id and idempotency key. `timeoutMs` limits its request. */
  enqueue(
    name: string,
    version: number,
    payload: unknown,
    options: EnqueueOptions,
    timeoutMs?: number,
  ): Promise<EnqueueOutcome> {
    return new Promise((resolve, reject) => {
      if (!this.flushScheduled && this.groups.size === 0 && this.inFlight < ENQUEUE_REQUESTS_IN_FLIGHT) {
        // A lone enqueue goes out at once; those that follow in the same turn are batched.
        this.scheduleFlush();
        this.track(this.sendOne(name, version, payload, options, timeoutMs)).then(resolve, reject);
        return;
      }
      const { id, idempotencyKey, traceContext, ...shared } = options;
      const key = `${name}\u0000${version}\u0000${canonicalJson(shared)}`;
      let group = this.groups.get(key);
      if (!group) {
        group = { name, version, options: shared, deadlineAt: 0, pending: [] };
        this.groups.set(key, group);
      }
      group.deadlineAt = Math.max(group.deadlineAt, Date.now() + (timeoutMs ?? Number.POSITIVE_INFINITY));
      group.pending.push({ payload, id, idempotencyKey, traceContext, resolve, reject });
      // At the limit, the next answered request flushes.
      if (this.inFlight < ENQUEUE_REQUESTS_IN_FLIGHT) this.scheduleFlush();
    });
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    nextTurn(() => this.flush());
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.inFlight >= ENQUEUE_REQUESTS_IN_FLIGHT) return;
    const groups = [...this.groups.values()];
    this.groups = new Map();
    for (const group of groups) {
      for (let at = 0; at < group.pending.length; at += MAX_BATCH_SIZE)
        void this.track(this.sendMany(group, group.pending.slice(at, at + MAX_BATCH_SIZE)));
    }
  }

  /** Counts `request` as unanswered until it settles; then the enqueues that waited for it go out. */
  private track<T>(request: Promise<T>): Promise<T> {
    this.inFlight++;
    return request.finally(() => {
      this.inFlight--;
      if (this.groups.size > 0) this.scheduleFlush();
    });
  }

  private sendOne(
    name: string,
    version: number,
    payload: unknown,
    options: EnqueueOptions,
    timeoutMs: number | undefined,
  ): Promise<EnqueueOutcome> {
    return this.call(
      (api, signal) => api.jobs.enqueue.mutate({ name, version, payload, options }, { signal }),
      timeoutMs === undefined ? undefined : { timeoutMs },
    );
  }

  private async sendMany(group: Group, pending: PendingEnqueue[]): Promise<void> {
    const { name, version, options } = group;
    const timing = Number.isFinite(group.deadlineAt)
      ? { timeoutMs: Math.max(1, group.deadlineAt - Date.now()) }
      : undefined;
    try {
      if (pending.length === 1) {
        const [only] = pending as [PendingEnqueue];
        const { id, idempotencyKey, traceContext } = only;
        const own =
          id === undefined && idempotencyKey === undefined && traceContext === undefined
            ? options
            : { ...options, id, idempotencyKey, traceContext };
        only.resolve(await this.sendOne(name, version, only.payload, own, timing?.timeoutMs));
        return;
      }
      const payloads = pending.map((p) => p.payload);
      const keys = pending.map((p) => p.idempotencyKey ?? null);
      const keyed = keys.some((key) => key !== null);
      const ids = pending.map((p) => p.id ?? null);
      const identified = ids.some((id) => id !== null);
      // Traced jobs each carry the context of their own `create` span.
      const traced = pending.some((p) => p.traceContext !== undefined);
      const request = {
        name,
        version,
        payloads,
        options,
        ...(keyed ? { idempotencyKeys: keys } : {}),
        ...(identified ? { ids } : {}),
        ...(traced ? { perJob: pending.map((p) => (p.traceContext ? { traceContext: p.traceContext } : null)) } : {}),
      };
      const results = await this.call((api, signal) => api.jobs.enqueueMany.mutate(request, { signal }), timing);
      for (const [i, p] of pending.entries()) p.resolve(results[i] as EnqueueOutcome);
    } catch (error) {
      for (const p of pending) p.reject(error);
    }
  }
}
