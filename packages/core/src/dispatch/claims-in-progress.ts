import { type Clock, systemClock } from '../engine/clock.ts';

/** How long a worker that asked to stop waiting keeps its claims here from waiting. */
const STOPPING_FOR_MS = 10_000;

/** Workers remembered as stopping at most; past it the memory starts over (a forgotten one's claims just wait). */
const MAX_STOPPING_WORKERS = 10_000;

/** One claim request in progress: `stop` aborts when its worker asks to stop waiting. */
export interface ClaimInProgress {
  readonly stop: AbortSignal;
  /** Call once the claim has answered. */
  end(): void;
}

interface Claim {
  jobName: string;
  controller: AbortController;
}

/**
 * Who asked a worker's claims to stop waiting, as the job types it may stop:
 * the same object for every request of one caller (one token's scopes), so
 * the marks per caller stay few.
 */
export interface StopScope {
  /** Whether this caller may end the waits of claims of `jobName`. */
  covers(jobName: string): boolean;
}

/**
 * The claim requests in progress on this server, by worker, so that a closing
 * worker can end its own long-polls: they answer at once, with whatever was
 * handed to them, instead of having their connections dropped. A dropped
 * connection is read only later, and a job handed over meanwhile would be
 * leased to nobody. A stop request reaches only the job types its caller covers
 * (the server: those its token may consume), so a caller cannot end the
 * waits of claims it could not make.
 */
export class ClaimsInProgress {
  private readonly byWorker = new Map<string, Set<Claim>>();
  /** Per worker id that asked to stop waiting: per asking caller, until when (epoch ms). */
  private readonly stopping = new Map<string, Map<StopScope, number>>();

  constructor(private readonly clock: Clock = systemClock) {}

  begin(workerId: string, jobName: string): ClaimInProgress {
    const claim = { jobName, controller: new AbortController() };
    if (this.isStopping(workerId, jobName)) claim.controller.abort();
    let claims = this.byWorker.get(workerId);
    if (!claims) {
      claims = new Set();
      this.byWorker.set(workerId, claims);
    }
    claims.add(claim);
    return {
      stop: claim.controller.signal,
      end: () => {
        if (claims.delete(claim) && claims.size === 0) this.byWorker.delete(workerId);
      },
    };
  }

  /**
   * Ends the waits of `workerId`'s claims in progress here of the job types
   * `caller` covers, and keeps those arriving in the next seconds from
   * waiting. Resolves to how many it ended (none: they are on another
   * server, or done, or of other job types).
   */
  stopWaiting(workerId: string, caller: StopScope): number {
    if (this.stopping.size >= MAX_STOPPING_WORKERS) this.stopping.clear();
    const marks = this.stopping.get(workerId) ?? new Map<StopScope, number>();
    marks.set(caller, this.clock.now().getTime() + STOPPING_FOR_MS);
    this.stopping.set(workerId, marks);
    let ended = 0;
    for (const claim of this.byWorker.get(workerId) ?? []) {
      if (!caller.covers(claim.jobName)) continue;
      claim.controller.abort();
      ended++;
    }
    return ended;
  }

  private isStopping(workerId: string, jobName: string): boolean {
    const marks = this.stopping.get(workerId);
    if (marks === undefined) return false;
    const now = this.clock.now().getTime();
    let stopping = false;
    for (const [caller, until] of marks) {
      if (until <= now) marks.delete(caller);
      else if (caller.covers(jobName)) stopping = true;
    }
    if (marks.size === 0) this.stopping.delete(workerId);
    return stopping;
  }
}
