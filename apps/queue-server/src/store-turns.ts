import { WorkqError } from '@workq/core';
import { currentRequest } from './request-context.ts';

/** A store call waiting for its turn: `start` runs it. */
type Waiting = () => void;

/**
 * The store calls made for requests, at most `capacity` at once (`limits.maxStoreCallsInFlight`, about the
 * store's connections). Past it a call waits for its turn, and turns go round the callers that wait — a static
 * token, a signed token's subject, or open mode's requests as one — a call of each in turn: a caller that sends
 * more calls than the store can serve waits behind its own, and another caller's call runs after at most one
 * call of each caller waiting. Without it the store's own pool queued calls first come first served, so one
 * token's flood of cheap reads left every other caller's calls waiting past the pool's connection timeout.
 *
 * Calls made outside any request (the maintenance roles, the wake-up bus, the store's health probes) are not
 * counted and never wait.
 */
export class StoreTurns {
  #running = 0;
  #waitingCalls = 0;
  /** Per caller, its calls waiting; the map's order is the round of turns. */
  readonly #waiting = new Map<string, Waiting[]>();

  /** `VALIDATION` unless `capacity` is a positive integer. */
  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new WorkqError('VALIDATION', `limits.maxStoreCallsInFlight must be a positive integer; got ${capacity}.`);
    }
  }

  /** Store calls made for requests running now. */
  get running(): number {
    return this.#running;
  }

  /** Store calls waiting for their turn now. */
  get waiting(): number {
    return this.#waitingCalls;
  }

  /**
   * Runs `call`, a store operation that returns a promise: now, when it is made outside any request or fewer than
   * `capacity` run and none waits; otherwise in its caller's turn. Resolves or rejects as `call` does.
   */
  run<T>(call: () => Promise<T>): Promise<T> {
    const request = currentRequest();
    if (request === undefined) return call();
    if (this.#running < this.capacity && this.#waitingCalls === 0) return this.start(call);
    const caller = request.callerKey ?? '';
    return new Promise<T>((resolve, reject) => {
      const waiting = () => this.start(call).then(resolve, reject);
      const queue = this.#waiting.get(caller);
      if (queue) queue.push(waiting);
      else this.#waiting.set(caller, [waiting]);
      this.#waitingCalls++;
    });
  }

  private start<T>(call: () => Promise<T>): Promise<T> {
    this.#running++;
    let result: Promise<T>;
    try {
      result = call();
    } catch (error) {
      this.finished();
      return Promise.reject(error);
    }
    // (A store operation that answers at once, which no caller should route here, holds no turn.)
    if (!(result instanceof Promise)) {
      this.finished();
      return Promise.resolve(result);
    }
    return result.then(this.#ended, this.#failed) as Promise<T>;
  }

  /** A running call's outcome, passed on once its turn is given back: one pair for every call, no closures per call. */
  readonly #ended = (value: unknown) => {
    this.finished();
    return value;
  };
  readonly #failed = (error: unknown): never => {
    this.finished();
    throw error;
  };

  /** A call ended: the next caller in the round, if any waits, runs its oldest call. */
  private finished(): void {
    this.#running--;
    while (this.#running < this.capacity && this.#waitingCalls > 0) {
      const [caller, queue] = this.#waiting.entries().next().value as [string, Waiting[]];
      const next = queue.shift() as Waiting;
      this.#waiting.delete(caller);
      // Back of the round, when it has more.
      if (queue.length > 0) this.#waiting.set(caller, queue);
      this.#waitingCalls--;
      next();
    }
  }
}
