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

/** How often a lease of `leaseMs` is extended: every third of it, at least every 50 ms. */
function roundOf(leaseMs: number): number {
  return Math.max(50, Math.floor(leaseMs / 3));
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
 * How long an extension waits on the server while this worker holds no job, or only jobs whose leases need
 * no round sooner: a worker keeps one extension waiting at all times once it has held a job, so that the
 * cancellation of any job it holds, however new, answers it at once. While nothing is cancelled that costs a
 * request this often per worker, not one per job.
 */
export const IDLE_ROUND_MS = 10_000;

/**
 * Keeps the leases of held jobs alive (running, or prefetched and waiting
 * for a slot) and hears of their cancellation. From the first job it holds
 * until it stops, one extension request is always waiting on the server: it
 * extends every held job in one request, which the server holds until the
 * next round is due (a third of the shortest lease held, `IDLE_ROUND_MS` at
 * most), or answers at once when a job this worker holds is cancelled,
 * through any server: the server watches the worker's id, so a job claimed
 * after the request was sent is covered too. A lease the server reports lost
 * (expired, job cancelled) aborts that job's signal. A job whose lease needs
 * a round sooner than the waiting one ends starts a new round at once.
 */
export class LeaseKeeper {
  private readonly held = new Map<string, HeldLease>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** When the timer's round is due (epoch ms, this process's clock). */
  private timerDueAtMs = 0;
  private stopped = false;
  /** The latest extension still waiting for its answer: when the next round is due after it, and what ends it early. */
  private inFlight: { dueAtMs: number; ending: AbortController } | undefined;

  /**
   * `now`: this process's clock (epoch ms). `workerId`: sent with each extension, for the worker registry and
   * for the server to watch this worker's jobs; without it, rounds run only while jobs are held, and a job held
   * after a round was sent is heard of at the next one.
   */
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
    if (this.stopped) return jobAbort;
    const nextDueAtMs = this.inFlight?.dueAtMs ?? (this.timer ? this.timerDueAtMs : undefined);
    if (nextDueAtMs === undefined || nextDueAtMs > this.now() + roundOf(leaseMs)) this.startRound();
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
    this.timer = undefined;
    this.inFlight?.ending.abort();
  }

  /** Ends the round waiting (if any) and sends a new one now. */
  private startRound(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.inFlight?.ending.abort();
    this.inFlight = undefined;
    void this.extendAll();
  }

  /** How long a round waits: a third of the shortest lease held, `IDLE_ROUND_MS` at most. */
  private roundMs(): number {
    let shortestMs = IDLE_ROUND_MS;
    for (const lease of this.held.values()) shortestMs = Math.min(shortestMs, roundOf(lease.leaseMs));
    return shortestMs;
  }

  private schedule(delayMs: number): void {
    if (this.timer || this.stopped) return;
    this.timerDueAtMs = this.now() + delayMs;
    this.timer = setTimeout(() => void this.extendAll(), delayMs);
  }

  private async extendAll(): Promise<void> {
    this.timer = undefined;
    const leases = [...this.held.values()];
    if (this.stopped || (leases.length === 0 && this.workerId === undefined)) return;
    const items = leases.map(({ id, leaseToken, leaseMs }) => ({ id, leaseToken, leaseMs }));
    // The server holds the answer until the next round is due, unless a job of this worker is cancelled meanwhile.
    const waitMs = this.roundMs();
    // An answer later than the next round is of no use: that round asks again.
    const timeoutMs = Math.max(1_000, waitMs);
    const sentAtMs = this.now();
    const round = { dueAtMs: sentAtMs + waitMs, ending: new AbortController() };
    /** A job was cancelled: the round is sent again at once, so the watch goes on. */
    let answeredEarly = false;
    this.inFlight = round;
    try {
      const outcomes = await this.call(
        (api, signal) => api.consumer.extend.mutate({ items, workerId: this.workerId, waitMs }, { signal }),
        { timeoutMs, waitMs, signal: round.ending.signal },
      );
      const receivedAtMs = this.now();
      for (const outcome of outcomes) {
        if (!outcome.ok && outcome.cancelled) answeredEarly = true;
        const lease = this.held.get(outcome.id);
        if (!lease) continue;
        if (outcome.ok) {
          const { leaseMs } = lease;
          const serverExpiresAtMs = outcome.leaseExpiresAt.getTime();
          lease.expiresAtMs = localLeaseExpiry({ leaseMs, serverExpiresAtMs, sentAtMs, receivedAtMs });
        } else {
          this.held.delete(outcome.id);
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
    this.schedule(answeredEarly ? 0 : Math.max(0, round.dueAtMs - this.now()));
  }
}
