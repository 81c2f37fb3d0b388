/**
 * One recurring job: at every time its cron expression names, the server
 * enqueues one job of `name` with `payload`. Servers that share a store and
 * an entry enqueue each occurrence once between them: the occurrence's
 * idempotency key names the entry and the time.
 */
export interface CronEntry {
  /**
   * When: five fields (minute, hour, day of month, month, day of week), or
   * six with seconds first, e.g. `0 3 * * *` for 03:00 every day.
   */
  cron: string;
  /** The job type each occurrence enqueues; its schema must be registered (by any producer or consumer). */
  name: string;
  /** The payload of every occurrence, checked against the registered schema when it is enqueued. @defaultValue {} */
  payload?: unknown;
  /** The payload's version. @defaultValue the newest version registered for `name` */
  version?: number;
  /** The IANA time zone the expression is read in, e.g. `Europe/Berlin`. @defaultValue 'UTC' */
  timezone?: string;
  /**
   * Names the entry across servers and deploys. @defaultValue derived from
   * the name, expression, time zone, version and payload (so changing any of
   * them makes a new entry)
   */
  key?: string;
  /** Enqueue options of every occurrence. The catalog's `defaults` are the SDK's, so they do not apply here. */
  options?: {
    priority?: number;
    maxAttempts?: number;
    backoff?: { type: 'fixed' | 'exponential'; delayMs: number; maxDelayMs?: number };
    leaseMs?: number;
    order?: 'fifo' | 'lifo';
  };
}
