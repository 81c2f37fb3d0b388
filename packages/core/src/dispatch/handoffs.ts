import type { ClaimedJob, ClaimInput, Engine, EnqueueInput, EnqueueResult } from '../engine/engine.ts';

/**
 * Why a parked claim's `taken` signal aborted. A reason given up front: an
 * abort without one builds a new `DOMException`, stack trace and all, for
 * every handed job, on the path a waiting consumer's job takes.
 */
const HANDED_OVER = 'handed over';

/** A claim request parked on this server until work arrives. */
export class ParkedClaim {
  private readonly taking = new AbortController();
  private readonly handoffs: Promise<ClaimedJob[]>[] = [];

  constructor(
    readonly request: ClaimInput & { minVersion: number },
    /** The claim request's own signal: aborted when its client went away. */
    readonly requestSignal: AbortSignal,
  ) {}

  /** Aborted once an enqueue has taken this claim: its wait should end, and `withdraw` resolves to what it got. */
  get taken(): AbortSignal {
    return this.taking.signal;
  }

  /** Whether another enqueue may hand this claim a job: it has asked for more than it was given. */
  get hasRoom(): boolean {
    return this.handoffs.length < this.request.limit;
  }

  handOver(jobs: Promise<ClaimedJob[]>): void {
    this.handoffs.push(jobs);
    this.taking.abort(HANDED_OVER);
  }

  /** The handoffs so far; more may come while they run. */
  handedSoFar(): readonly Promise<ClaimedJob[]>[] {
    return [...this.handoffs];
  }
}

/** Where a server learns that jobs of a type may have become ready (its `WakeupBus`). */
export interface Readiness {
  /** Changes whenever jobs of `name` may have become ready. */
  generation(name: string): number;
  /** How long a handoff's finding stays good for the worker's next claim: the parked claims' poll interval. */
  freshForMs: number;
}

/** A handoff's finding for its worker: at `generation`, nothing else in `range` was ready or due. */
interface HandedEmpty {
  range: string;
  generation: number;
  atMs: number;
}

/** Workers remembered at most; past it the memory starts over (a forgotten worker's claim just queries). */
const MAX_HANDED_WORKERS = 10_000;

/** A claim's job type and versions, as one key. */
function rangeOf(request: ParkedClaim['request']): string {
  return `${request.name}\u0000${request.minVersion}\u0000${request.maxVersion}`;
}

/**
 * Hands new jobs straight to consumers already waiting on this server. A
 * claim long-poll with nothing to do parks here; an enqueue of one job takes
 * the longest-parked claim that reads its version, and its insert leases the
 * job to that claim in the same store step (`Engine.enqueueForClaim`), so the
 * consumer gets it without another claim round trip. The store inserts the
 * job waiting instead when another job is ready for that claim first, so
 * order holds; the claim then wakes and claims as usual.
 */
export class Handoffs {
  private readonly parked = new Map<string, Set<ParkedClaim>>();
  /** Per worker id, what the insert of the job last handed to it found (see `nothingReadySinceHandoff`). */
  private readonly handedEmpty = new Map<string, HandedEmpty>();
  /** Per job name, how many claim attempts are running their store query. */
  private readonly querying = new Map<string, number>();
  /** Job names whose latest claim attempt found nothing: their consumers are waiting for work. */
  private readonly idle = new Set<string>();
  /** Per job name, enqueues waiting for a running claim attempt to end. */
  private readonly waiting = new Map<string, (() => void)[]>();

  /**
   * With `readiness`, a worker's claim right after a handoff may park without a store query (see
   * `nothingReadySinceHandoff`); without it, every claim queries.
   */
  constructor(
    private readonly engine: Engine,
    private readonly readiness?: Readiness,
  ) {}

  /**
   * Runs one claim attempt's store `query`. When it finds nothing and
   * `mayPark()` allows, the claim is parked at once, before any other code
   * runs, and returned as `parked`. While the query runs, an enqueue for a
   * name whose consumers found nothing last time waits for its end instead of
   * inserting at once: the job then goes straight to the claim that parks,
   * not into the queue behind that claim's back (which would cost the
   * consumer a wake-up and one more query).
   */
  async attempt(
    request: ParkedClaim['request'],
    requestSignal: AbortSignal,
    query: () => Promise<ClaimedJob[]>,
    mayPark: () => boolean,
  ): Promise<{ jobs: ClaimedJob[]; parked?: ParkedClaim }> {
    const { name } = request;
    this.querying.set(name, (this.querying.get(name) ?? 0) + 1);
    let found = 0;
    try {
      const jobs = await query();
      found = jobs.length;
      if (found > 0 || !mayPark()) return { jobs };
      return { jobs, parked: this.park(request, requestSignal) };
    } finally {
      const running = (this.querying.get(name) ?? 1) - 1;
      if (running > 0) this.querying.set(name, running);
      else this.querying.delete(name);
      if (found === 0) this.idle.add(name);
      else this.idle.delete(name);
      const waiters = this.waiting.get(name);
      this.waiting.delete(name);
      for (const wake of waiters ?? []) wake();
    }
  }

