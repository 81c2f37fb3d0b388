import { WorkqError } from '@workq/core';
import type { Call } from '../transport.ts';

interface HeldLease {
  id: string;
  leaseToken: string;
  leaseMs: number;
  /** When the lease runs out, by this process's clock (see `localLeaseExpiry`). */
  expiresAtMs: number;
  jobAbort: JobAbort;
}

/** How a lease came to this worker: the request that granted or extended it, and the server's answer. */
export interface LeaseGrant {
  leaseMs: number;
  /** The expiry the server gave, by its clock (epoch ms). */
  serverExpiresAtMs: number;
  /** When the request that granted or extended it was sent, by this process's clock. */
  sentAtMs: number;
  /** When its answer was read, by this process's clock. */
  receivedAtMs: number;
}

/**
 * When a lease runs out, by this process's clock. The server granted it after
 * the request was sent and before the answer was read, so it ends between
 * `sentAtMs + leaseMs` and `receivedAtMs + leaseMs`. Within that, the
 * server's own expiry is taken (exact when the clocks agree). The bounds
 * need no clock: the lower one catches a process that was paused (stopped,
 * swapped out, frozen in a long GC) while the answer waited to be read; it
 * also keeps a clock running ahead of the server's from making every lease
 * look expired. A clock running behind the server's by more than the start
 * margin can still make a lease look longer than it is.
 */
export function localLeaseExpiry(grant: LeaseGrant): number {
  const { leaseMs, serverExpiresAtMs, sentAtMs, receivedAtMs } = grant;
  return Math.max(sentAtMs + leaseMs, Math.min(serverExpiresAtMs, receivedAtMs + leaseMs));
}

/**
 * How much of its lease a job must have left for this worker to start it:
 * a tenth of the lease, at most a second. A job with less is handed back
 * unstarted rather than run while another worker may already hold it.
 */
