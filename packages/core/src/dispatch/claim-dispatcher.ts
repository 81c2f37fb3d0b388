import { claimRequest } from '../engine/claims.ts';
import type { ClaimedJob, ClaimInput, CompleteOutcome, Engine, EnqueueInput, EnqueueResult } from '../engine/engine.ts';
import type { WakeupBus } from '../notify/wakeup-bus.ts';
import { type ClaimState, nextClaimState } from './claim-states.ts';
import { type ClaimInProgress, ClaimsInProgress, type StopScope } from './claims-in-progress.ts';
import { Coalescer } from './coalescer.ts';
import { Handoffs, ParkedClaim } from './handoffs.ts';
import { PresenceTracker } from './presence.ts';

/** An ack a claim carries: complete held job `id` with `result`. */
export interface CarriedAck {
  id: string;
  leaseToken: string;
  result: unknown;
}

/**
 * A long-poll claim: the engine's `ClaimInput` (lease up to `limit` jobs of `name` within the versions), with
 * what the request adds around it: who asks, how long to wait for work, and the acks it carries. Each of its
 * store attempts goes down as one `ClaimRequest` (`claimRequest`), unchanged through `Claims` to the store.
 */
export interface DispatchedClaim extends ClaimInput {
  minVersion: number;
  /** The worker's host, for the worker registry. */
  host: string;
  /** The worker's process id and start time, for the worker registry, when it sent them. */
  pid?: number | null;
  startedAt?: Date | null;
  /** How long to wait for work when none is ready; capped by `maxWaitMs`. */
  waitMs: number;
  /** Acks completed first, riding along to save their own round trip. */
  acks: readonly CarriedAck[];
  /**
   * Told, when there are acks, once they have their outcomes (stored, or failed as a batch), with the ids of the
   * jobs they completed (as the answer's `completed` will name them): from then on the dispatcher reads `acks`
   * no more, so the caller may let them go while the claim waits on for work.
   */
  acksSettled?: (completed: readonly string[]) => void;
  /** Room for the payloads the claim brings into memory, when its server bounds them over all claims. */
  room?: ClaimRoom;
}

/**
 * What a server lets a claim bring into memory: asked before each store attempt, told what each attempt and
 * each handoff leased.
 */
export interface ClaimRoom {
  /**
   * Waits for room for the payloads of up to `limit` jobs; resolves to how many the attempt may lease (at
   * least one, unless the claim's wait ended). When `signal` aborts first (the client went away) it resolves all the same: the attempt still
   * completes the acks it carries, and what it leases goes back unstarted (`deliver`). When the claim's own wait
   * ends first (`wait.stop` aborts as its worker asks it to stop waiting, or `wait.ms` pass: its deadline) it
   * resolves to 0: the attempt leases nothing, and the claim answers with no jobs, as a wait that found none.
   */
  reserve(limit: number, signal: AbortSignal, wait: ClaimWait): Promise<number>;
  /** The jobs an attempt or a handoff leased: what the attempt reserved is cut to what they carry. */
  leased(jobs: readonly ClaimedJob[]): void;
}

/** How long a claim may still wait, and what ends its wait early: its worker asking it to stop waiting. */
export interface ClaimWait {
  stop: AbortSignal;
  ms: number;
}

/** What a claim answers: the jobs leased, the carried acks that completed, and whether the acks could not be tried. */
export interface ClaimAnswer {
  jobs: ClaimedJob[];
  completed: string[];
  /** The store failed the acks (they are not lost leases): the worker sends them again. */
  acksFailed: boolean;
  /**
   * The type has a `concurrency` limit: a job the worker holds without running it, or whose ack it holds back,
   * keeps another from starting anywhere, so the worker should prefetch nothing and ack at once.
   */
  concurrencyLimited: boolean;
}

/** A claim's answer about its acks. */
type AcksAnswer = Omit<ClaimAnswer, 'jobs'>;

