import type { Db } from 'mongodb';
import { withCallLimit } from './call-limit.ts';

/** How long a measured offset is used before the next lease operation measures it again. */
const OFFSET_TTL_MS = 10_000;

/**
 * The database's clock as the store uses it for leases: lease deadlines are
 * set, checked and swept in the primary's time (`hello.localTime`, the clock
 * `$$NOW` reads), not in the time of whichever server runs the call. Each
 * engine time is moved by this process's measured offset from the primary's
 * clock, so a server whose clock runs ahead finds the same deadlines as one
 * whose clock is right, and sweeps no live lease.
 *
 * The offset is measured against this process's wall clock and applied to
 * the engine's clock (`EngineOptions.clock`). Under the system clock the two
 * are one, and lease times become database times; under a test's manual
 * clock the measured offset moves the manual time by the same amount, so
 * tests still cross deadlines by moving their clock. An offset within the
 * measurement's own uncertainty (half its round trip, plus the millisecond
 * `localTime` is rounded to) is taken as none, so stores on one clock agree
 * to the millisecond. The offset is measured again after `OFFSET_TTL_MS`, so
 * a clock stepped meanwhile is followed.
 *
 * Deadlines are plain dates rather than `$$NOW` expressions, so the lease
 * index serves the sweep's range, and the deadline a claim reports is the one
 * stored: `$$NOW` would add the milliseconds between the engine reading its
 * clock and the primary running the write. The sweep checks `$$NOW` as well
 * (see `requeueExpiredLeases`), so an offset measured wrong can delay a
 * sweep but never sweep a lease the primary's clock holds live.
 */
export class DatabaseClock {
  private offset: { ms: number; measuredAt: number } | null = null;
  private measuring: Promise<number> | null = null;

  constructor(
    private readonly db: Db,
    private readonly limitMs: number,
  ) {}

  /** The database's time at the engine's `now`. */
  async at(now: Date): Promise<Date> {
    return (await this.shift())(now);
  }

  /** What moves an engine time to the database's (the same for every time of one call). */
  async shift(): Promise<(date: Date) => Date> {
    const offsetMs = await this.offsetMs();
    return (date) => (offsetMs === 0 ? date : new Date(date.getTime() + offsetMs));
  }

  /** The primary's clock minus this process's, in milliseconds; measured at most every `OFFSET_TTL_MS`. */
  private offsetMs(): Promise<number> {
    if (this.offset && Date.now() - this.offset.measuredAt < OFFSET_TTL_MS) return Promise.resolve(this.offset.ms);
    this.measuring ??= this.measure().finally(() => {
      this.measuring = null;
    });
    return this.measuring;
  }

  private async measure(): Promise<number> {
    const sent = Date.now();
    const reply = await withCallLimit(this.limitMs, (signal) => this.db.command({ hello: 1 }, { signal }));
    const received = Date.now();
    const localTime = reply.localTime;
    let ms = 0;
    if (localTime instanceof Date) {
      const raw = localTime.getTime() - (sent + received) / 2;
      ms = Math.abs(raw) <= (received - sent) / 2 + 1 ? 0 : Math.round(raw);
    }
    this.offset = { ms, measuredAt: received };
    return ms;
  }
}
