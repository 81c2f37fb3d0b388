/**
 * Why the store stopped waiting for a driver call that outlived its limit. The call may or may not have
 * been applied; `toWorkqError` makes it a retryable `UNAVAILABLE`. It sets no `name` of its own: a bulk
 * write wraps it in a `MongoBulkWriteError`, which copies the failure's own fields onto itself and has
 * only a getter for `name`.
 */
export class CallAbandoned extends Error {
  constructor(readonly limitMs: number) {
    super(`abandoned after ${limitMs} ms`);
  }
}

/** A driver call's options with the signal that abandons it; the driver honours it where the type omits it. */
export type Abortable<Options> = Options & { signal: AbortSignal };

/**
 * Runs one call to the server with a signal that abandons it, with `CallAbandoned`, after `limitMs`.
 *
 * The contract, one rule for every call of the MongoDB store, reads and writes alike: a call still
 * unanswered after `serverSelectionTimeoutMS + writeTimeoutMS` (the store's `callLimitMs`) is abandoned
 * with a retryable `UNAVAILABLE`, and a write may still be applied. That is the wait for a primary and then
 * for a majority, so a call an election catches still lands on the new primary; a read, which waits for no
 * majority, has the same allowance for the server's answer. The limit counts per call to the server, not
 * per store operation: a claim or an ack of several calls gives each its own.
 *
 * The driver (7.x) can wait forever for a command it writes to a connection
 * the server has just closed: Node has destroyed the socket, but the driver
 * hears of it only once the socket's `close` event arrives, and meanwhile
 * waits for the write to drain, which a destroyed socket never does. Every
 * command written in that moment hangs, against a real server as against
 * any other peer that closes the connection. None of the driver's time
 * limits reaches that wait (`timeoutMS` has no effect in 7.x;
 * `socketTimeoutMS` cannot fire on a destroyed socket); an abort signal
 * does, and the driver then closes the connection and returns it to the
 * pool. The driver passes a call's options down to the connection, `signal`
 * included, even where the option's type does not list it.
 *
 * A few driver APIs take no signal at all (a session's `commitTransaction`, `abortTransaction` and
 * `endSession`). The call is raced against the signal too, so those are abandoned on time as well; what the
 * driver still waits for then holds a connection whose socket is already destroyed, which no signal can
 * reach and which the driver never returns to the pool.
 */
export async function withCallLimit<T>(limitMs: number, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const { signal } = controller;
  let timer: NodeJS.Timeout | undefined;
  const abandoned = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort(new CallAbandoned(limitMs));
      reject(signal.reason);
    }, limitMs);
    timer.unref();
  });
  try {
    return await Promise.race([call(signal), abandoned]);
  } finally {
    clearTimeout(timer);
  }
}