/** A claim request between its arrival and its answer: its state (`ClaimState`) and what its states share. */
interface OpenClaim {
  state: ClaimState;
  readonly request: DispatchedClaim;
  readonly signal: AbortSignal;
  /** When its wait ends, by the engine's clock (epoch ms). */
  readonly deadlineMs: number;
  readonly inProgress: ClaimInProgress;
  /** Its acks wait for its next store attempt to carry them. */
  carried: boolean;
  /** Answers carried acks from that attempt's outcomes. */
  readonly carriedAnswered: (outcomes: readonly CompleteOutcome[]) => void;
  /** Its answer about its acks, once they completed or failed. */
  readonly acked: Promise<AcksAnswer>;
  /** How many acks it carried (its caller may let them go once they settle: `acksSettled`). */
  readonly ackCount: number;
  /** Its next attempt may skip the store: a handoff just found nothing else ready for its worker. */
  skipQuery: boolean;
  /** The wake-up generation its latest attempt started at. */
  seen: number;
  /** When its type's rate limit lets the next job start, as its latest attempt found; `null`: no such wait. */
  nextStartAt: Date | null;
}

/** Counters a dispatcher reports to, e.g. the server's metrics. Every hook is optional. */
export interface DispatchObserver {
  /** A claim attempt, and whether its store query ran or was skipped (nothing new since a handoff). */
  claimAttempt?(name: string, queried: boolean): void;
  /** Jobs leased to a claim, `handedOver` when an enqueue's insert leased them. */
  delivered?(name: string, count: number, handedOver: boolean): void;
  /** Acks that completed jobs. */
  completed?(count: number): void;
  /** The jobs of a claim whose client went away could not be put back (they come back when their leases expire). */
  releaseFailed?(error: unknown): void;
  /** A consumer's presence could not be written (see `PresenceTracker`); its claim or extension went on. */
  presenceFailed?(error: unknown): void;
}

export interface DispatcherOptions {
  /** How often a waiting claim re-checks the store when no wake-up arrives. */
  pollIntervalMs: number;
  /** Longest a claim waits for work, whatever it asks for. */
  maxWaitMs: number;
  /** Most items in one store call when concurrent enqueues or acks are merged. */
  maxBatchSize: number;
  /**
   * Longest a consumer's presence goes unwritten while it claims or extends leases (writes are spaced at least
   * this far apart per consumer). Keep it well under the window the worker registry lists consumers seen in.
   * @defaultValue 5_000
   */
  presenceReportEveryMs?: number;
  observer?: DispatchObserver;
}

/**
 * What a claim does between calls: waits for work, takes jobs handed over by
 * enqueues on this server, answers early when its worker closes or its
 * carried acks found their leases lost, and puts back the jobs of a claim
 * whose client went away. Enqueues go through it too, so a lone job can be
 * handed to a waiting claim and concurrent ones share store writes.
 *
 * A store without a `handoff` gets the same dispatcher without
 * handoffs: enqueues insert, and waiting claims are woken to claim.
 */
export class ClaimDispatcher {
  private readonly handoffs: Handoffs;
  private readonly claims: ClaimsInProgress;
  /** Records the worker registry's presence: claims here, lease extensions by the server's router. */
  readonly presence: PresenceTracker;
  private readonly enqueues: Coalescer<EnqueueInput, EnqueueResult>;
  private readonly completions: Coalescer<CarriedAck, CompleteOutcome>;
  private readonly observer: DispatchObserver;

  constructor(
    private readonly engine: Engine,
    private readonly bus: WakeupBus,
    private readonly options: DispatcherOptions,
  ) {
    this.observer = options.observer ?? {};
    this.claims = new ClaimsInProgress(engine.clock);
    this.handoffs = new Handoffs(engine, {
      generation: (name) => bus.generation(name),
      freshForMs: options.pollIntervalMs,
    });
    this.presence = new PresenceTracker(engine.store, engine.clock, options.presenceReportEveryMs, (error) =>
      this.observer.presenceFailed?.(error),
    );
    this.enqueues = new Coalescer((inputs) => engine.enqueueMany(inputs), options.maxBatchSize);
    this.completions = new Coalescer((items) => engine.completeMany(items), options.maxBatchSize);
  }

