import type { Pool } from 'mysql2/promise';
import type { ClosableNotifier } from '../../engine/store.ts';
import { WorkqError } from '../../errors.ts';
import { execute, selectRows } from './connection.ts';
import { classifyMysqlError } from './errors.ts';
import type { Tables } from './tables.ts';

export interface PolledNotifierParts {
  pool: Pool;
  tables: Tables;
  /** `host:port`, for error messages. */
  target: string;
  /** How often each subscriber reads new messages; greater than 0. */
  pollMs: number;
}

/** How long messages are kept: far longer than any subscriber's poll interval. */
const RETENTION_S = 60;
/** A subscriber that has not read for this long may have missed trimmed messages: it resyncs and gets `'*'`. */
const GAP_MS = (RETENTION_S * 1000) / 2;
/** Trimming runs at most this often per process, deleting up to `TRIM_BATCHES` batches of `TRIM_BATCH_ROWS`. */
const TRIM_EVERY_MS = 10_000;
const TRIM_BATCH_ROWS = 1_000;
const TRIM_BATCHES = 10;
/**
 * InnoDB hands out auto-increment values before commit, so a lower seq can
 * become visible after a higher one was read. Each poll reads again below the
 * highest seq seen: up to `REREAD_SEQS` seqs, for up to `SETTLE_MS`.
 */
const REREAD_SEQS = 500;
const SETTLE_MS = 2_000;
/** New rows per read; a full page is followed by another read at once. */
const PAGE_ROWS = 500;

/**
 * Cross-process wake-ups for MySQL/MariaDB, which has no LISTEN/NOTIFY:
 * `publish` inserts a row into the wakeups table; each subscriber polls it
 * every `pollMs` with one indexed read of the rows after the last it saw.
 * Rows older than a minute are trimmed by whichever process publishes or
 * polls. After a failed poll or a long pause, the listener gets `'*'`.
 */
export class PolledNotifier implements ClosableNotifier {
  private readonly subscriptions = new Set<Subscription>();
  private lastTrimAt = 0;
  private trimming: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly parts: PolledNotifierParts) {}

  async publish(message: string): Promise<void> {
    const { pool, tables, target } = this.parts;
    try {
      await execute(pool, `INSERT INTO ${tables.wakeups} (message, created_at) VALUES (?, UTC_TIMESTAMP(3))`, [
        String(message),
      ]);
    } catch (error) {
      throw classifyMysqlError(error, target, 'publish');
    }
    this.trimSoon();
  }

  async subscribe(listener: (message: string) => void): Promise<() => Promise<void>> {
    let start = 0;
    try {
      if (!this.closed) start = await this.highestSeq();
    } catch (error) {
      throw classifyMysqlError(error, this.parts.target, 'subscribe');
    }
    if (this.closed) {
      throw new WorkqError('UNAVAILABLE', 'The MySQL store is closed; subscribe cannot run.', { retryable: false });
    }
    const subscription = new Subscription(this, start, listener, this.parts.pollMs);
    this.subscriptions.add(subscription);
    subscription.begin();
    return async () => {
      this.subscriptions.delete(subscription);
      await subscription.stop();
    };
  }

  /** Stops every subscription and waits for any poll or trim still running. */
  async close(): Promise<void> {
    this.closed = true;
    const open = [...this.subscriptions];
    this.subscriptions.clear();
    await Promise.all(open.map((subscription) => subscription.stop()));
    await this.trimming;
  }

  /** The highest seq stored; messages from now on have higher ones. */
  async highestSeq(): Promise<number> {
    const [row] = await selectRows(
      this.parts.pool,
      `SELECT COALESCE(MAX(seq), 0) AS seq FROM ${this.parts.tables.wakeups}`,
    );
    return Number(row?.seq ?? 0);
  }

  /** Rows after `after`, except the seqs in `skip`, in seq order. */
  async readAfter(after: number, skip: readonly number[], limit: number): Promise<{ seq: number; message: string }[]> {
    const rows = await selectRows(
      this.parts.pool,
      `SELECT seq, message FROM ${this.parts.tables.wakeups} WHERE seq > ? AND seq NOT IN (?) ORDER BY seq LIMIT ?`,
      // seq starts at 1, so 0 stands in for an empty list.
      [after, skip.length > 0 ? skip : [0], limit],
    );
    return rows.map((row) => ({ seq: Number(row.seq), message: String(row.message) }));
  }

  /** Deletes expired rows in the background, at most once per `TRIM_EVERY_MS`; a failure waits for the next turn. */
  trimSoon(): void {
    if (this.closed || this.trimming || Date.now() - this.lastTrimAt < TRIM_EVERY_MS) return;
    this.lastTrimAt = Date.now();
    const sql = `DELETE FROM ${this.parts.tables.wakeups}
      WHERE created_at < UTC_TIMESTAMP(3) - INTERVAL ${RETENTION_S} SECOND LIMIT ${TRIM_BATCH_ROWS}`;
    this.trimming = (async () => {
      for (let batch = 0; batch < TRIM_BATCHES && !this.closed; batch++) {
        if ((await execute(this.parts.pool, sql)).affectedRows < TRIM_BATCH_ROWS) return;
      }
    })()
      .catch(() => undefined)
      .finally(() => {
        this.trimming = undefined;
      });
  }
}