  /** Parks a claim that found nothing; `withdraw` it when its wait ends, whatever ended it. */
  park(request: ParkedClaim['request'], requestSignal: AbortSignal): ParkedClaim {
    const claim = new ParkedClaim(request, requestSignal);
    if (!this.engine.handsOver) return claim;
    const claims = this.parked.get(request.name) ?? new Set();
    this.parked.set(request.name, claims);
    claims.add(claim);
    return claim;
  }

  /**
   * Unparks `claim`; resolves to the jobs enqueues handed it, if any took it. The claim stays parked while
   * its first handoffs commit, so enqueues arriving meanwhile join it (up to its limit) instead of missing it;
   * then it closes, and answers once those joined too.
   */
  async withdraw(claim: ParkedClaim): Promise<ClaimedJob[]> {
    await Promise.all(claim.handedSoFar());
    this.remove(claim);
    return (await Promise.all(claim.handedSoFar())).flat();
  }

  /**
   * Enqueues one job for the longest-parked claim that reads it (one that an
   * earlier enqueue took still takes more while that handoff commits). When none
   * is parked but a claim of waiting consumers is running its query, waits
   * for that query first (see `attempt`). Resolves to `undefined`, having
   * done nothing, when no such claim is parked then; the caller then
   * enqueues as usual. A handed job's claim answers first, this call a turn later.
   */
  async enqueue(input: EnqueueInput): Promise<EnqueueResult | undefined> {
    let claim = this.take(input.name, input.version);
    if (!claim && this.mayStillPark(input.name)) {
      await new Promise<void>((wake) => this.waitersFor(input.name).push(wake));
      claim = this.take(input.name, input.version);
    }
    if (!claim) return undefined;
    // Read before the insert, whose decision sees every job committed before it starts.
    const generation = this.readiness?.generation(input.name);
    const handing = this.engine.enqueueForClaim(input, claim.request);
    claim.handOver(
      handing.then(
        ({ claimed }) => {
          if (claimed && generation !== undefined) this.noteHandedEmpty(claim.request, generation);
          return claimed ? [claimed] : [];
        },
        () => [],
      ),
    );
    const { result } = await handing;
    // The claim's answer goes out first: its worker is waiting to run the job, the producer only for its id.
    // Everything between the commit and that answer runs in this turn's microtasks, unless the claim waits
    // for a joined handoff's commit (then the producer does not wait for it).
    await new Promise((resolve) => setImmediate(resolve));
    return result;
  }

  /**
   * Whether `request` comes from a worker just handed a job by an insert that found nothing else ready or
   * due for it, with nothing of its job type announced since and less than `freshForMs` ago: its store
   * query would find nothing, so it may park at once. A job that becomes ready unannounced meanwhile (a
   * delayed job or a retry coming due, a job whose lease expired) is found by the parked claim's next poll,
   * as for any parked claim. Answers once per handoff.
   */
  nothingReadySinceHandoff(request: ParkedClaim['request']): boolean {
    const handed = this.handedEmpty.get(request.workerId);
    if (!handed || !this.readiness) return false;
    this.handedEmpty.delete(request.workerId);
    return (
      handed.range === rangeOf(request) &&
      handed.generation === this.readiness.generation(request.name) &&
      this.engine.clock.now().getTime() - handed.atMs < this.readiness.freshForMs
    );
  }

  private noteHandedEmpty(request: ParkedClaim['request'], generation: number): void {
    if (this.handedEmpty.size >= MAX_HANDED_WORKERS) this.handedEmpty.clear();
    this.handedEmpty.set(request.workerId, {
      range: rangeOf(request),
      generation,
      atMs: this.engine.clock.now().getTime(),
    });
  }

  /** Whether a claim of `name` is running its query while its consumers wait for work, so it may park next. */
  private mayStillPark(name: string): boolean {
    return this.engine.handsOver && this.idle.has(name) && (this.querying.get(name) ?? 0) > 0;
  }

  private waitersFor(name: string): (() => void)[] {
    let waiters = this.waiting.get(name);
    if (!waiters) {
      waiters = [];
      this.waiting.set(name, waiters);
    }
    return waiters;
  }

  /** The longest-parked claim that reads `version` and no enqueue has taken yet, else one taken that has room. */
  private take(name: string, version: number): ParkedClaim | undefined {
    let joinable: ParkedClaim | undefined;
    for (const claim of this.parked.get(name) ?? []) {
      const { minVersion, maxVersion } = claim.request;
      // A claim whose client went away may not have withdrawn yet: a job leased to it would wait out its lease.
      if (version < minVersion || version > maxVersion || claim.requestSignal.aborted || !claim.hasRoom) continue;
      if (!claim.taken.aborted) return claim;
      joinable ??= claim;
    }
    return joinable;
  }

  private remove(claim: ParkedClaim): void {
    const claims = this.parked.get(claim.request.name);
    if (!claims?.delete(claim) || claims.size > 0) return;
    this.parked.delete(claim.request.name);
  }
}