  /**
   * Enqueues jobs whose payloads are already checked. A lone job goes
   * straight to a claim waiting on this server where the store can lease it
   * in its insert; batches, and jobs no claim waits for, share store inserts
   * with concurrent enqueues.
   */
  async enqueue(inputs: readonly EnqueueInput[]): Promise<EnqueueResult[]> {
    const handed = inputs.length === 1 ? await this.handoffs.enqueue(inputs[0] as EnqueueInput) : undefined;
    return handed ? [handed] : this.enqueues.submit(inputs);
  }

  /**
   * Completes held jobs, merged with other requests' acks into shared store
   * writes. A repeat of an applied ack, whichever server applied it, finds
   * its lease gone: the job is completed all the same, and answered `ok`.
   * `name`, the jobs' type when the worker says it, wakes the claims its limits held back.
   */
  async complete(acks: readonly CarriedAck[], name?: string): Promise<{ id: string; ok: boolean }[]> {
    if (acks.length === 0) return [];
    return this.acksCompleted(await this.completions.submit(acks), name);
  }

  /** Reports the outcomes of acks, and answers each as `complete` does. */
  private acksCompleted(outcomes: readonly CompleteOutcome[], name?: string): { id: string; ok: boolean }[] {
    const completed = outcomes.filter((o) => o.ok).length;
    this.observer.completed?.(completed);
    // Jobs of `name` (when the worker says which) finished: claims held back by its limits may lease again.
    if (name !== undefined && completed > 0) this.engine.freed(name);
    return outcomes.map(({ id, ok, repeated }) => ({ id, ok: ok || repeated }));
  }

  /**
   * First completes the carried acks, then leases up to `limit` jobs. When
   * none is ready it waits, up to `waitMs`, for a wake-up or a handoff. It
   * answers early, with what it has, when its worker asks it to stop waiting
   * (`stopWaiting`) or its acks found their leases lost (so the worker
   * reports them while they are news). `signal` is the request's: when it
   * aborts, the client is gone, and jobs leased meanwhile go back unstarted.
   *
   * The claim goes through the states of `ClaimState`: `starting`, then `querying` and `parked` in turn until
   * it is `answered`. Each state is one method: `start`, `query` (which answers, or parks the claim) and
   * `waitParked` (which answers, or sends the claim back to `query`).
   */
  async claim(request: DispatchedClaim, signal: AbortSignal): Promise<ClaimAnswer> {
    const claim = await this.start(request, signal);
    try {
      for (;;) {
        const outcome = await this.query(claim);
        if (!(outcome instanceof ParkedClaim)) return outcome;
        const answer = await this.waitParked(claim, outcome);
        if (answer) return answer;
      }
    } finally {
      claim.inProgress.end();
    }
  }

