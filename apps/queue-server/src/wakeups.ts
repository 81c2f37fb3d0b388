import { randomUUID } from 'node:crypto';
import type { Engine, StoreNotifier } from '@workq/core/engine';

type Wake = () => void;

/**
 * Notifier messages are newline-separated parts: first `FROM_PREFIX` and the
 * sending instance's id (an instance skips its own messages: its own events
 * woke its waiters already), then job names, `'*'`, this prefix followed by
 * comma-separated ids of jobs that finished, or `WATCHING_PREFIX` followed by
 * an instance id. No job name contains `:`, so none is taken for another part.
 */
const FINISHED_PREFIX = 'finished:';
const FROM_PREFIX = 'from:';
/** An instance with result requests waiting says so, so that the others publish the jobs they finish. */
const WATCHING_PREFIX = 'watching:';
/** How often an instance says it has result requests waiting, while it has. */
const WATCHING_ANNOUNCE_MS = 1_000;
/** How long after the last such word an instance still publishes the jobs it finishes. */
const WATCHING_HEARD_FOR_MS = 3 * WATCHING_ANNOUNCE_MS;
/** Ids per finished part. */
const FINISHED_IDS_PER_MESSAGE = 100;
/** One notification's largest payload: under PostgreSQL's 8000-byte NOTIFY limit. */
const MAX_MESSAGE_BYTES = 7_000;
/** Notifications go out at most this often; parts are newline-separated (no job name contains one). */
const PUBLISH_WINDOW_MS = 20;

/**
 * Wakes waiting claim and result requests. In-process, the engine's events
 * wake them at once; across server instances, the store's notifier (LISTEN/
 * NOTIFY, change streams, MySQL's polled wakeups table) does where it exists; a bounded poll covers
 * the rest (delayed jobs coming due, stores without notify).
 *
 * Finished jobs are published only while another instance has result requests waiting (it says so every
 * `WATCHING_ANNOUNCE_MS`): publishing every finished id would make every instance send, receive and parse
 * notifications at the rate jobs finish, for waiters that mostly do not exist. A job that finishes before its
 * instance has heard of the waiter is found by that waiter's next poll.
 */
export class Wakeups {
  private readonly readyWaiters = new Map<string, Set<Wake>>();
  private readonly finishWaiters = new Map<string, Set<Wake>>();
  private readonly generations = new Map<string, number>();
  private readonly pendingPublish = new Set<string>();
  private readonly pendingFinished = new Set<string>();
  private readonly instanceId = randomUUID();
  private readonly fromPart = `${FROM_PREFIX}${this.instanceId}`;
  private watchingPending = false;
  private watchingTimer: NodeJS.Timeout | undefined;
  /** Until when another instance may have result requests waiting (epoch ms). */
  private othersWatchingUntil = 0;
  private flushScheduled = false;
  private lastFlushAt = 0;
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
    const finished = this.wait(this.finishWaiters, id, timeoutMs, signal);
    this.announceWatching();
    return finished;
  }

  /** Releases every waiter and stops listening. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.watchingTimer);
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

  /**
   * A message from another instance (jobs of a name became ready, jobs finished, it has result requests
   * waiting), or `'*'` (wake-ups were missed). Messages of earlier versions carry no sender.
   */
  private received(notification: string): void {
    const parts = notification.split('\n');
    if (parts[0] === this.fromPart) return;
    for (const part of parts) if (!part.startsWith(FROM_PREFIX)) this.receivedPart(part);
  }

  private receivedPart(message: string): void {
    if (message.startsWith(WATCHING_PREFIX)) {
      this.heardWatching();
      return;
    }
    if (message.startsWith(FINISHED_PREFIX)) {
      for (const id of message.slice(FINISHED_PREFIX.length).split(',')) this.wakeAll(this.finishWaiters.get(id));
      return;
    }
    if (message === '*') {
      // Wake-ups were missed, perhaps that another instance has result requests waiting.
      this.heardWatching();
      for (const waiters of [...this.finishWaiters.values()]) this.wakeAll(waiters);
    }
    this.wakeReady(message);
  }

  /** Coalesces publishes within one tick: a burst of enqueues costs one notification per job name. */
  private publish(name: string): void {
    if (!this.notifier || this.closed) return;
    this.pendingPublish.add(name);
    this.flushSoon();
  }

  private heardWatching(): void {
    this.othersWatchingUntil = Date.now() + WATCHING_HEARD_FOR_MS;
  }

  /**
   * Says, now and every `WATCHING_ANNOUNCE_MS` while any result request waits here, that this instance has
   * result requests waiting, so that the others publish the jobs they finish.
   */
  private announceWatching(): void {
    if (!this.notifier || this.closed || this.watchingTimer) return;
    const announce = () => {
      if (this.finishWaiters.size === 0 || this.closed) {
        clearInterval(this.watchingTimer);
        this.watchingTimer = undefined;
        return;
      }
      this.watchingPending = true;
      this.flushSoon();
    };
    this.watchingTimer = setInterval(announce, WATCHING_ANNOUNCE_MS);
    this.watchingTimer.unref();
    announce();
  }

  /**
   * Tells other instances a job finished, so their waiting result requests return; ids are batched per tick.
   * Only while one of them has said it has result requests waiting.
   */
  private publishFinished(id: string): void {
    if (!this.notifier || this.closed || Date.now() > this.othersWatchingUntil) return;
    this.pendingFinished.add(id);
    this.flushSoon();
  }

  /**
   * Sends what is pending as one notification, at most once per
   * `PUBLISH_WINDOW_MS`: a steady stream of enqueues and acks costs a few
   * notifications a second, not one per job (each is a commit in PostgreSQL).
   */
  private flushSoon(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    const waitMs = Math.max(0, this.lastFlushAt + PUBLISH_WINDOW_MS - Date.now());
    const flush = () => {
      this.flushScheduled = false;
      this.lastFlushAt = Date.now();
      const parts = [...this.pendingPublish];
      const finished = [...this.pendingFinished];
      this.pendingPublish.clear();
      this.pendingFinished.clear();
      if (this.watchingPending) parts.push(`${WATCHING_PREFIX}${this.instanceId}`);
      this.watchingPending = false;
      for (let i = 0; i < finished.length; i += FINISHED_IDS_PER_MESSAGE) {
        parts.push(`${FINISHED_PREFIX}${finished.slice(i, i + FINISHED_IDS_PER_MESSAGE).join(',')}`);
      }
      for (const message of joinUpTo(parts, MAX_MESSAGE_BYTES - this.fromPart.length - 1)) {
        this.notifier?.publish(`${this.fromPart}\n${message}`).catch(() => undefined);
      }
    };
    if (waitMs === 0) setImmediate(flush);
    else setTimeout(flush, waitMs);
  }
}

/** Joins parts with newlines into as few messages as fit in `maxLength` characters each. */
function joinUpTo(parts: readonly string[], maxLength: number): string[] {
  const messages: string[] = [];
  let current = '';
  for (const part of parts) {
    if (current !== '' && current.length + 1 + part.length > maxLength) {
      messages.push(current);
      current = '';
    }
    current = current === '' ? part : `${current}\n${part}`;
  }
  if (current !== '') messages.push(current);
  return messages;
}
