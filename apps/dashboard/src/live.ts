import { decodeEventBatch, type JobEventType } from '@workq/core';
import { createContext } from 'preact';
import { useContext, useEffect, useState } from 'preact/hooks';
import type { Api } from './api.ts';

/** Minutes of throughput kept per job type: the last hour. */
export const WINDOW_MINUTES = 60;
/** How often pages reload while the event stream is down (or not offered by the server). */
const POLL_EVERY_MS = 3_000;
/** How often they reload while it is up: scheduled jobs come due without an event. */
const REFRESH_EVERY_MS = 15_000;
/** Events arriving within this cause one reload, not one each: a busy queue does not reload pages without pause. */
const RELOAD_COALESCE_MS = 500;

/** Jobs finished per minute of the last hour: `completed[i]` is minute `i`, oldest first. */
export interface Throughput {
  completed: number[];
  failed: number[];
}

/**
 * What the dashboard knows live: a change counter that pages reload on, and
 * per-type throughput counted from the server's event stream since the page
 * opened. When the stream cannot be opened, pages are polled instead.
 */
export class LiveFeed {
  tick = 0;
  connected = false;
  private readonly minutes = new Map<string, Map<number, { completed: number; failed: number }>>();
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
  throughput(name: string, now = Date.now()): Throughput {
    const byMinute = this.minutes.get(name);
    const current = Math.floor(now / 60_000);
    const completed: number[] = [];
    const failed: number[] = [];
    for (let minute = current - WINDOW_MINUTES + 1; minute <= current; minute++) {
      const counted = byMinute?.get(minute);
      completed.push(counted?.completed ?? 0);
      failed.push(counted?.failed ?? 0);
    }
    return { completed, failed };
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

  /** Counts finishes per minute; a `resync` (events were missed) only reloads, as every batch does. */
  private receive(events: readonly SeenEvent[]): void {
    for (const event of events) {
      if (event.name === undefined) continue;
      if (event.type !== 'completed' && event.type !== 'failed' && event.type !== 'dead') continue;
      const byMinute = this.minutes.get(event.name) ?? new Map<number, { completed: number; failed: number }>();
      this.minutes.set(event.name, byMinute);
      const minute = Math.floor(event.at.getTime() / 60_000);
      const counted = byMinute.get(minute) ?? { completed: 0, failed: 0 };
      if (event.type === 'completed') counted.completed++;
      else counted.failed++;
      byMinute.set(minute, counted);
      const oldest = minute - WINDOW_MINUTES;
      for (const key of byMinute.keys()) if (key <= oldest) byMinute.delete(key);
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
  name?: string;
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