/** One subscriber's poll loop: a single timer, re-armed after each poll finishes. */
class Subscription {
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private stopped = false;
  private highest: number;
  /** Delivered seqs above the current floor, skipped when read again. */
  private readonly delivered = new Set<number>();
  /** The highest seq after each poll that moved it, with when: older than `SETTLE_MS`, it becomes the floor. */
  private readonly marks: { seq: number; at: number }[] = [];
  /**
   * Seqs at or below this are never read again: stored before the subscription or a resync, or
   * settled (older than `SETTLE_MS`). It only grows.
   */
  private settled: number;
  private resync = false;
  private lastReadAt = Date.now();

  constructor(
    private readonly source: PolledNotifier,
    start: number,
    private readonly listener: (message: string) => void,
    private readonly pollMs: number,
  ) {
    this.highest = start;
    this.settled = start;
  }

  /** Starts polling: the first read is one interval from now. */
  begin(): void {
    this.arm();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.polling;
  }

  private arm(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.polling = this.poll().finally(() => {
        this.polling = undefined;
        this.arm();
      });
    }, this.pollMs);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    try {
      if (Date.now() - this.lastReadAt > GAP_MS) this.resync = true;
      if (this.resync) await this.restart();
      while (!this.stopped) {
        const floor = this.floor();
        const rows = await this.source.readAfter(floor, [...this.delivered], PAGE_ROWS);
        if (this.stopped) return;
        this.lastReadAt = Date.now();
        this.take(rows);
        if (rows.length < PAGE_ROWS) break;
      }
    } catch {
      // The server is unreachable or the pool closing: resync once a poll succeeds.
      this.resync = true;
    }
    this.source.trimSoon();
  }

  /** Skips whatever was stored meanwhile and tells the listener anything may have changed. */
  private async restart(): Promise<void> {
    const highest = await this.source.highestSeq();
    if (this.stopped) return;
    this.highest = this.settled = highest;
    this.delivered.clear();
    this.marks.length = 0;
    this.resync = false;
    this.lastReadAt = Date.now();
    this.deliver('*');
  }

  private floor(): number {
    const now = Date.now();
    while (this.marks.length > 0 && now - (this.marks[0]?.at ?? now) >= SETTLE_MS) {
      this.settled = this.marks.shift()?.seq ?? this.settled;
    }
    const floor = Math.max(this.settled, this.highest - REREAD_SEQS);
    for (const seq of this.delivered) if (seq <= floor) this.delivered.delete(seq);
    return floor;
  }

  private take(rows: readonly { seq: number; message: string }[]): void {
    const before = this.highest;
    for (const row of rows) {
      if (this.delivered.has(row.seq)) continue;
      this.delivered.add(row.seq);
      this.highest = Math.max(this.highest, row.seq);
      this.deliver(row.message);
    }
    if (this.highest > before) this.marks.push({ seq: this.highest, at: Date.now() });
  }

  private deliver(message: string): void {
    try {
      this.listener(message);
    } catch {
      // A listener's own failure must not stall or rewind the cursor.
    }
  }
}
