import type { IncomingMessage } from 'node:http';
import { WorkqError } from '@workq/core';
import { serverAtLimit } from '../errors.ts';

/** What one request holds of its server's budget, and for whom. */
interface Hold {
  budget: BodyBudget;
  bytes: number;
  /** The key of the caller that sent it (`Principal.callerKey`), once its body is read; `undefined` in open mode. */
  owner: string | undefined;
}

const holds = new WeakMap<IncomingMessage, Hold>();

/**
 * The request-body bytes one server holds at once, over all its requests (`limits.maxBodyBytesInFlight`). A
 * body counts from its first byte until its response closes, since what is decoded from it lives as long. A
 * body that would pass the budget is refused with a retryable `UNAVAILABLE`, so many large bodies at once
 * cannot take the process's memory, while the per-request limits bound each one alone. One caller's requests
 * (a static token's, or all of a signed token's subject's, whichever token it holds now) may hold at most half
 * of it (`callerShare`, and never less than one largest body), so a caller that keeps large requests waiting
 * (claims long-polling with padded bodies) cannot hold the room every other caller needs.
 */
export class BodyBudget {
  /** The most one caller's requests hold at once. */
  readonly callerShare: number;
  #held = 0;
  #refused = 0;
  readonly #heldBy = new Map<string, number>();

  /** `VALIDATION` unless `maxBytes` is an integer at least `maxRequestBytes`: a largest body always fits. */
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
    this.callerShare = Math.max(Math.floor(maxBytes / 2), maxRequestBytes);
  }

  /** Bytes of request bodies held now. */
  get held(): number {
    return this.#held;
  }

  /** Request bodies refused for want of room, since the server started. */
  get refused(): number {
    return this.#refused;
  }

  /** Bytes the requests of the caller with key `owner` (`Principal.callerKey`) hold now. */
  heldBy(owner: string): number {
    return this.#heldBy.get(owner) ?? 0;
  }

  /** Counts what `req`'s body brings against this budget from now on, until `release(req)`. */
  admit(req: IncomingMessage): void {
    holds.set(req, { budget: this, bytes: 0, owner: undefined });
  }

  /** Gives back what `req` holds: its response has closed. */
  release(req: IncomingMessage): void {
    const hold = holds.get(req);
    if (hold?.budget === this) this.give(hold);
  }

  /**
   * Holds `bytes` more for `hold`'s request; otherwise gives back what it held, counts the refusal and says
   * why: the whole budget is held, or its caller's share.
   */
  take(hold: Hold, bytes: number): 'server' | 'caller' | undefined {
    const ownerHeld = hold.owner === undefined ? 0 : this.heldBy(hold.owner);
    const refusal =
      this.#held + bytes > this.maxBytes ? 'server' : ownerHeld + bytes > this.callerShare ? 'caller' : undefined;
    if (refusal) {
      this.#refused++;
      this.give(hold);
      return refusal;
    }
    this.#held += bytes;
    hold.bytes += bytes;
    if (hold.owner !== undefined) this.#heldBy.set(hold.owner, ownerHeld + bytes);
    return undefined;
  }

  /** Gives back what `hold`'s request holds. */
  give(hold: Hold): void {
    if (hold.bytes === 0) return;
    this.#held -= hold.bytes;
    if (hold.owner !== undefined) {
      const left = this.heldBy(hold.owner) - hold.bytes;
      if (left > 0) this.#heldBy.set(hold.owner, left);
      else this.#heldBy.delete(hold.owner);
    }
    hold.bytes = 0;
  }
}

/** Names whose `req`'s body is: the key of the caller that sent it (`undefined` in open mode). */
export function ownBodyBytes(req: IncomingMessage, owner: string | undefined): void {
  const hold = holds.get(req);
  if (hold !== undefined && hold.bytes === 0) hold.owner = owner;
}

/** Gives back what `req`'s body holds of its server's budget: the body was dropped, refused. */
export function dropBodyBytes(req: IncomingMessage): void {
  const hold = holds.get(req);
  hold?.budget.give(hold);
}

/**
 * Counts `bytes` more of `req`'s body against its server's budget, when it was admitted to one; throws the
 * refusal, having given back what the request held, when they do not fit.
 */
export function holdBodyBytes(req: IncomingMessage, bytes: number): void {
  const hold = holds.get(req);
  const refusal = hold?.budget.take(hold, bytes);
  if (hold === undefined || refusal === undefined) return;
  const { maxBytes, callerShare } = hold.budget;
  throw serverAtLimit(
    'maxBodyBytesInFlight',
    refusal === 'server'
      ? `This server holds as many request bodies as it may at once (limits.maxBodyBytesInFlight, ${maxBytes} bytes, --max-body-bytes-in-flight); try again shortly or on another server.`
      : `This caller's requests hold as many body bytes as one caller may at once (${callerShare} bytes, half of limits.maxBodyBytesInFlight; a caller is a token, or a signed token's subject); try again once its other requests are answered.`,
  );
}
