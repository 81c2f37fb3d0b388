import { decodeEventBatch, type JobEventType } from '@workq/core';
import { createContext } from 'preact';
import { useContext, useEffect, useState } from 'preact/hooks';
import type { Api } from './api.ts';
import { scanJobs } from './job-scan.ts';
import { type Throughput, ThroughputCounter, WINDOW_MINUTES } from './throughput.ts';

/** How often pages reload while the event stream is down (or not offered by the server). */
const POLL_EVERY_MS = 3_000;
/** How often they reload while it is up: scheduled jobs come due without an event. */
const REFRESH_EVERY_MS = 15_000;
/** Events arriving within this cause one reload, not one each: a busy queue does not reload pages without pause. */
const RELOAD_COALESCE_MS = 500;

/**
 * What the dashboard knows live: a change counter that pages reload on, and
 * per-type throughput over the last hour, read from the store's history once
 * per type and counted from the server's event stream from then on. When the
 * stream cannot be opened, pages are polled instead.
 */
export class LiveFeed {
  tick = 0;
  connected = false;
  private readonly finishes = new ThroughputCounter();
  private readonly seeded = new Set<string>();
  private readonly listeners = new Set<() => void>();
  private reloadTimer: ReturnType<typeof setTimeout> | undefined;
  private pollTimer: ReturnType<typeof setInterval> | undefined;
  private readonly stop = new AbortController();

  constructor(api: Api) {
    this.poll();
    const subscription = api.events.watch.subscribe(
      {},
      {
        signal: this.stop.signal,
        onStarted: () => this.setConnected(true),
        onData: (batch) => this.receive(decodeEventBatch(batch.data)),
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

  /**
   * Counts the last hour's finishes the store still holds for each of
   * `names` not read before: jobs completed or dead now, created within the
   * hour. (Failed attempts that were retried leave no trace there: they are
   * counted from the stream only.)
   */
  async seed(api: Api, names: readonly string[]): Promise<void> {
    const fresh = names.filter((name) => !this.seeded.has(name));
    if (fresh.length === 0) return;
    for (const name of fresh) this.seeded.add(name);
    const fromMs = Date.now() - WINDOW_MINUTES * 60_000;
    for (const name of fresh) {
      for (const state of ['completed', 'dead'] as const) {
        const { jobs } = await scanJobs(api, { name, state, fromMs });
        for (const job of jobs) {
          if (!job.finishedAt) continue;
          const kind = state === 'completed' ? 'completed' : 'failed';
          this.finishes.count({ name, id: job.id, kind, attempt: job.attempts, at: new Date(job.finishedAt) });
        }
      }
    }
    this.changed();
  }

  /** Reload now (after an action of this page). */
  changed(): void {
    this.tick++;
    for (const listener of this.listeners) listener();
  }

  listen(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): void {
    this.stop.abort();
    clearInterval(this.pollTimer);
    clearTimeout(this.reloadTimer);
  }

  /** Counts finishes; a `resync` (events were missed) only reloads, as every batch does. */
  private receive(events: readonly SeenEvent[]): void {
    for (const event of events) {
      if (event.name === undefined || event.id === undefined) continue;
      if (event.type !== 'completed' && event.type !== 'failed' && event.type !== 'dead') continue;
      const kind = event.type === 'completed' ? 'completed' : 'failed';
      this.finishes.count({ name: event.name, id: event.id, kind, attempt: event.attempt ?? 0, at: event.at });
    }
    this.reloadTimer ??= setTimeout(() => {
      this.reloadTimer = undefined;
      this.changed();
    }, RELOAD_COALESCE_MS);
  }

  private setConnected(connected: boolean): void {
    if (this.connected === connected) return;
    this.connected = connected;
    this.poll();
    this.changed();
  }

  private poll(): void {
    clearInterval(this.pollTimer);
    this.pollTimer = setInterval(() => this.changed(), this.connected ? REFRESH_EVERY_MS : POLL_EVERY_MS);
  }
}

/** What the feed reads of an event: its type, job name and time. */
interface SeenEvent {
  type: JobEventType | 'resync';
  id?: string;
  name?: string;
  attempt?: number;
  at: Date;
}

export const LiveContext = createContext<LiveFeed | null>(null);

/** The live feed; a component using it re-renders on every change. */
export function useLive(): LiveFeed {
  const live = useContext(LiveContext);
  if (!live) throw new Error('useLive outside the signed-in dashboard');
  const [, setTick] = useState(live.tick);
  useEffect(() => live.listen(() => setTick(live.tick)), [live]);
  return live;
}
