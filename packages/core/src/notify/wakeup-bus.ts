import type { CancelledListener, Engine } from '../engine/engine.ts';
import { newLeaseToken } from '../engine/ids.ts';
import type { StoreNotifier } from '../engine/store.ts';
import { type BusJobEvent, decodeWakeups, encodeWakeups, type WakeupMessage } from './messages.ts';

type Wake = () => void;
/** Job events from other instances, or `'lost'`: some may have been missed. */
export type BusEventListener = (events: readonly BusJobEvent[] | 'lost') => void;

/** How often an instance says it has result requests waiting, while it has. */
const WATCHING_ANNOUNCE_MS = 1_000;
/** How long after the last such word an instance still announces the jobs it finishes. */
const WATCHING_HEARD_FOR_MS = 3 * WATCHING_ANNOUNCE_MS;
/** One notification's largest payload: under PostgreSQL's 8000-byte NOTIFY limit. */
const MAX_NOTIFICATION_BYTES = 7_000;
/** Notifications go out at most this often: a stream of enqueues and acks costs a few a second, not one a job. */
const PUBLISH_WINDOW_MS = 20;
/** A publish not settled by then stops holding the next ones back (a stalled store must not silence the bus). */
const PUBLISH_STALL_MS = 5_000;
/** Job events kept for one publish window; past it they are dropped and the others told so. */
const MAX_PENDING_EVENTS = 5_000;

/** A message an instance repeats while it holds: `pending` until the next flush sends it; `timer` while repeated. */
interface RepeatedAnnouncement {
  pending: boolean;
  timer: ReturnType<typeof setInterval> | undefined;
}

/**
 * The wake-up bus: wakes waiting claim and result requests. In-process, the
 * engine's events wake them at once; across server instances, the store's
 * notifier (LISTEN/NOTIFY, change streams, MySQL's polled wake-ups table)
 * carries the typed messages of `messages.ts` where the store has one; the
 * waiters' bounded poll covers the rest (delayed jobs coming due, stores
 * without a notifier).
 *
 * Finished jobs are announced only while another instance has said it has
 * result requests waiting: announcing every finished id costs a busy queue
 * noticeably, for waiters that mostly do not exist. A job that finishes
 * before its instance has heard of the waiter is found by that waiter's next
 * poll.
 */
export class WakeupBus {
  private readonly readyWaiters = new Map<string, Set<Wake>>();
  private readonly finishWaiters = new Map<string, Set<Wake>>();
  private readonly generations = new Map<string, number>();
  private readonly pendingReady = new Set<string>();
  private readonly pendingFinished = new Set<string>();
  private readonly pendingCancelled: { id: string; workerId: string | null }[] = [];
  private readonly cancelListeners = new Set<CancelledListener>();
  private readonly pendingSettings = new Set<string>();
  /** This instance's id on the bus; unique per process start. */
  readonly instanceId = newLeaseToken();
  /** That result requests wait here. */
  private readonly watching: RepeatedAnnouncement = { pending: false, timer: undefined };
  /** Until when another instance may have result requests waiting (epoch ms). */
  private othersWatchingUntil = 0;
  /** Until when another instance may have job-event subscribers (epoch ms). */
  private othersListeningUntil = 0;
  /** That job-event subscribers listen here. */
  private readonly listening: RepeatedAnnouncement = { pending: false, timer: undefined };
  private readonly pendingEvents: BusJobEvent[] = [];
  private eventsLost = false;
  private readonly eventListeners = new Set<BusEventListener>();
  private readonly scheduleListeners = new Set<() => void>();
  private schedulesPending = false;
  private readonly schemaListeners = new Set<(name: string | undefined) => void>();
  private readonly pendingSchemas = new Set<string>();
  private flushScheduled = false;
  /** A flush's notifications still being published: the next flush waits for them (see `flushSoon`). */
  private sending = false;
  /** Something was announced while `sending`: flush when it ends. */
  private flushWanted = false;
  private lastFlushAt = 0;
  private readonly detach: (() => void)[] = [];
  private unsubscribe: (() => Promise<void>) | undefined;
  private closed = false;