  /**
   * `starting`: reads the type's limits, sends the acks to the store side by side with the first attempt or
   * holds them for it to carry, and writes the worker's presence.
   */
  private async start(request: DispatchedClaim, signal: AbortSignal): Promise<OpenClaim> {
    const { name, minVersion, maxVersion, workerId } = request;
    // (Settings that cannot be read count as no limit here: the claim's own query meets the same failure.)
    const limits = await this.engine.claims
      .placeLimits(name)
      .catch(() => ({ concurrency: false, groupConcurrency: false }));
    const concurrencyLimited = limits.concurrency;
    const answered = (outcomes: readonly { id: string; ok: boolean }[]): AcksAnswer => ({
      completed: outcomes.filter((o) => o.ok).map((o) => o.id),
      acksFailed: false,
      concurrencyLimited,
    });
    // Under a concurrency or group limit the acks' jobs hold places the claim could take: the first claim attempt
    // carries them and counts after they complete (with them, in one commit, where the store can), rather than
    // find the type or its groups full, park, and wait for their wake-up. If that attempt fails, the claim fails,
    // acks and all, and the worker sends them again.
    const carried = (limits.concurrency || limits.groupConcurrency) && request.acks.length > 0;
    let carriedAnswered: (outcomes: readonly CompleteOutcome[]) => void = () => undefined;
    // Otherwise the acks and the first claim attempt go to the store side by side: neither waits on the other's
    // commit. If the acks fail (store unavailable) the claim still answers, flagging them for the worker to resend.
    const acked = carried
      ? new Promise<AcksAnswer>((resolve) => {
          carriedAnswered = (outcomes) => resolve(answered(this.acksCompleted(outcomes, name)));
        })
      : this.complete(request.acks, name).then(answered, () => ({
          completed: [] as string[],
          acksFailed: true,
          concurrencyLimited,
        }));
    // Counted now: once the acks settle, the caller may let them go (`acksSettled`).
    const ackCount = request.acks.length;
    const { acksSettled } = request;
    if (acksSettled && ackCount > 0) void acked.then((answer) => acksSettled(answer.completed));
    const { host, pid = null, startedAt = null } = request;
    await this.presence.seen({ id: workerId, host, name, minVersion, maxVersion, pid, startedAt });
    const deadlineMs = this.nowMs() + Math.min(request.waitMs, this.options.maxWaitMs);
    return {
      state: nextClaimState('starting', 'started'),
      request,
      signal,
      deadlineMs,
      inProgress: this.claims.begin(workerId, name),
      carried,
      carriedAnswered,
      acked,
      ackCount,
      // Right after a handoff to this worker, with nothing announced since, the query would find nothing.
      skipQuery: !carried && request.waitMs > 0 && this.handoffs.nothingReadySinceHandoff(request),
      seen: 0,
      nextStartAt: null,
    };
  }

  /**
   * `querying`: one store attempt, carrying the acks the first time they are carried. Answers `found` or
   * `mayNotWait`, or resolves to the claim parked (`foundNone`), before the acks' commit is awaited: an
   * enqueue arriving meanwhile can already hand its job over.
   */
  private async query(claim: OpenClaim): Promise<ClaimAnswer | ParkedClaim> {
    const { request, signal } = claim;
    const { name } = request;
    claim.seen = this.bus.generation(name);
    this.observer.claimAttempt?.(name, !claim.skipQuery);
    claim.nextStartAt = null;
    // Room is waited for before the attempt counts as querying: enqueues that wait for a querying claim must not
    // wait for room with it.
    const { room } = request;
    const limit =
      room && !claim.skipQuery
        ? await room.reserve(request.limit, signal, {
            stop: claim.inProgress.stop,
            ms: Math.max(0, claim.deadlineMs - this.nowMs()),
          })
        : request.limit;
    if (limit === 0) return this.answerWithoutRoom(claim);
    const query = claim.skipQuery
      ? async () => []
      : async () => {
          const acks = claim.carried ? request.acks : [];
          claim.carried = false;
          const outcome = await this.engine.claims.completeAndClaim(
            acks,
            claimRequest(limit === request.limit ? request : { ...request, limit }, this.engine.clock.now()),
          );
          if (acks.length > 0) claim.carriedAnswered(outcome.outcomes);
          // A type's rate limit says when its next job may start: the claim waits until then, not a poll interval.
          claim.nextStartAt = outcome.nextStartAt;
          return outcome.jobs;
        };
    const queried = !claim.skipQuery;
    claim.skipQuery = false;
    let attempt: { jobs: ClaimedJob[]; parked?: ParkedClaim } | undefined;
    try {
      attempt = await this.handoffs.attempt(request, signal, query, () => this.mayWait(claim));
    } finally {
      if (room && queried) room.leased(attempt?.jobs ?? []);
    }
    const { jobs, parked } = attempt;
    if (parked) {
      claim.state = nextClaimState(claim.state, 'foundNone');
      return parked;
    }
    claim.state = nextClaimState(claim.state, jobs.length > 0 ? 'found' : 'mayNotWait');
    const acks = await claim.acked;
    return { jobs: await this.deliver(name, jobs, signal, false), ...acks };
  }

