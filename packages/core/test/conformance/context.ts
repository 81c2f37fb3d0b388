import { expect } from 'vitest';
import { createEngine, type Engine, type EngineOptions } from '../../src/engine/engine.ts';
import type { EnqueueOptions } from '../../src/engine/options.ts';
import type { Store } from '../../src/engine/store.ts';
import { WorkqError, type WorkqErrorCode } from '../../src/errors.ts';
import { ManualClock } from '../support/manual-clock.ts';
import type { StoreHarness } from './harness.ts';

/** An engine on a store, with the manual clock it reads. */
export interface TestEngine {
  engine: Engine;
  clock: ManualClock;
  store: Store;
}

/** What each group of conformance tests is handed. Valid only inside a running test. */
export interface SuiteContext {
  readonly label: string;
  readonly harness: StoreHarness;
  /** The store every engine uses unless a test opens its own. */
  readonly store: Store;
  /** A further store on the same database, closed with the suite. */
  openStore(): Promise<Store>;
  /**
   * `count` stores for concurrent clients: each its own (own connections)
   * where the harness has `separateConnections`, otherwise the shared store.
   */
  clientStores(count: number): Promise<Store[]>;
  /** An engine with a fresh manual clock (or the given one) and no lease-sweep throttling. */
  engine(options?: Partial<EngineOptions> & { clock?: ManualClock }): TestEngine;
  /** A job name no other test uses, in this run or an earlier one on the same database. */
  jobName(topic: string): string;
  /** Prints one line saying why a test cannot run on this store, then skips it. */
  skip(reason: string, skip: (note?: string) => never): never;
  /** Skips the test as `skip` does, saying what the store does instead, when it lacks the optional `part`. */
  requirePart(part: OptionalPart, skip: (note?: string) => never): void;
}

/** The optional parts of a store (see `Store`): a test of one runs only where the store has it. */
export type OptionalPart = 'notifier' | 'leadership' | 'handoff' | 'completeAndClaim';

/** What a store without each optional part does instead. */
const WITHOUT_PART: Record<OptionalPart, string> = {
  notifier: 'consumers on other servers notice jobs by polling',
  leadership: 'every server runs the maintenance roles',
  handoff: 'an enqueue inserts the job and wakes the waiting claim',
  completeAndClaim: 'its limited claims run after their acks commit',
};

/** The suite's live state; a test group reads it through `SuiteContext` once `beforeAll` has run. */
export class SuiteState implements SuiteContext {
  private current: { harness: StoreHarness; store: Store } | null = null;
  private readonly opened: Store[] = [];
  private readonly runId = Math.random().toString(36).slice(2, 8);
  private counter = 0;
  private sharedNoted = false;

  constructor(readonly label: string) {}

  async start(makeHarness: () => Promise<StoreHarness>): Promise<void> {
    const harness = await makeHarness();
    try {
      this.current = { harness, store: await harness.open() };
    } catch (error) {
      await harness.close();
      throw error;
    }
    this.opened.push(this.current.store);
  }

  async stop(): Promise<void> {
    const stores = this.opened.splice(0);
    const results = await Promise.allSettled(stores.map((store) => store.close()));
    const harness = this.current?.harness;
    this.current = null;
    if (harness) await harness.close();
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  get harness(): StoreHarness {
    return this.live().harness;
  }

  get store(): Store {
    return this.live().store;
  }

  async openStore(): Promise<Store> {
    const store = await this.harness.open();
    this.opened.push(store);
    return store;
  }

  async clientStores(count: number): Promise<Store[]> {
    if (!this.harness.separateConnections) {
      if (!this.sharedNoted) console.log(`${this.label}: concurrent clients share one store (no separate connections)`);
      this.sharedNoted = true;
      return Array.from({ length: count }, () => this.store);
    }
    const stores: Store[] = [];
    for (let i = 0; i < count; i++) stores.push(await this.openStore());
    return stores;
  }

  engine(options: Partial<EngineOptions> & { clock?: ManualClock } = {}): TestEngine {
    const clock = options.clock ?? new ManualClock();
    const store = options.store ?? this.store;
    return { engine: createEngine({ leaseSweepIntervalMs: 0, ...options, store, clock }), clock, store };
  }

  jobName(topic: string): string {
    this.counter += 1;
    return `t${this.runId}.${topic}.${this.counter}`;
  }

  skip(reason: string, skip: (note?: string) => never): never {
    console.log(`${this.label}: test skipped — ${reason}`);
    return skip(reason);
  }

  requirePart(part: OptionalPart, skip: (note?: string) => never): void {
    if (this.store[part] === undefined) this.skip(`no ${part}: ${WITHOUT_PART[part]}`, skip);
  }

  private live(): { harness: StoreHarness; store: Store } {
    if (!this.current) throw new Error(`${this.label}: the conformance harness is not open (beforeAll failed?).`);
    return this.current;
  }
}

/** Enqueues `count` jobs of `name` (version 1, payload `{ n }`) in batches; resolves to their ids in order. */
export async function enqueueJobs(
  engine: Engine,
  name: string,
  count: number,
  options?: EnqueueOptions,
): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; start < count; start += 1000) {
    const batch = Array.from({ length: Math.min(1000, count - start) }, (_, i) => ({
      name,
      version: 1,
      payload: { n: start + i },
      ...(options ? { options } : {}),
    }));
    for (const result of await engine.enqueueMany(batch)) ids.push(result.id);
  }
  return ids;
}

/** Asserts that `promise` rejects with a `WorkqError` of `code`. */
export async function expectWorkqError(promise: Promise<unknown>, code: WorkqErrorCode): Promise<WorkqError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error, `expected a WorkqError ${code}`).toBeInstanceOf(WorkqError);
  expect((error as WorkqError).code).toBe(code);
  return error as WorkqError;
}

/** The one job a claim is expected to return. */
export async function claimOne(engine: Engine, name: string, maxVersion = 1) {
  const [job, ...rest] = await engine.claim({ name, maxVersion, limit: 1, workerId: 'w1' });
  expect(rest).toEqual([]);
  expect(job, `expected a ready job of ${name}`).toBeDefined();
  return job!;
}