  /** Without a `notifier` (a store that has none), the bus wakes waiters of this instance only. */
  constructor(
    private readonly engine: Engine,
    private readonly notifier: StoreNotifier | undefined,
  ) {}

  async start(): Promise<void> {
    this.detach.push(
      this.engine.onReady((name) => {
        this.wakeReady(name);
        this.announceReady(name);
      }),
      this.engine.flow.onChange((name) => {
        this.wakeReady(name);
        this.announce(this.pendingSettings, name);
      }),
      this.engine.onFinished((id) => {
        this.wakeAll(this.finishWaiters.get(id));
        this.announceFinished(id);
      }),
      this.engine.onCancelled((id, workerId) => this.announceCancelled(id, workerId)),
    );
    if (this.notifier) this.unsubscribe = await this.notifier.subscribe((text) => this.received(text));
  }

  /** True once closing: waiting requests should return. */
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

  /** The engine's clock, in epoch ms: the windows in which other instances are known to listen or watch. */
  private nowMs(): number {
    return this.engine.clock.now().getTime();
  }

  /** Releases every waiter and stops listening. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.watching.timer);
    clearInterval(this.listening.timer);
    this.eventListeners.clear();
    this.scheduleListeners.clear();
    this.schemaListeners.clear();
    this.cancelListeners.clear();
    for (const off of this.detach.splice(0)) off();
    for (const waiters of [...this.readyWaiters.values(), ...this.finishWaiters.values()]) this.wakeAll(waiters);
    await this.unsubscribe?.();
  }

  /** Whether another instance has said lately that it has job-event subscribers. */
  get othersListening(): boolean {
    return this.nowMs() <= this.othersListeningUntil;
  }

  /** Calls `listener` with the job events other instances send, and with `'lost'` when some may have been missed. */
  onEvents(listener: BusEventListener): () => void {
    this.eventListeners.add(listener);
    return () => this.eventListeners.delete(listener);
  }

  /** Calls `listener` with each job another instance says it cancelled, and the worker that last held it. */
  onCancelled(listener: CancelledListener): () => void {
    this.cancelListeners.add(listener);
    return () => this.cancelListeners.delete(listener);
  }

  /**
   * Calls `listener` when another instance says the stored schedules changed,
   * and after a resync (word of a change may have been missed).
   */
  onSchedulesChanged(listener: () => void): () => void {
    this.scheduleListeners.add(listener);
    return () => this.scheduleListeners.delete(listener);
  }

  /** Tells the other instances, with the rest of the window, that the stored schedules changed. */
  announceSchedulesChanged(): void {
    if (!this.notifier || this.closed) return;
    this.schedulesPending = true;
    this.flushSoon();
  }

  /**
   * Calls `listener` with a job name when another instance says it removed a
   * registered schema of that type, and with `undefined` after a resync (word
   * of a removal may have been missed: every type's).
   */
  onSchemasChanged(listener: (name: string | undefined) => void): () => void {
    this.schemaListeners.add(listener);
    return () => this.schemaListeners.delete(listener);
  }

  /** Tells the other instances, with the rest of the window, that a registered schema of `name` was removed. */
  announceSchemasChanged(name: string): void {
    this.announce(this.pendingSchemas, name);
  }

  /**
   * Sends job events to the other instances, batched with the rest of the
   * window, only while one of them has said it listens. Past
   * `MAX_PENDING_EVENTS` in one window, events are dropped and the others
   * told that some were lost.
   */
  sendEvents(events: readonly BusJobEvent[]): void {
    if (!this.notifier || this.closed || !this.othersListening) return;
    if (this.pendingEvents.length + events.length > MAX_PENDING_EVENTS) this.eventsLost = true;
    else this.pendingEvents.push(...events);
    this.flushSoon();
  }

