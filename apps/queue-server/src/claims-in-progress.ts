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

/**
 * The claim requests in progress on this server, by worker, so that a closing
 * worker can end its own long-polls: they answer at once, with whatever was
 * handed to them, instead of having their connections dropped. A dropped
 * connection is read only later, and a job handed over meanwhile would be
 * leased to nobody.
 */
export class ClaimsInProgress {
  private readonly byWorker = new Map<string, Set<AbortController>>();
  /** Per worker id that asked to stop waiting, until when its claims do not wait (epoch ms). */
  private readonly stopping = new Map<string, number>();

  begin(workerId: string): ClaimInProgress {
    const controller = new AbortController();
    if (this.isStopping(workerId)) controller.abort();
    let claims = this.byWorker.get(workerId);
    if (!claims) {
      claims = new Set();
      this.byWorker.set(workerId, claims);
    }
    claims.add(controller);
    return {
      stop: controller.signal,
      end: () => {
        if (claims.delete(controller) && claims.size === 0) this.byWorker.delete(workerId);
      },
    };
  }

  /**
   * Ends the waits of `workerId`'s claims in progress here, and keeps the
   * ones arriving in the next seconds from waiting. Resolves to how many were
   * in progress here (none: they are on another server, or done).
   */
  stopWaiting(workerId: string): number {
    if (this.stopping.size >= MAX_STOPPING_WORKERS) this.stopping.clear();
    this.stopping.set(workerId, Date.now() + STOPPING_FOR_MS);
    const claims = this.byWorker.get(workerId) ?? new Set();
    for (const claim of claims) claim.abort();
    return claims.size;
  }

  private isStopping(workerId: string): boolean {
    const until = this.stopping.get(workerId);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.stopping.delete(workerId);
    return false;
  }
}