  /**
   * `querying` with no room for a single job before the claim's wait ended: it leases nothing (`mayNotWait`),
   * and still completes the acks it carries.
   */
  private async answerWithoutRoom(claim: OpenClaim): Promise<ClaimAnswer> {
    if (claim.carried) {
      claim.carried = false;
      claim.carriedAnswered(await this.completions.submit(claim.request.acks));
    }
    claim.state = nextClaimState(claim.state, 'mayNotWait');
    return { jobs: [], ...(await claim.acked) };
  }

  /**
   * `parked`: waits, unless its acks found their leases lost, then withdraws. Resolves to the answer
   * (`handedOver`, `stopped`, `leasesLost`, `clientGone`), or to `undefined` when `woken` to query again.
   */
  private async waitParked(claim: OpenClaim, parked: ParkedClaim): Promise<ClaimAnswer | undefined> {
    const { request, signal, inProgress } = claim;
    const { name } = request;
    const acks = await claim.acked;
    // Acks that found their lease lost are answered now rather than after the wait. (Acks that failed are
    // sent again after the wait: an answer at once would bring them straight back while the store fails.)
    const leasesLost = !acks.acksFailed && acks.completed.length < claim.ackCount;
    if (!leasesLost) {
      const pollMs =
        claim.nextStartAt === null ? this.options.pollIntervalMs : claim.nextStartAt.getTime() - this.nowMs();
      const waitMs = Math.min(Math.max(0, claim.deadlineMs - this.nowMs()), Math.max(1, pollMs));
      await this.bus.waitForReady(name, claim.seen, waitMs, AbortSignal.any([signal, parked.taken, inProgress.stop]));
    }
    const handed = await this.handoffs.withdraw(parked);
    if (handed.length > 0) {
      request.room?.leased(handed);
      claim.state = nextClaimState(claim.state, 'handedOver');
      return { jobs: await this.deliver(name, handed, signal, true), ...acks };
    }
    // Its worker is closing and asked for an answer now, or leases were lost.
    if (inProgress.stop.aborted || leasesLost) {
      claim.state = nextClaimState(claim.state, inProgress.stop.aborted ? 'stopped' : 'leasesLost');
      return { jobs: [], ...acks };
    }
    // A wake-up can run before this process has read that the client went away (an in-process store
    // such as PGlite answers without yielding to I/O). One turn of the event loop lets a closed
    // connection abort the request first, rather than leasing jobs to nobody.
    await new Promise((resolve) => setImmediate(resolve));
    if (signal.aborted) {
      claim.state = nextClaimState(claim.state, 'clientGone');
      return { jobs: [], ...acks };
    }
    claim.state = nextClaimState(claim.state, 'woken');
    return undefined;
  }

  /** Whether a claim that found nothing may wait: time is left, its client is there, its worker is not stopping. */
  private mayWait(claim: OpenClaim): boolean {
    return (
      claim.deadlineMs > this.nowMs() && !claim.signal.aborted && !claim.inProgress.stop.aborted && !this.bus.isClosed
    );
  }

  private nowMs(): number {
    return this.engine.clock.now().getTime();
  }

  /**
   * For a closing worker: its claims waiting here answer at once (with any
   * jobs handed to them), and its claims arriving in the next seconds do not
   * wait. Only claims of job types `caller` covers are touched. Resolves to
   * how many were in progress here; with none, they are on another server.
   */
  stopWaiting(workerId: string, caller: StopScope): number {
    return this.claims.stopWaiting(workerId, caller);
  }

  /**
   * The jobs a claim leased, as its answer carries them. When its client has
   * gone away meanwhile (it closed, or its connection dropped), nobody would
   * run them: they go back to the queue unstarted rather than wait out their
   * leases with an attempt spent. (A client seen to leave only after this is
   * answered in vain.)
   */
  private async deliver(
    name: string,
    jobs: ClaimedJob[],
    signal: AbortSignal,
    handedOver: boolean,
  ): Promise<ClaimedJob[]> {
    if (jobs.length === 0) return jobs;
    if (signal.aborted) {
      await this.engine.release(jobs).catch((error: unknown) => this.observer.releaseFailed?.(error));
      return [];
    }
    this.observer.delivered?.(name, jobs.length, handedOver);
    return jobs;
  }
}
