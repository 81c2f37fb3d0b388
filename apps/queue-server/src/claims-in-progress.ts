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

/** Which job types a stop request may end the claims of: those its caller may consume. */
export type MayStop = (jobName: string) => boolean;

interface Claim {
  jobName: string;
  controller: AbortController;
}

/**
 * The claim requests in progress on this server, by worker, so that a closing
 * worker can end its own long-polls: they answer at once, with whatever was
 * handed to them, instead of having their connections dropped. A dropped
 * connection is read only later, and a job handed over meanwhile would be
 * leased to nobody. A stop request reaches only the job types its caller may
 * consume, so a token cannot end the waits of claims it could not make.
 */
export class ClaimsInProgress {
  private readonly byWorker = new Map<string, Set<Claim>>();
  /** Per worker id that asked to stop waiting: until when (epoch ms), and for which job types. */
  private readonly stopping = new Map<string, { until: number; mayStop: MayStop }>();

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
   * Ends the waits of `workerId`'s claims in progress here for the job types
   * `mayStop` allows, and keeps the ones arriving in the next seconds from
   * waiting. Resolves to how many it ended (none: they are on another server,
   * or done, or of other job types).
   */
  stopWaiting(workerId: string, mayStop: MayStop): number {
    if (this.stopping.size >= MAX_STOPPING_WORKERS) this.stopping.clear();
    this.stopping.set(workerId, { until: Date.now() + STOPPING_FOR_MS, mayStop });
    let ended = 0;
    for (const claim of this.byWorker.get(workerId) ?? []) {
      if (!mayStop(claim.jobName)) continue;
      claim.controller.abort();
      ended++;
    }
    return ended;
  }

  private isStopping(workerId: string, jobName: string): boolean {
    const mark = this.stopping.get(workerId);
    if (mark === undefined) return false;
    if (mark.until > Date.now()) return mark.mayStop(jobName);
    this.stopping.delete(workerId);
    return false;
  }
}