export function startMarginMs(leaseMs: number): number {
  return Math.min(1_000, Math.floor(leaseMs / 10));
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
 * How long a newly held job is held before its cancellation is watched: a
 * job that ends sooner costs no extension, and one that runs on is watched
 * from then. Jobs arriving all the time start a round at most this often.
 */
export const WATCH_AFTER_MS = 1_000;

/**
 * Keeps the leases of held jobs alive (running, or prefetched and waiting
 * for a slot): every third of the shortest lease it extends all of them in
 * one request, which the server holds until the next round is due, or
 * answers at once when one of those jobs is cancelled through it. A job held
 * `WATCH_AFTER_MS` that no request in flight covers starts a new round at
 * once, so its cancellation is heard too. A lease the server reports lost
 * (expired, job cancelled) aborts that job's signal.
 */
export class LeaseKeeper {
  private readonly held = new Map<string, HeldLease>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;
  private watchTimer: ReturnType<typeof setTimeout> | undefined;
  /** The latest extension still waiting for its answer: the jobs it covers, and what ends it early. */
  private inFlight: { ids: ReadonlySet<string>; ending: AbortController } | undefined;

  /** `now`: this process's clock (epoch ms). `workerId`: sent with each extension, for the worker registry. */
  constructor(
    private readonly call: Call,
    private readonly now: () => number = () => Date.now(),
    private readonly workerId?: string,
  ) {}

  /** Holds a lease from the claim that granted it. */
  hold(id: string, leaseToken: string, grant: LeaseGrant): JobAbort {
    const jobAbort = new JobAbort();
    const { leaseMs } = grant;
    this.held.set(id, { id, leaseToken, leaseMs, expiresAtMs: localLeaseExpiry(grant), jobAbort });
    this.schedule();
    if (!this.watchTimer && !this.stopped) this.watchTimer = setTimeout(() => this.watchNewJobs(), WATCH_AFTER_MS);
    return jobAbort;
  }

  /**
   * Whether job `id` may start now: its lease is held, not lost, and has more than `startMarginMs` left.
   * A job that may not is no longer kept alive.
   */
  mayStart(id: string): boolean {
    const lease = this.held.get(id);
    if (!lease || lease.jobAbort.aborted) return false;
    if (lease.expiresAtMs - this.now() > startMarginMs(lease.leaseMs)) return true;
    this.held.delete(id);
    return false;
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
    if (this.watchTimer) clearTimeout(this.watchTimer);
    this.inFlight?.ending.abort();
  }

  /** Starts a round now when a held job is covered by no extension in flight (see `WATCH_AFTER_MS`). */
  private watchNewJobs(): void {
    this.watchTimer = undefined;
    if (this.stopped) return;
    const covered = this.inFlight?.ids;
    let uncovered = false;
    for (const id of this.held.keys()) {
      if (!covered?.has(id)) {
        uncovered = true;
        break;
      }
    }
    if (!uncovered) return;
    this.inFlight?.ending.abort();
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    void this.extendAll();
  }

  /** A third of the shortest lease held: how often the leases are extended. */
  private roundMs(): number {
    const shortestMs = Math.min(...[...this.held.values()].map((l) => l.leaseMs));
    return Math.max(50, Math.floor(shortestMs / 3));
  }

  private schedule(delayMs = this.roundMs()): void {
    if (this.timer || this.stopped) return;
    this.timer = setTimeout(() => void this.extendAll(), delayMs);
  }

  private async extendAll(): Promise<void> {
    this.timer = undefined;
    const leases = [...this.held.values()];
    if (leases.length === 0 || this.stopped) return;
    const items = leases.map(({ id, leaseToken, leaseMs }) => ({ id, leaseToken, leaseMs }));
    // The server holds the answer until the next round is due, unless a job is cancelled meanwhile.
    const waitMs = this.roundMs();
    // An answer later than the next round is of no use: that round asks again.
    const timeoutMs = Math.max(1_000, waitMs);
    const sentAtMs = this.now();
    const round = { ids: new Set(items.map((item) => item.id)), ending: new AbortController() };
    /** A job was cancelled: the other jobs are watched again at once. */
    let answeredEarly = false;
    this.inFlight = round;
    try {
      const outcomes = await this.call(
        (api, signal) => api.consumer.extend.mutate({ items, workerId: this.workerId, waitMs }, { signal }),
        { timeoutMs, waitMs, signal: round.ending.signal },
      );
      const receivedAtMs = this.now();
      for (const outcome of outcomes) {
        const lease = this.held.get(outcome.id);
        if (!lease) continue;
        if (outcome.ok) {
          const { leaseMs } = lease;
          const serverExpiresAtMs = outcome.leaseExpiresAt.getTime();
          lease.expiresAtMs = localLeaseExpiry({ leaseMs, serverExpiresAtMs, sentAtMs, receivedAtMs });
        } else {
          this.held.delete(outcome.id);
          if (outcome.cancelled) answeredEarly = true;
          const why = outcome.cancelled ? 'was cancelled' : 'lost its lease (expired or cancelled)';
          lease.jobAbort.abort(new WorkqError('LEASE_LOST', `Job ${outcome.id} ${why}; stop work on it.`));
        }
      }
    } catch {
      // Ended on purpose: a newer round took over, or the keeper stopped.
      if (round.ending.signal.aborted) return;
      // The server is unreachable: the next round tries again; a lease that runs out meanwhile is redelivered.
      for (const lease of leases) {
        if (lease.expiresAtMs <= this.now()) {
          this.held.delete(lease.id);
          lease.jobAbort.abort(
            new WorkqError('LEASE_LOST', `Job ${lease.id}'s lease ran out while the server was unreachable.`),
          );
        }
      }
    }
    if (this.inFlight !== round) return;
    this.inFlight = undefined;
    // The answer waited for the round, unless a cancellation cut it short: the next one is due when it ends.
    if (this.held.size > 0) this.schedule(answeredEarly ? 0 : Math.max(0, sentAtMs + waitMs - this.now()));
  }
}