  /** Says, now and every `WATCHING_ANNOUNCE_MS` while `active()` holds, that this instance has job-event subscribers. */
  announceListening(active: () => boolean): void {
    this.repeatWhile(this.listening, active);
  }

  private eventsReceived(events: readonly BusJobEvent[] | 'lost'): void {
    for (const listener of this.eventListeners) listener(events);
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

  /** A notification from another instance, or a store's `'*'` (wake-ups were missed). */
  private received(text: string): void {
    const { from, messages } = decodeWakeups(text);
    if (from === this.instanceId) return;
    const events: BusJobEvent[] = [];
    for (const message of messages) {
      if (message.type === 'event') events.push(message.event);
      else this.receivedMessage(message);
    }
    if (events.length > 0) this.eventsReceived(events);
  }

  private receivedMessage(message: WakeupMessage): void {
    switch (message.type) {
      case 'ready':
        this.wakeReady(message.name);
        break;
      case 'finished':
        for (const id of message.ids) this.wakeAll(this.finishWaiters.get(id));
        break;
      case 'cancelled':
        for (const listener of this.cancelListeners) listener(message.id, message.workerId);
        break;
      case 'watching':
        this.heardWatching();
        break;
      case 'listening':
        this.othersListeningUntil = this.nowMs() + WATCHING_HEARD_FOR_MS;
        break;
      case 'eventsLost':
        this.eventsReceived('lost');
        break;
      case 'settings':
        this.engine.flow.forget();
        this.wakeReady(message.name);
        break;
      case 'event':
        this.eventsReceived([message.event]);
        break;
      case 'schedules':
        for (const listener of this.scheduleListeners) listener();
        break;
      case 'schemas':
        for (const listener of this.schemaListeners) listener(message.name);
        break;
      case 'resync':
        for (const listener of this.scheduleListeners) listener();
        for (const listener of this.schemaListeners) listener(undefined);
        this.engine.flow.forget();
        // Anything may have been missed, a word that another instance has result requests waiting too.
        this.heardWatching();
        for (const waiters of [...this.finishWaiters.values()]) this.wakeAll(waiters);
        this.wakeReady('*');
        this.othersListeningUntil = this.nowMs() + WATCHING_HEARD_FOR_MS;
        this.eventsReceived('lost');
        break;
    }
  }

  /** Announces that `name` may have work, batched with the rest of the window: one part per job name. */
  private announceReady(name: string): void {
    if (!this.notifier || this.closed) return;
    this.pendingReady.add(name);
    this.flushSoon();
  }

  /** Adds `item` to a pending set, sent with the rest of the window. */
  private announce(pending: Set<string>, item: string): void {
    if (!this.notifier || this.closed) return;
    pending.add(item);
    this.flushSoon();
  }

  private heardWatching(): void {
    this.othersWatchingUntil = this.nowMs() + WATCHING_HEARD_FOR_MS;
  }

  /** Says, now and every `WATCHING_ANNOUNCE_MS` while any result request waits here, that result requests wait. */
  private announceWatching(): void {
    this.repeatWhile(this.watching, () => this.finishWaiters.size > 0);
  }

  /**
   * Sends `announcement` now and every `WATCHING_ANNOUNCE_MS` while `active()` holds and the bus is open;
   * does nothing while it is already being repeated, or without a notifier to send it on.
   */
  private repeatWhile(announcement: RepeatedAnnouncement, active: () => boolean): void {
    if (!this.notifier || this.closed || announcement.timer) return;
    const announce = () => {
      if (!active() || this.closed) {
        clearInterval(announcement.timer);
        announcement.timer = undefined;
        return;
      }
      announcement.pending = true;
      this.flushSoon();
    };
    announcement.timer = setInterval(announce, WATCHING_ANNOUNCE_MS);
    announcement.timer.unref();
    announce();
  }

  /** Announces a finished job, only while another instance has said it has result requests waiting. */
  private announceFinished(id: string): void {
    if (!this.notifier || this.closed || this.nowMs() > this.othersWatchingUntil) return;
    this.pendingFinished.add(id);
    this.flushSoon();
  }

  /**
   * Announces a cancelled job that ran (a worker held it last), whoever listens: the server where that worker
   * waits on a lease extension answers it. Cancellations are rare, so a queue that has none pays nothing.
   */
  private announceCancelled(id: string, workerId: string | null): void {
    if (!this.notifier || this.closed || workerId === null) return;
    this.pendingCancelled.push({ id, workerId });
    this.flushSoon();
  }

  /**
   * Sends what is pending, at most once per `PUBLISH_WINDOW_MS` (each notification is a commit on PostgreSQL).
   * One flush's notifications are published one after another, and the next flush waits until they are all
   * stored: a store may number or deliver concurrent publishes in any order (MySQL's auto-increment is handed
   * out before commit; NOTIFYs go out in commit order), and a job's events must reach the other servers in
   * the order they happened (`started` before `completed`). What arrives meanwhile goes in that next flush.
   */
  private flushSoon(): void {
    if (this.sending) {
      this.flushWanted = true;
      return;
    }
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    // (At most one window: a clock set back does not hold the messages.)
    const waitMs = Math.min(PUBLISH_WINDOW_MS, Math.max(0, this.lastFlushAt + PUBLISH_WINDOW_MS - this.nowMs()));
    const flush = () => {
      this.flushScheduled = false;
      this.lastFlushAt = this.nowMs();
      const messages: WakeupMessage[] = [...this.pendingReady].map((name) => ({ type: 'ready', name }));
      if (this.watching.pending) messages.push({ type: 'watching', instance: this.instanceId });
      if (this.pendingFinished.size > 0) messages.push({ type: 'finished', ids: [...this.pendingFinished] });
      for (const { id, workerId } of this.pendingCancelled) messages.push({ type: 'cancelled', id, workerId });
      if (this.listening.pending) messages.push({ type: 'listening', instance: this.instanceId });
      for (const event of this.pendingEvents) messages.push({ type: 'event', event });
      if (this.eventsLost) messages.push({ type: 'eventsLost' });
      for (const name of this.pendingSettings) messages.push({ type: 'settings', name });
      if (this.schedulesPending) messages.push({ type: 'schedules' });
      for (const name of this.pendingSchemas) messages.push({ type: 'schemas', name });
      this.schedulesPending = false;
      this.pendingSchemas.clear();
      this.pendingSettings.clear();
      this.pendingReady.clear();
      this.pendingFinished.clear();
      this.pendingCancelled.length = 0;
      this.watching.pending = false;
      this.listening.pending = false;
      this.pendingEvents.length = 0;
      this.eventsLost = false;
      void this.publishInOrder(encodeWakeups(this.instanceId, messages, MAX_NOTIFICATION_BYTES));
    };
    if (waitMs === 0) setImmediate(flush);
    else setTimeout(flush, waitMs);
  }

  /** Publishes `notifications` in turn (a failed one is dropped, as a lost notification is), then flushes what waited. */
  private async publishInOrder(notifications: readonly string[]): Promise<void> {
    const { notifier } = this;
    if (!notifier || notifications.length === 0) return;
    this.sending = true;
    try {
      for (const notification of notifications) await settledOrStalled(notifier.publish(notification));
    } finally {
      this.sending = false;
    }
    if (!this.flushWanted) return;
    this.flushWanted = false;
    this.flushSoon();
  }
}

/** Resolves when `publishing` settles (a failure is a lost notification), or after `PUBLISH_STALL_MS`. */
function settledOrStalled(publishing: Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, PUBLISH_STALL_MS);
    timer.unref();
  });
  return Promise.race([publishing.catch(() => undefined), stalled]).finally(() => clearTimeout(timer));
}
