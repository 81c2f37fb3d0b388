import type { TransactionOptions, WriteConcernSettings } from 'mongodb';

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
