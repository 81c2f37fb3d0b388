import type { Engine, StoreNotifier } from '@workq/core/engine';

type Wake = () => void;

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
      this.engine.onFinished((id) => this.wakeAll(this.finishWaiters.get(id))),
    );
    if (this.notifier) this.unsubscribe = await this.notifier.subscribe((name) => this.wakeReady(name));
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

  /** Coalesces publishes within one tick: a burst of enqueues costs one notification per job name. */
  private publish(name: string): void {
    if (!this.notifier || this.closed) return;
    const first = this.pendingPublish.size === 0;
    this.pendingPublish.add(name);
    if (!first) return;
    setImmediate(() => {
      const names = [...this.pendingPublish];
      this.pendingPublish.clear();
      for (const pending of names) this.notifier?.publish(pending).catch(() => undefined);
    });
  }
}
