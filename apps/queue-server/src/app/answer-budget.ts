import { WorkqError } from '@workq/core';
import { serverAtLimit } from '../errors.ts';
import { currentRequest } from '../request-context.ts';

/** Room granted to one read: `bytes` of the budget, held by its request until it is answered. */
export interface AnswerRoom {
  readonly bytes: number;
  /**
   * The read brought `bytes`: what it did not bring of its grant goes back to the budget now, and what it brought
   * past its grant is counted too, without waiting (it is read already).
   */
  keep(bytes: number): void;
}

/** What one request holds of the budget, and for whom; `closed` once its answer was sent or it ended. */
interface Hold {
  bytes: number;
  owner: string | undefined;
  closed: boolean;
}

/** How long a read may wait for room, and what ends its wait early. */
export interface Patience {
  stop: AbortSignal;
  ms: number;
}

/** The room of a read that gave up waiting. */
const NO_ROOM: AnswerRoom = { bytes: 0, keep: () => undefined };

/** A read waiting for room, first come first served. */
interface Waiter {
  hold: Hold;
  wantBytes: number;
  unitBytes: number;
  grant: (bytes: number) => void;
}

/**
 * The stored bytes (payloads, results) the server's answers carry at once, over all its requests
 * (`limits.maxAnswerBytesInFlight`). One claim's answer is bounded by `maxClaimBytes` and one page of children by
 * `maxChildrenPageBytes`, but each such answer holds its values, and several times their size while it is read and
 * written, until it is sent: without a bound over all of them, enough claims at once on a queue of large jobs
 * would take the process's memory. So each such read first takes room for the most it may bring, waits while
 * not even one value of the largest size fits, is cut to what fits otherwise, and gives back what it did not
 * bring once it has read it; the rest is held until its request's answer is sent (`release`).
 *
 * One caller (a static token, or a signed token's subject) holds at most half of it (`callerShare`, never less
 * than one largest answer), so a caller that leaves its answers unread cannot hold the room every other caller
 * needs. A request that already holds room is never made to wait, since what it holds goes back only when all of
 * its answer is sent (two batches, each holding room and waiting for more, would wait for each other): it gets
 * what fits, or, when not one value fits, its read is refused with a retryable `UNAVAILABLE` (another call of a
 * batch; the client sends it again on its own). A read whose request has gone (its
 * signal aborted, or the request released) stops waiting and gets one value's worth that nobody holds: it ends
 * as it would have (a claim still completes the acks it carries), and its answer goes nowhere.
 */
export class AnswerBudget {
  /** The most one caller's requests hold at once. */
  readonly callerShare: number;
  #held = 0;
  readonly #heldBy = new Map<string, number>();
  readonly #holds = new WeakMap<object, Hold>();
  readonly #waiting: Waiter[] = [];

  /** `VALIDATION` unless `maxBytes` is an integer at least `largestAnswer`: one largest answer always fits. */
  constructor(
    readonly maxBytes: number,
    largestAnswer: number,
  ) {
    if (!Number.isInteger(maxBytes) || maxBytes < largestAnswer) {
      throw new WorkqError(
        'VALIDATION',
        `limits.maxAnswerBytesInFlight must be an integer at least limits.maxClaimBytes and limits.maxChildrenPageBytes (${largestAnswer}); got ${maxBytes}.`,
      );
    }
    this.callerShare = Math.max(Math.floor(maxBytes / 2), largestAnswer);
  }

  /** Bytes held now. */
  get held(): number {
    return this.#held;
  }

