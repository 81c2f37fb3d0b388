import type { Engine, StoreNotifier } from '@workq/core/engine';

type Wake = () => void;

/**
 * Notifier messages are job names, `'*'`, or this prefix followed by
 * comma-separated ids of jobs that finished. No job name contains `:`.
 */
const FINISHED_PREFIX = 'finished:';
/** Ids per finished message: well under PostgreSQL's 8000-byte NOTIFY payload limit. */
const FINISHED_IDS_PER_MESSAGE = 100;

/**
 * Wakes waiting claim and result requests. In-process, the engine's events
 * wake them at once; across server instances, the store's notifier (LISTEN/
 * NOTIFY, change streams) does where it exists; a bounded poll covers
 * the rest (delayed jobs coming due, stores without notify).
 */
export class Wakeups {
  private readonly readyWaiters = new Map<string, Set<Wake>>();
  private readonly finishWaiters = new Map<string, Set<Wake>>();
  private readonly generations = new Map<string, number>();
  private readonly pendingPublish = new Set<string>();
  private readonly pendingFinished = new Set<string>();
  private flushScheduled = false;
  private readonly detach: (() => void)[] = [];
  private unsubscribe: (() => Promise<void>) | undefined;
  private closed = false;

  constructor(
    private readonly engine: Engine,
    private readonly notifier: StoreNotifier | undefined,
  ) {}

  async start(): Promise<void> {
    this.detach.push(
      this.engine.onReady((name) => {
        this.wakeReady(name);
        this.publish(name);
      }),
      this.engine.onFinished((id) => {
        this.wakeAll(this.finishWaiters.get(id));
        this.publishFinished(id);
      }),
    );
    if (this.notifier) this.unsubscribe = await this.notifier.subscribe((message) => this.received(message));
  }

  /** True once the server is shutting down: waiting requests should return. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** A counter that changes whenever jobs of `name` may have become ready; read it before a claim. */
  generation(name: string): number {
    return (this.generations.get(name) ?? 0) + (this.generations.get('*') ?? 0);
  }

  /** Resolves when `name` may have work (or its generation already moved past `seen`), after `timeoutMs`, or on abort. */
  waitForReady(name: string, seen: number, timeoutMs: number, signal: AbortSignal): Promise<void> {
    if (this.generation(name) !== seen) return Promise.resolve();
    return this.wait(this.readyWaiters, name, timeoutMs, signal);
  }

  /** Resolves when job `id` may have finished, after `timeoutMs`, or on abort. */
  waitForFinish(id: string, timeoutMs: number, signal: AbortSignal): Promise<void> {
    return this.wait(this.finishWaiters, id, timeoutMs, signal);
  }

  /** Releases every waiter and stops listening. */
  async close(): Promise<void> {
    this.closed = true;
    for (const off of this.detach.splice(0)) off();
    for (const waiters of [...this.readyWaiters.values(), ...this.finishWaiters.values()]) this.wakeAll(waiters);
    await this.unsubscribe?.();
  }

  private wait(registry: Map<string, Set<Wake>>, key: string, timeoutMs: number, signal: AbortSignal): Promise<void> {
    if (this.closed || signal.aborted || timeoutMs <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const set = registry.get(key) ?? new Set<Wake>();
      registry.set(key, set);
      const done: Wake = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        set.delete(done);
        if (set.size === 0) registry.delete(key);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      signal.addEventListener('abort', done, { once: true });
      set.add(done);
    });
  }

  private wakeReady(name: string): void {
    this.generations.set(name, (this.generations.get(name) ?? 0) + 1);
    if (name === '*') {
      for (const waiters of [...this.readyWaiters.values()]) this.wakeAll(waiters);
    } else {
      this.wakeAll(this.readyWaiters.get(name));
    }
  }

  private wakeAll(waiters: Set<Wake> | undefined): void {
    if (waiters) for (const wake of [...waiters]) wake();
  }

  /** A message from another instance: jobs of a name became ready, jobs finished, or `'*'` (wake-ups were missed). */
  private received(message: string): void {
    if (message.startsWith(FINISHED_PREFIX)) {
      for (const id of message.slice(FINISHED_PREFIX.length).split(',')) this.wakeAll(this.finishWaiters.get(id));
      return;
    }
    if (message === '*') for (const waiters of [...this.finishWaiters.values()]) this.wakeAll(waiters);
    this.wakeReady(message);
  }

  /** Coalesces publishes within one tick: a burst of enqueues costs one notification per job name. */
  private publish(name: string): void {
    if (!this.notifier || this.closed) return;
    this.pendingPublish.add(name);
    this.flushSoon();
  }

  /** Tells other instances a job finished, so their waiting result requests return; ids are batched per tick. */
  private publishFinished(id: string): void {
    if (!this.notifier || this.closed) return;
    this.pendingFinished.add(id);
    this.flushSoon();
  }

  private flushSoon(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      const messages = [...this.pendingPublish];
      const finished = [...this.pendingFinished];
      this.pendingPublish.clear();
      this.pendingFinished.clear();
      for (let i = 0; i < finished.length; i += FINISHED_IDS_PER_MESSAGE) {
        messages.push(`${FINISHED_PREFIX}${finished.slice(i, i + FINISHED_IDS_PER_MESSAGE).join(',')}`);
      }
      for (const message of messages) this.notifier?.publish(message).catch(() => undefined);
    });
  }
}
