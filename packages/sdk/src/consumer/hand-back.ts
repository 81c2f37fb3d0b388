import { MAX_BATCH_SIZE, WorkqError } from '@workq/core';
import { nextTurn } from '../next-turn.ts';
import type { Call } from '../transport.ts';

/**
 * Jobs a worker gives back unstarted because their leases ran out, or nearly,
 * before it could start them. They go to the server together, once per turn
 * of the event loop, to be ready again at once with their attempt not
 * counted, rather than wait out their leases. A release that fails is
 * reported, not retried: those leases then run out, and the jobs are
 * delivered again as after any lost lease.
 */
export class HandBack {
  private pending: { id: string; leaseToken: string }[] = [];
  private readonly sending = new Set<Promise<void>>();

  constructor(
    private readonly call: Call,
    /** The job type this worker consumes. */
    private readonly name: string,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Gives back the job `id` holds under `leaseToken`. */
  add(id: string, leaseToken: string): void {
    if (this.pending.length === 0) nextTurn(() => this.flush());
    this.pending.push({ id, leaseToken });
  }

  /** Sends everything waiting and resolves once every release has an outcome. */
  async drain(): Promise<void> {
    while (this.pending.length > 0 || this.sending.size > 0) {
      this.flush();
      await Promise.allSettled([...this.sending]);
    }
  }

  private flush(): void {
    const { name } = this;
    while (this.pending.length > 0) {
      const items = this.pending.splice(0, MAX_BATCH_SIZE);
      this.onError(
        new WorkqError(
          'LEASE_LOST',
          `Handed back ${items.length} "${name}" job(s) unstarted: their leases ran out, or nearly, before they could start (was this process paused?). They are ready again for any worker.`,
          { details: { ids: items.map((item) => item.id) } },
        ),
      );
      const sent = this.call((api, signal) => api.consumer.release.mutate({ name, items }, { signal })).then(
        () => undefined,
        this.onError,
      );
      this.sending.add(sent);
      sent.finally(() => this.sending.delete(sent));
    }
  }
}
