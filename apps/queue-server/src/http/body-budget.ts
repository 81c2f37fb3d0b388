import type { IncomingMessage } from 'node:http';
import { WorkqError } from '@workq/core';
import { serverAtLimit } from '../errors.ts';

/** What one request holds of its server's budget. */
interface Hold {
  budget: BodyBudget;
  bytes: number;
}

const holds = new WeakMap<IncomingMessage, Hold>();

/**
 * The request-body bytes one server holds at once, over all its requests (`limits.maxBodyBytesInFlight`). A
 * body counts from its first byte until its response closes, since what is decoded from it lives as long. A
 * body that would pass the budget is refused with a retryable `UNAVAILABLE`, so many large bodies at once, from
 * one token or many, cannot take the process's memory, while the per-request limits bound each one alone.
 */
export class BodyBudget {
  #held = 0;
  #refused = 0;

  /** `VALIDATION` unless `maxBytes` is a positive integer at least `maxRequestBytes`: a largest body always fits. */
  constructor(
    readonly maxBytes: number,
    maxRequestBytes: number,
  ) {
    if (!Number.isInteger(maxBytes) || maxBytes < maxRequestBytes) {
      throw new WorkqError(
        'VALIDATION',
        `limits.maxBodyBytesInFlight must be an integer at least limits.maxRequestBytes (${maxRequestBytes}); got ${maxBytes}.`,
      );
    }
  }

  /** Bytes of request bodies held now. */
  get held(): number {
    return this.#held;
  }

  /** Request bodies refused for want of room, since the server started. */
  get refused(): number {
    return this.#refused;
  }

  /** Counts what `req`'s body brings against this budget from now on, until `release(req)`. */
  admit(req: IncomingMessage): void {
    holds.set(req, { budget: this, bytes: 0 });
  }

  /** Gives back what `req` holds: its response has closed. */
  release(req: IncomingMessage): void {
    const hold = holds.get(req);
    if (hold?.budget === this) this.give(hold);
  }

  /** Holds `bytes` more for `hold`'s request, or refuses them (counted in `refused`). */
  take(hold: Hold, bytes: number): boolean {
    if (this.#held + bytes > this.maxBytes) {
      this.#refused++;
      return false;
    }
    this.#held += bytes;
    hold.bytes += bytes;
    return true;
  }

  /** Gives back what `hold`'s request holds. */
  give(hold: Hold): void {
    this.#held -= hold.bytes;
    hold.bytes = 0;
  }
}

/** Gives back what `req`'s body holds of its server's budget: the body was dropped, refused. */
export function dropBodyBytes(req: IncomingMessage): void {
  const hold = holds.get(req);
  hold?.budget.give(hold);
}

/**
 * Counts `bytes` more of `req`'s body against its server's budget, when it was admitted to one; throws the
 * refusal, giving back what the request held, when they do not fit.
 */
export function holdBodyBytes(req: IncomingMessage, bytes: number): void {
  const hold = holds.get(req);
  if (hold === undefined || hold.budget.take(hold, bytes)) return;
  hold.budget.give(hold);
  throw serverAtLimit(
    'maxBodyBytesInFlight',
    `This server holds as many request bodies as it may at once (limits.maxBodyBytesInFlight, ${hold.budget.maxBytes} bytes, --max-body-bytes-in-flight); try again shortly or on another server.`,
  );
}
