import { decodeEventBatch, type JobEventType } from '@workq/core';
import type { QueueApi } from '@workq/sdk';
import { createContext } from 'preact';
import { useContext, useEffect, useState } from 'preact/hooks';
import { type Throughput, ThroughputCounter, WINDOW_MINUTES } from './throughput.ts';

/** How often pages reload while the event stream is down (or not offered by the server). */
const POLL_EVERY_MS = 5_000;
/** How often pages that count reload while it is up: scheduled jobs come due without an event. */
const REFRESH_EVERY_MS = 15_000;
/** Pages that re-read on events do so at most this often, however busy the queue. */
const RELOAD_EVERY_MS = 5_000;
/** The finishes of the last hour read per type and state when the overview opens: one page each. */
const SEED_ROWS = 200;

/**
 * What the dashboard knows live. Two change counters: `tick` for pages that
 * re-read small summaries (counts, workers), at most every `RELOAD_EVERY_MS`
 * on events; and `staleTick` for pages that patch what they show from the
 * events themselves (`onEvents`) and re-read only when those may have been
 * missed: after an action of this page, a `resync`, a reconnection, or each
 * poll while the stream is down. Also per-type throughput over the last hour,
 * seeded from one page of the store's history per type and state, then
 * counted from the stream.
 */
export class LiveFeed {
  tick = 0;
  staleTick = 0;
  connected = false;
  private wasConnected = false;
  private readonly finishes = new ThroughputCounter();
  private readonly seeded = new Set<string>();
  /** Types whose history held more finishes than one seeding page: their counts are lower bounds. */
  private readonly partly = new Set<string>();
  private readonly listeners = new Set<() => void>();
  private readonly eventListeners = new Set<(events: readonly LiveJobEvent[]) => void>();
  private reloadTimer: ReturnType<typeof setTimeout> | undefined;
  private pollTimer: ReturnType<typeof setInterval> | undefined;
  private readonly stop = new AbortController();

  constructor(api: QueueApi) {
    this.poll();
    const subscription = api.events.watch.subscribe(
      {},
      {
        signal: this.stop.signal,
        onStarted: () => this.setConnected(true),
        onData: (batch) => this.receive(decodeEventBatch(batch.data) as LiveEvent[]),
        onError: () => this.setConnected(false),
        onConnectionStateChange: (state) => this.setConnected(state.state === 'pending'),
      },
    );
    this.stop.signal.addEventListener('abort', () => subscription.unsubscribe());
  }

  /** Per-minute completions and failures of `name` over the last hour, oldest minute first. */
  throughput(name: string): Throughput {
    return this.finishes.series(name);
  }

  /** Whether `name`'s throughput holds only part of the store's last hour (it had more than one page). */
  partial(name: string): boolean {
    return this.partly.has(name);
  }

  /**
   * Counts the last hour's finishes the store still holds for each of
   * `names` not read before: jobs completed or dead now, created within the
   * hour, one page of the newest per state. (Failed attempts that were
   * retried leave no trace there: they are counted from the stream only.)
   */
  async seed(api: QueueApi, names: readonly string[]): Promise<void> {
    const fresh = names.filter((name) => !this.seeded.has(name));
    if (fresh.length === 0) return;
    for (const name of fresh) this.seeded.add(name);
    const createdFromMs = Date.now() - WINDOW_MINUTES * 60_000;
    for (const name of fresh) {
      for (const state of ['completed', 'dead'] as const) {
        const page = await api.admin.jobs.query({ name, state, createdFromMs, limit: SEED_ROWS });
        if (page.nextCursor !== null) this.partly.add(name);
        for (const job of page.jobs) {
          if (!job.finishedAt) continue;
          const kind = state === 'completed' ? 'completed' : 'failed';
          this.finishes.count({ name, id: job.id, kind, attempt: job.attempts, at: new Date(job.finishedAt) });
        }
      }
    }
    this.notify();
  }

  /** Reload now (after an action of this page): every page re-reads, patched lists too. */
  changed(): void {
    this.tick++;
    this.staleTick++;
    this.notify();
  }

  listen(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Hands each batch of events from the stream to `listener`, for pages that patch what they show. */
  onEvents(listener: (events: readonly LiveJobEvent[]) => void): () => void {
    this.eventListeners.add(listener);
    return () => this.eventListeners.delete(listener);
  }

  close(): void {
    this.stop.abort();
    clearInterval(this.pollTimer);
    clearTimeout(this.reloadTimer);
  }

  /** Counts finishes, hands the batch on, and schedules one throttled reload; a `resync` makes patched lists re-read. */
  private receive(events: readonly LiveEvent[]): void {
    const jobEvents: LiveJobEvent[] = [];
    for (const event of events) {
      if (event.type === 'resync') {
        this.staleTick++;
        continue;
      }
      jobEvents.push(event);
      if (event.type !== 'completed' && event.type !== 'failed' && event.type !== 'dead') continue;
      const kind = event.type === 'completed' ? 'completed' : 'failed';
      this.finishes.count({ name: event.name, id: event.id, kind, attempt: event.attempt ?? 0, at: event.at });
    }
    for (const listener of this.eventListeners) listener(jobEvents);
    this.reloadTimer ??= setTimeout(() => {
      this.reloadTimer = undefined;
      this.tick++;
      this.notify();
    }, RELOAD_EVERY_MS);
  }

  private notify(): void {
    for (const listener of this.listeners) listener();
  }

  private setConnected(connected: boolean): void {
    if (this.connected === connected) return;
    this.connected = connected;
    this.poll();
    // Pages read before the first connection miss nothing worth a re-read; after a drop, events may be lost.
    if (connected && !this.wasConnected) this.notify();
    else this.changed();
    this.wasConnected ||= connected;
  }

  private poll(): void {
    clearInterval(this.pollTimer);
    this.pollTimer = setInterval(
      () => {
        this.tick++;
        if (!this.connected) this.staleTick++;
        this.notify();
      },
      this.connected ? REFRESH_EVERY_MS : POLL_EVERY_MS,
    );
  }
}

/** An event about one job, as the stream delivers it. */
export interface LiveJobEvent {
  type: JobEventType;
  id: string;
  name: string;
  version: number;
  at: Date;
  attempt?: number;
  progress?: number;
  error?: { message: string; permanent?: boolean; code?: string };
  willRetry?: boolean;
}

/** What the stream delivers: job events, or `resync` when some may have been missed. */
export type LiveEvent = LiveJobEvent | { type: 'resync'; at: Date };

export const LiveContext = createContext<LiveFeed | null>(null);

/** The live feed; a component using it re-renders on every change. */
export function useLive(): LiveFeed {
  const live = useContext(LiveContext);
  if (!live) throw new Error('useLive outside the signed-in dashboard');
  const [, setTicks] = useState(`${live.tick}.${live.staleTick}`);
  useEffect(() => live.listen(() => setTicks(`${live.tick}.${live.staleTick}`)), [live]);
  return live;
}
