import { WorkqError } from '@workq/core';
import type { QueueApi } from '../transport.ts';

interface HeldLease {
  id: string;
  leaseToken: string;
  leaseMs: number;
  expiresAtMs: number;
  jobAbort: JobAbort;
}

/**
 * A job's abort state, with its `AbortSignal` made only when a handler reads
 * it: most handlers never do, so most jobs need no controller at all.
 */
export class JobAbort {
  private controller: AbortController | undefined;
  private abortedWith: { reason: unknown } | undefined;

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortedWith) this.controller.abort(this.abortedWith.reason);
    }
    return this.controller.signal;
  }

  get aborted(): boolean {
    return this.abortedWith !== undefined;
  }

  /** Why the job was aborted, if it was. */
  get reason(): unknown {
    return this.abortedWith?.reason;
  }

  abort(reason: unknown): void {
    if (this.abortedWith) return;
    this.abortedWith = { reason };
    this.controller?.abort(reason);
  }
}

/**
 * Keeps the leases of running jobs alive: every third of the shortest lease
 * it extends all of them in one request. A lease the server reports lost
 * (expired, job cancelled) aborts that job's signal.
 */
export class LeaseKeeper {
  private readonly held = new Map<string, HeldLease>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;

  constructor(private readonly call: <T>(run: (api: QueueApi) => Promise<T>) => Promise<T>) {}

  hold(lease: Omit<HeldLease, 'jobAbort'>): JobAbort {
    const jobAbort = new JobAbort();
    const { id, leaseToken, leaseMs, expiresAtMs } = lease;
    this.held.set(id, { id, leaseToken, leaseMs, expiresAtMs, jobAbort });
    this.schedule();
    return jobAbort;
  }

  release(id: string): void {
    this.held.delete(id);
  }

  /** Aborts every held job's signal (the worker is closing and its grace period ran out). */
  abortAll(reason: WorkqError): void {
    for (const lease of this.held.values()) lease.jobAbort.abort(reason);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.timer || this.stopped) return;
    const shortestMs = Math.min(...[...this.held.values()].map((l) => l.leaseMs));
    this.timer = setTimeout(() => void this.extendAll(), Math.max(50, Math.floor(shortestMs / 3)));
  }

  private async extendAll(): Promise<void> {
    this.timer = undefined;
    const leases = [...this.held.values()];
    if (leases.length === 0 || this.stopped) return;
    try {
      const outcomes = await this.call((api) =>
        api.consumer.extend.mutate({
          items: leases.map(({ id, leaseToken, leaseMs }) => ({ id, leaseToken, leaseMs })),
        }),
      );
      for (const outcome of outcomes) {
        const lease = this.held.get(outcome.id);
        if (!lease) continue;
        if (outcome.ok) {
          lease.expiresAtMs = outcome.leaseExpiresAt.getTime();
        } else {
          this.held.delete(outcome.id);
          lease.jobAbort.abort(
            new WorkqError('LEASE_LOST', `Job ${outcome.id} lost its lease (expired or cancelled); stop work on it.`),
          );
        }
      }
    } catch {
      // The server is unreachable: the next round tries again; a lease that runs out meanwhile is redelivered.
      for (const lease of leases) {
        if (lease.expiresAtMs <= Date.now()) {
          this.held.delete(lease.id);
          lease.jobAbort.abort(
            new WorkqError('LEASE_LOST', `Job ${lease.id}'s lease ran out while the server was unreachable.`),
          );
        }
      }
    }
    if (this.held.size > 0) this.schedule();
  }
}
