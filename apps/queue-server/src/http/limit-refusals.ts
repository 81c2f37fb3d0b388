import type { Logger } from '../options.ts';

/** How long the refusals at one limit after a logged one are counted before they are logged as a count. */
export const REFUSAL_LOG_WINDOW_MS = 10_000;

/**
 * The log of requests refused at one of the server's own limits (`maxBodyBytesInFlight`, `maxEventStreams`):
 * load shed as meant, not a failure, so `warn`, and at most two lines per limit per window however many are
 * refused. The first refusal after a quiet window is logged with its request; the ones after it in the window
 * are counted, and the count is logged when the window ends (which opens another while refusals go on). A flood
 * of refusals costs the log a line every `windowMs`, not a line a request; `/metrics` counts every one.
 */
export class LimitRefusalLog {
  /** Per limit with a window open: refusals since its last line. */
  readonly #unlogged = new Map<string, number>();
  readonly #timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly logger: Logger,
    private readonly windowMs = REFUSAL_LOG_WINDOW_MS,
  ) {}

  /** One request refused at `limit`; `fields` name the request. */
  refused(limit: string, fields: Record<string, unknown>): void {
    const unlogged = this.#unlogged.get(limit);
    if (unlogged !== undefined) {
      this.#unlogged.set(limit, unlogged + 1);
      return;
    }
    this.logger.warn(`request refused at a server limit (${limit})`, { ...fields, limit });
    this.#openWindow(limit);
  }

  /** Logs the counts of open windows and closes them: the server is closing. */
  close(): void {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    for (const limit of [...this.#unlogged.keys()]) this.#logCount(limit);
    this.#unlogged.clear();
  }

  #openWindow(limit: string): void {
    this.#unlogged.set(limit, 0);
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      if (this.#logCount(limit)) this.#openWindow(limit);
      else this.#unlogged.delete(limit);
    }, this.windowMs);
    timer.unref();
    this.#timers.add(timer);
  }

  /** Logs how many were refused at `limit` since its last line, if any; says whether it did. */
  #logCount(limit: string): boolean {
    const refused = this.#unlogged.get(limit) ?? 0;
    if (refused === 0) return false;
    this.logger.warn(`${refused} more request(s) refused at a server limit (${limit})`, {
      limit,
      refused,
      windowMs: this.windowMs,
    });
    return true;
  }
}
