import { canonicalJson, type EnqueueOptions } from '@workq/core';
import { nextTurn } from './next-turn.ts';
import type { QueueApi } from './transport.ts';

interface PendingEnqueue {
  payload: unknown;
  resolve: (result: { id: string; created: boolean }) => void;
  reject: (error: unknown) => void;
}

interface Group {
  name: string;
  version: number;
  options: EnqueueOptions;
  pending: PendingEnqueue[];
}

/** The server's default batch limit: larger groups go out in several requests. */
const MAX_BATCH = 1000;

/**
 * Merges enqueues made in the same turn of the event loop (e.g. under
 * `Promise.all`) into one `enqueueMany` request per job type, version and
 * options. The first enqueue of a turn goes out at once, so a lone enqueue
 * never waits.
 */
export class EnqueueBatcher {
  private groups = new Map<string, Group>();
  private windowOpen = false;

  constructor(private readonly call: <T>(run: (api: QueueApi) => Promise<T>) => Promise<T>) {}

  enqueue(
    name: string,
    version: number,
    payload: unknown,
    options: EnqueueOptions,
  ): Promise<{ id: string; created: boolean }> {
    return new Promise((resolve, reject) => {
      if (!this.windowOpen) {
        // The first enqueue of a turn goes out at once; those that follow in the same turn are batched.
        this.windowOpen = true;
        nextTurn(() => this.flush());
        void this.send(name, version, options, [{ payload, resolve, reject }]);
        return;
      }
      const key = `${name}\u0000${version}\u0000${canonicalJson(options)}`;
      let group = this.groups.get(key);
      if (!group) {
        group = { name, version, options, pending: [] };
        this.groups.set(key, group);
      }
      group.pending.push({ payload, resolve, reject });
    });
  }

  private flush(): void {
    this.windowOpen = false;
    const groups = [...this.groups.values()];
    this.groups = new Map();
    for (const { name, version, options, pending } of groups) {
      for (let at = 0; at < pending.length; at += MAX_BATCH)
        void this.send(name, version, options, pending.slice(at, at + MAX_BATCH));
    }
  }

  private async send(name: string, version: number, options: EnqueueOptions, pending: PendingEnqueue[]): Promise<void> {
    try {
      if (pending.length === 1) {
        const [only] = pending as [PendingEnqueue];
        only.resolve(
          await this.call((api) => api.jobs.enqueue.mutate({ name, version, payload: only.payload, options })),
        );
        return;
      }
      const payloads = pending.map((p) => p.payload);
      const results = await this.call((api) => api.jobs.enqueueMany.mutate({ name, version, payloads, options }));
      for (const [i, p] of pending.entries()) p.resolve(results[i] as { id: string; created: boolean });
    } catch (error) {
      for (const p of pending) p.reject(error);
    }
  }
}
