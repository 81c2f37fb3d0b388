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
  /** The longest time limit of the group's enqueues. */
  timeoutMs: number;
  pending: PendingEnqueue[];
}

/**
 * Merges enqueues made in the same turn of the event loop (e.g. under
 * `Promise.all`) into one `enqueueMany` request per job type, version and
 * options; each job keeps its own id, idempotency key and trace context. The first enqueue of a
 * turn goes out at once, so a lone enqueue never waits.
 */
export class EnqueueBatcher {
  private groups = new Map<string, Group>();
  private windowOpen = false;

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
      if (!this.windowOpen) {
        // The first enqueue of a turn goes out at once; those that follow in the same turn are batched.
        this.windowOpen = true;
        nextTurn(() => this.flush());
        this.sendOne(name, version, payload, options, timeoutMs).then(resolve, reject);
        return;
      }
      const { id, idempotencyKey, traceContext, ...shared } = options;
      const key = `${name}\u0000${version}\u0000${canonicalJson(shared)}`;
      let group = this.groups.get(key);
      if (!group) {
        group = { name, version, options: shared, timeoutMs: 0, pending: [] };
        this.groups.set(key, group);
      }
      group.timeoutMs = Math.max(group.timeoutMs, timeoutMs ?? Number.POSITIVE_INFINITY);
      group.pending.push({ payload, id, idempotencyKey, traceContext, resolve, reject });
    });
  }

  private flush(): void {
    this.windowOpen = false;
    const groups = [...this.groups.values()];
    this.groups = new Map();
    for (const group of groups) {
      for (let at = 0; at < group.pending.length; at += MAX_BATCH_SIZE)
        void this.sendMany(group, group.pending.slice(at, at + MAX_BATCH_SIZE));
    }
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
    const timing = Number.isFinite(group.timeoutMs) ? { timeoutMs: group.timeoutMs } : undefined;
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
