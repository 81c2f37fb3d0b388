import { type Clock, systemClock } from '../engine/clock.ts';
import { newLeaseToken } from '../engine/ids.ts';
import type { JobEventSink } from '../engine/job-events.ts';
import { WorkqError } from '../errors.ts';
import { eventsOfRun, type JobEvent, type JobEventRun, type ResyncEvent, runsOfEvents } from '../events.ts';
import { runBytes } from './event-bytes.ts';
import type { BusJobEvent } from './messages.ts';
import type { WakeupBus } from './wakeup-bus.ts';

/** What a subscriber receives at once: its events in order, as runs, and the id to resume after them. */
export interface EventBatch {
  /** The id of the last event this batch covers; pass it back as `lastEventId` to resume after it. */
  id: string;
  runs: (JobEventRun | ResyncEvent)[];
}

export interface EventSubscription {
  /** Which job names this subscriber may see (its name filter and its token's scopes). */
  wants: (name: string) => boolean;
  /** The `id` of the last batch it received, when it reconnects. */
  lastEventId?: string;
  /** Ends the subscription. */
  signal: AbortSignal;
  /** Who holds it (e.g. a token's key), so `subscriberCount(owner)` can bound each holder's subscriptions. */
  owner?: string;
}

export interface EventHubOptions {
  /** Events kept per subscriber while it does not read; past it they are dropped and it gets `resync`. @defaultValue 10_000 */
  maxBufferedEvents?: number;
  /**
   * The bytes of the events kept per subscriber while it does not read (`runBytes`: their results, mostly); past
   * them, as past `maxBufferedEvents`, they are dropped and it gets `resync`. @defaultValue 67_108_864 (64 MiB)
   */
  maxBufferedBytes?: number;
  /** Recent events kept for subscribers that reconnect (up to half as many more between trims). @defaultValue 10_000 */
  resumeEvents?: number;
  /**
   * The most bytes of recent events kept for subscribers that reconnect (`runBytes`; up to half as many more
   * between trims): events with large results are kept for a shorter stretch. @defaultValue 67_108_864 (64 MiB)
   */
  resumeBytes?: number;
  /** How long events are still built and kept after the last subscriber left, so it can resume. @defaultValue 60_000 */
  resumeWindowMs?: number;
  /** The engine's clock: stamps `resync` events and times the resume window. @defaultValue the system clock */
  clock?: Clock;
  /** Reads a job's result and error, for an event another server sent without them (too large to carry). */
  readJob: (id: string) => Promise<{ result?: unknown; error?: { message: string } } | undefined>;
}

/**
 * The shortest time between two batches to one subscriber: a busy queue's events go out in a
 * few large writes a second rather than one small write per queue operation.
 */
const BATCH_WINDOW_MS = 20;

/** Each `EventHubOptions` default, in one place. */
const EVENT_HUB_DEFAULTS = {
  maxBufferedEvents: 10_000,
  maxBufferedBytes: 64 * 1024 * 1024,
  resumeEvents: 10_000,
  resumeBytes: 64 * 1024 * 1024,
  resumeWindowMs: 60_000,
} as const;

/** A kept run; its events are numbered `firstSeq`, `firstSeq + 1`, …. */
interface Entry {
  firstSeq: number;
  run: JobEventRun;
  /** `runBytes(run)`. */
  bytes: number;
}

/**
 * The job events of every server on one store, fanned out to this server's
 * subscribers. It is the engine's event sink: events made here are numbered,
 * kept for resumption, handed to the subscribers that want them and sent to
 * the other servers over the wake-up bus; events the bus brings from the
 * others are handled the same way, except that they are not sent on.
 *
 * A subscriber never slows the queue: each has its own bounded buffer, and
 * one that falls `maxBufferedEvents` (or `maxBufferedBytes`) behind loses
 * what is buffered and gets a `resync` event instead. A subscriber that
 * reconnects with the id of the last batch it received resumes after it when
 * this server still keeps the events since (`resumeEvents` of them, within
 * `resumeBytes`, and none lost to the bus meanwhile); otherwise it starts
 * with `resync`. Both bounds count bytes as well as events, so that events
 * carrying large results cannot keep gigabytes.
 */
