import { setTimeout } from 'node:timers/promises';
import {
  type ClientSession,
  type MongoClient,
  MongoError,
  type TransactionOptions,
  type WriteConcernSettings,
} from 'mongodb';
import { CallAbandoned, withCallLimit } from './call-limit.ts';
import { isWriteTimeout } from './errors.ts';

/**
 * How much longer than the commit's `maxCommitTimeMS` its write concern may
 * wait. The driver gives a commit without a `wtimeoutMS` one of 10 s, and
 * `withTransaction` retries a commit that failed on its write concern for
 * two minutes; a commit whose `maxTimeMS` runs out first fails with
 * `MaxTimeMSExpired`, which it does not retry. So the commit fails once,
 * after `writeTimeoutMS`, as every other write does.
 */
const COMMIT_WTIMEOUT_MARGIN_MS = 1_000;

/**
 * The options of the store's transactions: majority, journaled, the commit
 * bounded by `maxCommitTimeMS` (see above); reads at `majority` from the
 * primary, so what a transaction reads is what a failover keeps.
 */
export function transactionOptions(writeConcern: WriteConcernSettings): TransactionOptions {
  const { wtimeoutMS, ...majority } = writeConcern;
  const bounded =
    wtimeoutMS === undefined
      ? { writeConcern: majority }
      : {
          writeConcern: { ...majority, wtimeoutMS: wtimeoutMS + COMMIT_WTIMEOUT_MARGIN_MS },
          maxCommitTimeMS: wtimeoutMS,
        };
  return { ...bounded, readConcern: { level: 'majority' }, readPreference: 'primary' };
}

/**
 * Whether a transaction's commit reached a primary that may have applied it, its answer lost: a connection
 * or a primary lost during the commit. A majority that did not confirm it in time is not one: that commit
 * is not yet visible to a majority read, and is reported as `TIMEOUT` (it may still be applied).
 */
export function isUnknownCommit(error: unknown): boolean {
  return error instanceof MongoError && error.hasErrorLabel('UnknownTransactionCommitResult') && !isWriteTimeout(error);
}

/** The first pause before a commit whose outcome is unknown is sent again; it doubles up to the next. */
const COMMIT_RETRY_FIRST_PAUSE_MS = 50;
const COMMIT_RETRY_MAX_PAUSE_MS = 1_000;

/** How long an unknown commit is sent again under a write concern without `wtimeoutMS`: the store's default. */
const DEFAULT_COMMIT_BOUND_MS = 10_000;

/**
 * Commits the transaction of `session` (inside its `withTransaction` callback, which then commits nothing
 * more), sending the commit again while its outcome is unknown (`isUnknownCommit`) until the write
 * concern's `wtimeoutMS`, the bound of every write, has passed; then the last error is thrown, for the
 * caller to read the outcome from the majority-committed state. A commit sent again answers once the first
 * one is majority-committed, or that it was never applied. `withTransaction` itself would send it again
 * for 120 s: driver 7 gives it no other bound.
 */
export async function commitWithin(session: ClientSession, writeConcern: WriteConcernSettings): Promise<void> {
  const deadline = Date.now() + (writeConcern.wtimeoutMS ?? DEFAULT_COMMIT_BOUND_MS);
  for (let pauseMs = COMMIT_RETRY_FIRST_PAUSE_MS; ; pauseMs = Math.min(pauseMs * 2, COMMIT_RETRY_MAX_PAUSE_MS)) {
    try {
      await session.commitTransaction();
      return;
    } catch (error) {
      const left = deadline - Date.now();
      if (!isUnknownCommit(error) || left <= 0) throw error;
      await setTimeout(Math.min(pauseMs, left));
    }
  }
}

/**
 * Runs `work` as one transaction of a new session, abandoned as one call after `limitMs` (see
 * `withCallLimit`): its statements, its commit and the commit's resends share the limit, since none of them
 * waits for a majority but the commit. Each statement takes `signal` in its options, so one written to a
 * connection the server has just closed is ended with its connection. The session's `commitTransaction`,
 * `abortTransaction` and `endSession` take no signal (driver 7.x); the limit still ends the wait for them,
 * and ending the session afterwards is a call of its own under the same limit. A transaction abandoned so
 * may still be committed.
 */
export async function runTransaction<T>(
  client: MongoClient,
  writeConcern: WriteConcernSettings,
  limitMs: number,
  work: (session: ClientSession, signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const session = client.startSession();
  try {
    return await withCallLimit(limitMs, (signal) =>
      session.withTransaction(() => work(session, signal), transactionOptions(writeConcern)),
    );
  } finally {
    await withCallLimit(limitMs, () => session.endSession()).catch((error: unknown) => {
      // The answer does not wait for a session that cannot end: the transaction's outcome is already known.
      if (!(error instanceof CallAbandoned)) throw error;
    });
  }
}
