import { isWorkqError } from '@workq/core';
import type { Store } from '@workq/core/engine';
import type { ServerMetrics } from './metrics.ts';
import type { Logger } from './options.ts';
import type { StoreTurns } from './store-turns.ts';

export interface StoreHealthOptions {
  /** The store's address for log lines, password redacted (`redactUrl`). */
  storeUrl: string;
  logger: Logger;
  metrics: ServerMetrics;
  /** How often the store is probed while it is unreachable. */
  probeEveryMs: number;
  /** A probe that has not answered by then counts as failed. */
  probeTimeoutMs: number;
  /** Where the calls made for requests take turns, when the store is busy. */
  turns: StoreTurns;
}

/**
 * Whether the job store answers, as this server sees it. A store call that
 * fails with a retryable `UNAVAILABLE` makes the store suspect, and a probe
 * (`Store.ping`) decides: when it fails too,
 * the outage begins — logged once as a warning, counted in
 * `workq_store_outages_total`, `workq_store_up` 0 — and the store is probed
 * every `probeEveryMs` until it answers; the first answer (a probe's or any
 * call's) ends it, logged once with its length and how many requests failed
 * meanwhile. Deadlocks and other one-off retryable failures end at the probe,
 * unlogged.
 */
export class StoreHealth {
  /** The store, with every operation's outcome observed: what the engine and the server use. */
  readonly store: Store;
  private state: 'up' | 'suspect' | 'down' = 'up';
  private outageStartedAtMs = 0;
  /** Requests answered with a server error since the store became suspect. */
  private failedRequests = 0;
  private probing: Promise<boolean> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly raw: Store,
    private readonly options: StoreHealthOptions,
  ) {
    this.store = observeStore(raw, options.turns, {
      answered: () => {
        if (this.state !== 'up' && !this.closed) this.recovered();
      },
      failed: (error) => {
        if (this.state === 'up' && !this.closed && isWorkqError(error, 'UNAVAILABLE') && error.retryable) {
          this.state = 'suspect';
          void this.check();
        }
      },
    });
    options.metrics.storeUp.set(1);
  }

  /** `false` while an outage is known; a probe (`check`) may learn of one sooner. */
  get up(): boolean {
    return this.state !== 'down';
  }

  /** Probes the store now (sharing a probe already under way); resolves to whether it answered. */
  check(): Promise<boolean> {
    this.probing ??= this.probe().then((failure) => {
      this.probing = undefined;
      if (!this.closed) {
        if (failure === undefined) this.recovered();
        else this.unreachable(failure);
      }
      return failure === undefined;
    });
    return this.probing;
  }

  /** A request was answered with a server error: counted toward the outage it falls in, if any. */
  requestFailed(): void {
    if (this.state !== 'up') this.failedRequests++;
  }

  /** Stops probing; later outcomes are ignored (the store is closing). */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
  }

  /** Resolves to `undefined` when the store answered, otherwise to why not. */
  private async probe(): Promise<{ reason: string } | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<{ reason: string }>((resolve) => {
      timer = setTimeout(() => resolve({ reason: 'no answer in time' }), this.options.probeTimeoutMs);
    });
    const answered = this.raw.ping().then(
      () => undefined,
      (error: unknown) => ({ reason: error instanceof Error ? error.message : String(error) }),
    );
    try {
      return await Promise.race([answered, timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  private unreachable(failure: { reason: string }): void {
    if (this.state !== 'down') {
      this.state = 'down';
      this.outageStartedAtMs = Date.now();
      this.options.metrics.storeUp.set(0);
      this.options.metrics.storeOutages.inc();
      this.options.logger.warn('job store unreachable: requests that need it fail with UNAVAILABLE until it answers', {
        store: this.options.storeUrl,
        error: failure.reason,
      });
    }
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.check(), this.options.probeEveryMs);
    this.timer.unref();
  }

  private recovered(): void {
    const wasDown = this.state === 'down';
    this.state = 'up';
    clearTimeout(this.timer);
    if (wasDown) {
      this.options.metrics.storeUp.set(1);
      this.options.logger.info('job store reachable again', {
        store: this.options.storeUrl,
        outageMs: Date.now() - this.outageStartedAtMs,
        failedRequests: this.failedRequests,
      });
    }
    this.failedRequests = 0;
  }
}

interface Observer {
  answered(): void;
  failed(error: unknown): void;
}

/** The optional parts of a store whose calls are job operations, observed as the store's own. */
const OBSERVED_PARTS: ReadonlySet<PropertyKey> = new Set<keyof Store>(['handoff', 'completeAndClaim']);

/** The store's operations that answer at once rather than with a promise: neither observed nor taking turns. */
const ANSWERED_AT_ONCE: ReadonlySet<PropertyKey> = new Set<keyof Store>(['onParentsReady']);

/**
 * `store` with each operation's settled promise reported to `observer`
 * (`close` excepted), the operations of its handoff and complete-and-claim
 * parts included, each run in its turn (`turns`). The store's own calls
 * between its methods are not seen: they run on the store itself.
 */
function observeStore(store: Store, turns: StoreTurns, observer: Observer): Store {
  const answered = <T>(value: T): T => {
    observer.answered();
    return value;
  };
  const failed = (error: unknown): never => {
    observer.failed(error);
    throw error;
  };
  /** Each operation's, and each part's, observed form, made once. */
  const wrapped = new WeakMap<object, unknown>();
  const observed = <T extends object>(target: T): T =>
    new Proxy(target, {
      get(on, key) {
        const value: unknown = Reflect.get(on, key, on);
        const ofStore = on === store;
        const part = ofStore && OBSERVED_PARTS.has(key) && typeof value === 'object' && value !== null;
        const operation = typeof value === 'function' && !(ofStore && key === 'close');
        if (!part && !operation) return value;
        let observedValue = wrapped.get(value as object);
        if (observedValue === undefined) {
          observedValue = part
            ? observed(value as object)
            : (...args: unknown[]) => {
                const call = () => (value as (...args: unknown[]) => Promise<unknown>).apply(on, args);
                return ofStore && ANSWERED_AT_ONCE.has(key) ? call() : turns.run(call).then(answered, failed);
              };
          wrapped.set(value as object, observedValue);
        }
        return observedValue;
      },
    });
  return observed(store);
}