  /** Reads waiting for room now. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /**
   * Room for a read of up to `wantBytes`, in whole `unitBytes` (the most one value it reads may carry), held for
   * `request` (any object standing for it) by the caller `owner` (`undefined`: no caller's share applies) until
   * `release(request)`. Resolves to at least one unit and at most `wantBytes`. Waits, behind the reads that
   * already wait, while not one unit fits, unless `signal` (the request's: aborted when its client goes away) has
   * aborted; or, when `request` holds room already, rejects with a retryable `UNAVAILABLE`. With `patience`, it
   * waits no longer than `patience.ms`, nor past `patience.stop` aborting: then it resolves to no room at all.
   */
  reserve(
    request: object,
    owner: string | undefined,
    wantBytes: number,
    unitBytes: number,
    signal: AbortSignal,
    patience?: Patience,
  ): Promise<AnswerRoom> {
    const hold = this.holdOf(request, owner, signal);
    const unit = Math.min(unitBytes, wantBytes);
    if (hold.closed) return Promise.resolve(this.take(hold, unit));
    if (hold.bytes > 0) {
      const fits = this.fitting(hold, wantBytes, unit);
      return fits > 0 ? Promise.resolve(this.take(hold, fits)) : Promise.reject(this.refusal(hold));
    }
    return new Promise((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      let settled = false;
      const settle = (room: () => AnswerRoom) => {
        settled = true;
        clearTimeout(timer);
        signal.removeEventListener('abort', abandon);
        patience?.stop.removeEventListener('abort', giveUp);
        resolve(room());
      };
      const waiter: Waiter = {
        hold,
        wantBytes,
        unitBytes: unit,
        grant: (bytes) => settle(() => this.take(hold, bytes)),
      };
      // Leaves the line with `room`; those behind it may pass now.
      const leave = (room: () => AnswerRoom) => {
        this.#waiting.splice(this.#waiting.indexOf(waiter), 1);
        settle(room);
        this.grantWaiting();
      };
      const abandon = () => leave(() => this.take(hold, unit));
      const giveUp = () => leave(() => NO_ROOM);
      this.#waiting.push(waiter);
      this.grantWaiting();
      if (settled) return;
      if (patience && (patience.ms <= 0 || patience.stop.aborted)) return giveUp();
      signal.addEventListener('abort', abandon, { once: true });
      if (patience) {
        patience.stop.addEventListener('abort', giveUp, { once: true });
        timer = setTimeout(giveUp, patience.ms);
      }
    });
  }

  /** Why a read of a request that holds room already, and finds none, is refused rather than made to wait. */
  private refusal(hold: Hold): WorkqError {
    const share = hold.owner === undefined ? this.maxBytes : this.callerShare;
    return serverAtLimit(
      'maxAnswerBytesInFlight',
      `This request's other calls hold ${hold.bytes} bytes of stored values and no room is left for this one (limits.maxAnswerBytesInFlight, ${this.maxBytes} bytes, --max-answer-bytes-in-flight; one caller's share ${share}); try it again on its own.`,
    );
  }

  /** Counts `bytes` the request already brought (a job handed over by an enqueue), without waiting. */
  add(request: object, owner: string | undefined, bytes: number, signal: AbortSignal): void {
    this.count(this.holdOf(request, owner, signal), bytes);
  }

  /** Gives back all `request` holds, and counts nothing more for it: its answer is sent, or it ended without one. */
  release(request: object): void {
    const hold = this.#holds.get(request);
    if (hold === undefined) return;
    hold.closed = true;
    this.give(hold, hold.bytes);
    // A read of its own that still waits stops waiting now.
    this.grantWaiting();
  }

  /**
   * `request`'s hold. A request seen first after its signal aborted may have been released already, before it
   * held anything: its hold counts nothing.
   */
  private holdOf(request: object, owner: string | undefined, signal: AbortSignal): Hold {
    let hold = this.#holds.get(request);
    if (hold === undefined) {
      hold = { bytes: 0, owner, closed: signal.aborted };
      if (!hold.closed) this.#holds.set(request, hold);
    }
    return hold;
  }