export class EventHub implements JobEventSink {
  private readonly subscribers = new Set<Subscriber>();
  /** The number of subscribers of each owner that has any. */
  private readonly owned = new Map<string, number>();
  private readonly recent: Entry[] = [];
  /** The number of events in `recent`, and their bytes. */
  private recentEvents = 0;
  private recentBytes = 0;
  private seq = 0;
  /** Events up to this seq may be missing (lost on the bus): no resume from before it. */
  private gapSeq = 0;
  /** Names this hub's event ids: unique per process start, so an id from another server or run never resumes here. */
  private readonly instanceId = newLeaseToken();
  private lastSubscriberLeftAt = Number.NEGATIVE_INFINITY;
  private readonly options: Required<Omit<EventHubOptions, 'readJob'>> & Pick<EventHubOptions, 'readJob'>;
  private bus: WakeupBus | undefined;
  private detach: (() => void) | undefined;
  private closed = false;

  /** The hub is the engine's sink before the bus exists (the bus needs the engine); `attach` connects it. */
  constructor(options: EventHubOptions) {
    this.options = {
      maxBufferedEvents: options.maxBufferedEvents ?? EVENT_HUB_DEFAULTS.maxBufferedEvents,
      maxBufferedBytes: options.maxBufferedBytes ?? EVENT_HUB_DEFAULTS.maxBufferedBytes,
      resumeEvents: options.resumeEvents ?? EVENT_HUB_DEFAULTS.resumeEvents,
      resumeBytes: options.resumeBytes ?? EVENT_HUB_DEFAULTS.resumeBytes,
      resumeWindowMs: options.resumeWindowMs ?? EVENT_HUB_DEFAULTS.resumeWindowMs,
      clock: options.clock ?? systemClock,
      readJob: options.readJob,
    };
  }

  /** Starts relaying events over `bus`, to and from the other servers on the store. */
  attach(bus: WakeupBus): void {
    this.bus = bus;
    this.detach = bus.onEvents((events) => {
      if (events === 'lost') this.lost();
      else if (this.keeping) void this.received(events);
    });
  }

  /** Whether events are wanted: by a subscriber here (or one that may reconnect soon), or by another server. */
  get listening(): boolean {
    return this.keeping || this.bus?.othersListening === true;
  }

  /** Events made on this server (the engine's sink). */
  publish(runs: readonly JobEventRun[]): void {
    if (this.closed) return;
    // Events travel between servers one by one, built only when another server listens.
    if (this.bus?.othersListening) this.bus.sendEvents(runs.flatMap(eventsOfRun));
    if (this.keeping) this.deliver(runs);
  }

  /** A subscriber's batches, until its signal aborts or the hub closes. */
  subscribe(subscription: EventSubscription): AsyncIterable<EventBatch> {
    const subscriber = new Subscriber(
      subscription.wants,
      { events: this.options.maxBufferedEvents, bytes: this.options.maxBufferedBytes },
      () => this.lastId(),
      this.options.clock,
    );
    if (!this.resume(subscriber, subscription.lastEventId)) subscriber.resync();
    this.subscribers.add(subscriber);
    const { owner } = subscription;
    if (owner !== undefined) this.owned.set(owner, (this.owned.get(owner) ?? 0) + 1);
    this.bus?.announceListening(() => this.keeping);
    const leave = () => {
      if (!this.subscribers.delete(subscriber)) return subscriber.end();
      if (this.subscribers.size === 0) this.lastSubscriberLeftAt = this.options.clock.now().getTime();
      if (owner !== undefined) {
        const left = (this.owned.get(owner) ?? 1) - 1;
        if (left > 0) this.owned.set(owner, left);
        else this.owned.delete(owner);
      }
      subscriber.end();
    };
    subscription.signal.addEventListener('abort', leave, { once: true });
    if (subscription.signal.aborted || this.closed) leave();
    return subscriber.batches(() => subscription.signal.removeEventListener('abort', leave));
  }

