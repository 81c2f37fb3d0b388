/**
 * What every benchmarked system provides. Job payloads are `{ n }`, n from 0;
 * a consumer reports each handler start through `onJob(n)`, so the bench can
 * prove each job was handled exactly once.
 */
export interface BenchSystem {
  /** Stable id used in results, e.g. `workq-sdk-pg`. */
  id: string;
  /** Human label for the table. */
  label: string;
  /** What the system can be asked to do; a missing capability is reported with `notAvailable`. */
  supports: {
    latency: boolean;
    claim: boolean;
    history: boolean;
    /** Live job events (`QueueUnderTest.watchEvents`); absent: not available. */
    events?: boolean;
    /** Flow control (`QueueUnderTest.setLimits`, `enqueueGroupedBulk`); absent: not available. */
    flow?: boolean;
    /** Flow control and single timed claims (`claimOne`) together; absent: not available. */
    limitedClaim?: boolean;
    /** Parents that wait for their children (`QueueUnderTest.flows`); absent: not available. */
    flows?: boolean;
  };
  /** Why a scenario cannot run on this system (shown in the table instead of a figure). */
  notAvailable?: Partial<
    Record<'latency' | 'claim' | 'history' | 'events' | 'flow' | 'limitedClaim' | 'flows', string>
  >;
  /** Opens a fresh, empty queue (own schema / database / key prefix). */
  open(tag: string): Promise<QueueUnderTest>;
  /** Ends what the system keeps across scenarios (a server process), once the run is over. */
  dispose?(): Promise<void>;
}

export type JobListener = (n: number) => void;

export interface Consumer {
  /** Stops claiming, lets in-flight jobs finish and flushes their acks. */
  stop(): Promise<void>;
}

/** A child's payload and result: its parent's number `p` and its own number `c` among that parent's children. */
export interface FlowChild {
  p: number;
  c: number;
}

/** What flow consumers report: each handler as it runs, so the bench can time the flow and check it. */
export interface FlowListener {
  /** A child's handler runs, and returns `child` at once as its result: the call is the child's end. */
  onChild(child: FlowChild): void;
  /** A parent's handler starts (the call is its start); `readResults` reads its children's results as it can. */
  onParent(p: number, readResults: () => Promise<readonly FlowChild[]>): Promise<void>;
}

/** Parents that wait for their children: BullMQ's FlowProducer and its equivalents. */
export interface FlowsUnderTest {
  /** Enqueues parent `p` with `children` children (c = 0 … children-1) as one flow, in one call. */
  enqueueFlow(p: number, children: number): Promise<void>;
  /** Starts a consumer of children and one of parents, each at its concurrency; parents read their children's results. */
  consume(concurrency: { children: number; parents: number }, listener: FlowListener): Promise<Consumer>;
  /** Jobs, parents and children together, the store shows completed. */
  countCompleted(): Promise<number>;
}

export interface QueueUnderTest {
  enqueueOne(n: number): Promise<void>;
  /** Enqueues jobs n = from … from+count-1 in one call. */
  enqueueBulk(from: number, count: number): Promise<void>;
  /**
   * Starts a consumer running up to `concurrency` jobs at once. `holdAtMost`, when given, caps the jobs it holds
   * at once, running and claimed ahead, for a consumer that claims ahead of free slots (`claimsAhead`).
   */
  consume(concurrency: number, onJob: JobListener, holdAtMost?: number): Promise<Consumer>;
  /** The consumer claims jobs ahead of its free slots, so it may hold more jobs than it runs. */
  claimsAhead?: boolean;
  /** Jobs the store shows completed (for systems that delete finished jobs: enqueued minus those left). */
  countCompleted(): Promise<number>;
  /** Fills the queue with `count` ready jobs directly in the system's own tables (fast, not timed). */
  seedReady?(count: number): Promise<void>;
  /** Adds `count` finished jobs as history directly in the system's own tables. */
  seedFinished?(count: number): Promise<void>;
  /** Attaches one live-events subscriber to this queue's job type, counting what it receives, until `stop`. */
  watchEvents?(): Promise<{ received(): number; stop(): Promise<void> }>;
  /** Sets the job type's flow-control limits (workq's `admin.setLimits`; `null` clears one). */
  setLimits?(limits: { concurrency?: number | null; groupConcurrency?: number | null }): Promise<void>;
  /** Enqueues jobs n = from … from+count-1 in one call, all in group `group`. */
  enqueueGroupedBulk?(from: number, count: number, group: string): Promise<void>;
  /** Claims one job and acks it; resolves to the milliseconds the claim itself took. */
  claimOne?(): Promise<number>;
  /**
   * As `claimOne`, through the store's plain claim alone, below the engine's flow control (no settings consulted):
   * the claim as it is without flow control, to compare `claimOne` of a type without limits with.
   */
  claimOneFromStore?(): Promise<number>;
  /**
   * A second job type on the same store that never has limits: fills it with `count` ready jobs, and claims one
   * and acks it as `claimOne` does, so that a limited type's claims can be timed in turn with plain ones.
   */
  plainTwin?: { enqueueBulk(from: number, count: number): Promise<void>; claimOne(): Promise<number> };
  /** Parent/child flows on this queue's store. */
  flows?: FlowsUnderTest;
  /** Drops everything this queue made and closes its connections. */
  close(): Promise<void>;
}