  /** The most of `wantBytes`, in whole units, that fits both the budget and `hold`'s caller's share now. */
  private fitting(hold: Hold, wantBytes: number, unitBytes: number): number {
    const ownerHeld = hold.owner === undefined ? 0 : (this.#heldBy.get(hold.owner) ?? 0);
    const free = Math.min(
      this.maxBytes - this.#held,
      hold.owner === undefined ? Number.POSITIVE_INFINITY : this.callerShare - ownerHeld,
    );
    if (free >= wantBytes) return wantBytes;
    return Math.max(0, Math.floor(free / unitBytes) * unitBytes);
  }

  private take(hold: Hold, bytes: number): AnswerRoom {
    if (hold.closed) return { bytes, keep: () => undefined };
    this.count(hold, bytes);
    let kept = bytes;
    return {
      bytes,
      keep: (brought) => {
        const bytesBrought = Math.max(0, brought);
        if (bytesBrought > kept) this.count(hold, bytesBrought - kept);
        else this.give(hold, kept - bytesBrought);
        kept = bytesBrought;
      },
    };
  }

  /** Counts `bytes` more held by `hold`; nothing once it is closed. */
  private count(hold: Hold, bytes: number): void {
    if (hold.closed || bytes <= 0) return;
    this.#held += bytes;
    hold.bytes += bytes;
    if (hold.owner !== undefined) this.#heldBy.set(hold.owner, (this.#heldBy.get(hold.owner) ?? 0) + bytes);
  }

  private give(hold: Hold, bytes: number): void {
    const back = Math.min(bytes, hold.bytes);
    if (back <= 0) return;
    this.#held -= back;
    hold.bytes -= back;
    if (hold.owner !== undefined) {
      const left = (this.#heldBy.get(hold.owner) ?? 0) - back;
      if (left > 0) this.#heldBy.set(hold.owner, left);
      else this.#heldBy.delete(hold.owner);
    }
    this.grantWaiting();
  }

  /**
   * Grants the waiting reads their room in the order they came. One that only its caller's share holds back lets
   * those behind it go (one caller's unread answers must not stop the others); one the whole budget holds back
   * stops the line, so that large reads are not passed by small ones forever.
   */
  private grantWaiting(): void {
    for (let i = 0; i < this.#waiting.length; ) {
      const waiter = this.#waiting[i] as Waiter;
      const fits = waiter.hold.closed
        ? waiter.unitBytes
        : this.fitting(waiter.hold, waiter.wantBytes, waiter.unitBytes);
      if (fits > 0) {
        this.#waiting.splice(i, 1);
        waiter.grant(fits);
      } else if (this.maxBytes - this.#held < waiter.unitBytes) {
        return;
      } else {
        i++;
      }
    }
  }
}

/** Whose room a read takes: the request it answers (any object standing for it), and its caller. */
export interface AnswerHolder {
  request: object;
  owner: string | undefined;
}

/**
 * Runs `read` with the room it takes held by the current request until that request's answer is sent (the
 * server releases it then); outside any request, until `read` settles.
 */
export async function inAnswer<T>(budget: AnswerBudget, read: (holder: AnswerHolder) => Promise<T>): Promise<T> {
  const request = currentRequest();
  if (request) return read({ request, owner: request.callerKey });
  const holder = { request: {}, owner: undefined };
  try {
    return await read(holder);
  } finally {
    budget.release(holder.request);
  }
}

/**
 * Reads up to `room.wantBytes` of stored values with room from `budget`, in `room.unitBytes` (the most one value
 * brings), and keeps what `bytesOf` says the read brought (`AnswerRoom.keep`: the rest of its room goes back at
 * once, and what it brought past it is counted too). `read` is told the bytes granted. For the current request
 * (`inAnswer`), waiting for room as `AnswerBudget.reserve` does.
 */
export async function readInRoom<T>(
  budget: AnswerBudget,
  signal: AbortSignal,
  room: { wantBytes: number; unitBytes: number },
  read: (maxBytes: number) => Promise<T>,
  bytesOf: (value: T) => number,
): Promise<T> {
  return inAnswer(budget, async ({ request, owner }) => {
    const granted = await budget.reserve(request, owner, room.wantBytes, room.unitBytes, signal);
    let value: T | undefined;
    try {
      value = await read(granted.bytes);
      return value;
    } finally {
      granted.keep(value === undefined ? 0 : bytesOf(value));
    }
  });
}