  /** The subscriptions open now: all of them, or those of one `owner`. */
  subscriberCount(owner?: string): number {
    return owner === undefined ? this.subscribers.size : (this.owned.get(owner) ?? 0);
  }

  /** Ends every subscription with a retryable `UNAVAILABLE`, so that subscribers reconnect (elsewhere). */
  close(): void {
    this.closed = true;
    this.detach?.();
    const closing = new WorkqError('UNAVAILABLE', 'The queue server is shutting down; reconnect to resume.', {
      retryable: true,
    });
    for (const subscriber of this.subscribers) subscriber.end(closing);
    this.subscribers.clear();
    this.owned.clear();
  }

  /** Whether this server keeps events: it has subscribers, or had one within the resume window. */
  private get keeping(): boolean {
    return (
      !this.closed &&
      (this.subscribers.size > 0 ||
        this.options.clock.now().getTime() - this.lastSubscriberLeftAt < this.options.resumeWindowMs)
    );
  }

  private lastId(): string {
    return `${this.instanceId}:${this.seq}`;
  }

  /** Queues, for a reconnecting subscriber, the events after `lastEventId`; false when they are not all here. */
  private resume(subscriber: Subscriber, lastEventId: string | undefined): boolean {
    if (lastEventId === undefined) return true;
    const at = lastEventId.lastIndexOf(':');
    const seq = Number(lastEventId.slice(at + 1));
    if (lastEventId.slice(0, at) !== this.instanceId || !Number.isInteger(seq) || seq > this.seq) return false;
    const oldest = this.recent[0]?.firstSeq ?? this.seq + 1;
    if (seq < this.gapSeq || seq < oldest - 1) return false;
    for (const { firstSeq, run, bytes } of this.recent) {
      const after = seq + 1 - firstSeq;
      if (after >= run.ids.length || !subscriber.wants(run.name)) continue;
      subscriber.offer(after > 0 ? runAfter(run, after) : run, bytes);
    }
    return true;
  }

  /** Events another server sent: those sent without a result too large to carry get it read back, if wanted here. */
  private async received(events: readonly BusJobEvent[]): Promise<void> {
    const complete: JobEvent[] = await Promise.all(
      events.map(async (event): Promise<JobEvent> => {
        if (!event.omitted) return event;
        const { omitted: _omitted, ...rest } = event;
        if (![...this.subscribers].some((s) => s.wants(event.name))) return rest;
        const job = await this.options.readJob(event.id).catch(() => undefined);
        if (job?.result !== undefined && event.type === 'completed') rest.result = job.result;
        if (job?.error && (event.type === 'failed' || event.type === 'dead')) {
          rest.error = { ...rest.error, message: job.error.message };
        }
        return rest;
      }),
    );
    if (!this.closed) this.deliver(runsOfEvents(complete));
  }

  private deliver(runs: readonly JobEventRun[]): void {
    const entries = runs.map((run): Entry => {
      const entry = { firstSeq: this.seq + 1, run, bytes: runBytes(run) };
      this.recent.push(entry);
      this.seq += run.ids.length;
      this.recentEvents += run.ids.length;
      this.recentBytes += entry.bytes;
      return entry;
    });
    const { resumeEvents, resumeBytes } = this.options;
    // Trimmed in steps of half the window, so that keeping it costs no copy per event.
    if (this.recentEvents >= resumeEvents * 1.5 || this.recentBytes >= resumeBytes * 1.5) {
      let drop = 0;
      for (;;) {
        const oldest = this.recent[drop];
        if (!oldest || oldest === this.recent.at(-1)) break;
        if (this.recentEvents - oldest.run.ids.length < resumeEvents && this.recentBytes <= resumeBytes) break;
        this.recentEvents -= oldest.run.ids.length;
        this.recentBytes -= oldest.bytes;
        drop += 1;
      }
      this.recent.splice(0, drop);
    }
    for (const subscriber of this.subscribers) {
      for (const { run, bytes } of entries) if (subscriber.wants(run.name)) subscriber.offer(run, bytes);
    }
  }

  /** Events from other servers may have been missed: every subscriber resyncs, and no one resumes from before. */
  private lost(): void {
    if (!this.keeping) return;
    this.gapSeq = this.seq + 1;
    for (const subscriber of this.subscribers) subscriber.resync();
  }
}

/** One subscriber's bounded buffer, drained as batches by its stream. */
class Subscriber {
  private buffer: JobEventRun[] = [];
  /** The number of events in `buffer`, and their bytes (`runBytes`). */
  private buffered = 0;
  private bufferedBytes = 0;
  private resyncDue = false;
  /** The first batch goes out at once, even empty: it gives the subscriber an id to resume from. */
  private greetDue = true;
  private ended = false;
  private endedWith: Error | undefined;
  private wake: (() => void) | undefined;
  private lastBatchAt = 0;
  /** Ends a pause between batches early, when the stream ends. */
  private cutPause: (() => void) | undefined;

  constructor(
    readonly wants: (name: string) => boolean,
    private readonly maxBuffered: { events: number; bytes: number },
    private readonly lastId: () => string,
    private readonly clock: Clock,
  ) {}

  /** Buffers `run`, of `bytes` (`runBytes`), unless that passes a bound: then it resyncs instead. */
  offer(run: JobEventRun, bytes: number): void {
    if (this.ended) return;
    const { events, bytes: maxBytes } = this.maxBuffered;
    // One run over the bytes alone is still delivered when nothing is buffered: a subscriber keeping up gets it.
    const tooMany = this.buffered + run.ids.length > events;
    if (tooMany || (this.buffered > 0 && this.bufferedBytes + bytes > maxBytes)) {
      this.resync();
      return;
    }
    this.buffer.push(run);
    this.buffered += run.ids.length;
    this.bufferedBytes += bytes;
    this.notify();
  }

  /** Drops what is buffered; the next batch starts with `resync`. */
  resync(): void {
    this.buffer = [];
    this.buffered = 0;
    this.bufferedBytes = 0;
    this.resyncDue = true;
    this.notify();
  }

  /** Ends the stream: it returns, or throws `error`. */
  end(error?: Error): void {
    this.ended = true;
    this.endedWith ??= error;
    this.cutPause?.();
    this.notify();
  }

  async *batches(cleanup: () => void): AsyncGenerator<EventBatch> {
    try {
      while (true) {
        if (!this.resyncDue && !this.greetDue && this.buffer.length === 0 && !this.ended) {
          await new Promise<void>((resolve) => {
            this.wake = resolve;
          });
        }
        // Events arriving within a window of the last batch wait for the window's end and go out together.
        // (At most one window: a clock set back does not hold the stream.)
        const waitMs = Math.min(BATCH_WINDOW_MS, this.lastBatchAt + BATCH_WINDOW_MS - this.clock.now().getTime());
        if (waitMs > 0 && !this.ended) await this.pause(waitMs);
        if (this.endedWith) throw this.endedWith;
        if (this.ended) return;
        const taken = this.buffer;
        this.buffer = [];
        this.buffered = 0;
        this.bufferedBytes = 0;
        const now = this.clock.now();
        const resync: ResyncEvent = { type: 'resync', at: now };
        const runs: (JobEventRun | ResyncEvent)[] = this.resyncDue ? [resync, ...taken] : taken;
        this.resyncDue = false;
        this.greetDue = false;
        this.lastBatchAt = now.getTime();
        yield { id: this.lastId(), runs };
      }
    } finally {
      cleanup();
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.cutPause = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.cutPause = done;
    });
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}

/** The events of `run` after its first `skip`, as a run. */
function runAfter(run: JobEventRun, skip: number): JobEventRun {
  const rest: JobEventRun = { ...run, ids: run.ids.slice(skip), versions: run.versions.slice(skip) };
  if (run.attempts) rest.attempts = run.attempts.slice(skip);
  if (run.details) rest.details = run.details.slice(skip);
  return rest;
}
