import type { FindOneAndUpdateOptions, UpdateOptions } from 'mongodb';
import type { LeaseRef } from '../../engine/store.ts';
import type { JobError } from '../../jobs.ts';
import { notStartedState } from '../shared/not-started.ts';
import { type Abortable, withCallLimit } from './call-limit.ts';
import { completeHeldChildren, endHeldChild, NOT_A_CHILD } from './end-children.ts';
import { DocumentsTooLarge, updateEachHeld } from './held-updates.ts';
import { ENDED_LEASE, heldBy } from './leases.ts';
import { refuseOverfullJobs, refuseUnstorableResults } from './oversized-results.ts';
import { appendedErrors, cleanError, type JobDocument, literal, orderKeyExpression, toJson } from './records.ts';
import type { FlowTarget } from './settle-parents.ts';

/**
 * What a held job's owner does to it: complete, give back, fail, snooze or extend it, each fenced by its lease
 * (`heldBy`). Every time here is the database's (the store moves the engine's times onto its clock, see
 * `DatabaseClock`). An operation that can end a child in a flow runs the parent's settling in a transaction
 * (end-children.ts) and says which parents it made ready (`ready`), for the store to announce once committed.
 */

/** `Store.completeJobs` at `at`: the ids completed, and the parents their completions made ready. */
export async function completeHeldJobs(
  target: FlowTarget,
  items: readonly (LeaseRef & { result: unknown })[],
  at: Date,
): Promise<{ ids: string[]; ready: readonly string[] }> {
  const { jobs, limitMs } = target;
  await refuseUnstorableResults(jobs, items, at, limitMs);
  try {
    // The token stays, so a repeat of this ack is recognised (see `JobRecord.leaseToken`). Jobs without a
    // parent only: a child completes with its parent's settling, in a transaction.
    const ids = await updateEachHeld(
      jobs,
      items,
      at,
      (item) => ({
        $set: { leaseExpiresAt: null, state: 'completed', result: toJson(item.result), finishedAt: at, updatedAt: at },
      }),
      limitMs,
      NOT_A_CHILD,
    );
    if (ids.length === items.length) return { ids, ready: [] };
    const done = new Set(ids);
    const children = items
      .filter((item) => !done.has(item.id))
      .map((item) => ({ id: item.id, leaseToken: item.leaseToken, result: toJson(item.result) }));
    const completed = await completeHeldChildren(target, children, at);
    return { ids: [...ids, ...completed.ids], ready: completed.ready };
  } catch (error) {
    if (error instanceof DocumentsTooLarge) {
      return { ids: await refuseOverfullJobs(jobs, error.leases, at, limitMs), ready: [] };
    }
    throw error;
  }
}

/** `Store.releaseJobs` at `at`: each held job waits again, its attempt not counted; the ids given back. */
export function releaseHeldJobs(target: FlowTarget, leases: readonly LeaseRef[], at: Date): Promise<string[]> {
  return updateEachHeld(
    target.jobs,
    leases,
    at,
    () => ({ $set: { ...ENDED_LEASE, state: 'waiting', workerId: null, updatedAt: at }, $inc: { attempts: -1 } }),
    target.limitMs,
  );
}

/**
 * `Store.failJob` at `at`: the attempt fails with `error`, and the job waits for `retryAt` or, with `null`, is
 * dead. Whether the lease held, and the parents a dead child made ready.
 */
export async function failHeldJob(
  target: FlowTarget,
  lease: LeaseRef,
  failure: { error: JobError; retryAt: Date | null },
  at: Date,
): Promise<{ held: boolean; ready: readonly string[] }> {
  const { retryAt } = failure;
  const filter = heldBy(lease, at);
  if (!filter) return { held: false, ready: [] };
  const error = literal(cleanError(failure.error));
  const ending =
    retryAt === null
      ? { state: 'dead', finishedAt: at }
      : { state: notStartedState(retryAt, at), runAt: retryAt, orderKey: orderKeyExpression(retryAt), workerId: null };
  const ended = { ...ENDED_LEASE, ...ending, error, errors: appendedErrors(error), updatedAt: at };
  // A job going dead matches only without a parent: a child dies with its parent's settling.
  const plain = retryAt === null ? { ...filter, ...NOT_A_CHILD } : filter;
  const { matchedCount } = await withCallLimit(target.limitMs, (signal) => {
    const options: Abortable<UpdateOptions> = { signal };
    return target.jobs.updateOne(plain, [{ $set: ended }], options);
  });
  if (matchedCount === 1 || retryAt !== null) return { held: matchedCount === 1, ready: [] };
  const died = { end: 'dead' as const, error: { ...failure.error, at } };
  return endHeldChild(target, filter, ended, died, at);
}

/** `Store.snoozeJob` at `at`: the job waits until `runsAt`, its attempt not counted; whether the lease held. */
export async function snoozeHeldJob(target: FlowTarget, lease: LeaseRef, runsAt: Date, at: Date): Promise<boolean> {
  const filter = heldBy(lease, at);
  if (!filter) return false;
  const waiting = {
    ...ENDED_LEASE,
    state: notStartedState(runsAt, at),
    runAt: runsAt,
    orderKey: orderKeyExpression(runsAt),
    attempts: { $subtract: ['$attempts', 1] },
    workerId: null,
    // It has started: it gives up its debounce key, and a later debounce of the key makes a new job.
    debounceKey: null,
    updatedAt: at,
  };
  const { matchedCount } = await withCallLimit(target.limitMs, (signal) => {
    const options: Abortable<UpdateOptions> = { signal };
    return target.jobs.updateOne(filter, [{ $set: waiting }], options);
  });
  return matchedCount === 1;
}

/**
 * `Store.extendLease` at `at`: the lease runs until `asked`, no later than the attempt's deadline when it has
 * one. The expiry stored, or `null` when the lease did not hold.
 */
export async function extendHeldLease(
  target: FlowTarget,
  lease: LeaseRef,
  asked: Date,
  at: Date,
): Promise<Date | null> {
  const filter = heldBy(lease, at);
  if (!filter) return null;
  const update = [
    { $set: { leaseExpiresAt: { $min: [asked, { $ifNull: ['$attemptDeadline', asked] }] }, updatedAt: at } },
  ];
  const doc = await withCallLimit(target.limitMs, (signal) => {
    const options: Abortable<FindOneAndUpdateOptions> = {
      projection: { _id: 0, leaseExpiresAt: 1 },
      returnDocument: 'after',
      signal,
    };
    return target.jobs.findOneAndUpdate(filter, update, options);
  });
  return doc?.leaseExpiresAt ?? null;
}

/** A fenced update of one held job's `fields` at `at` (progress, payload); whether the lease held. */
export async function updateHeldJob(
  target: FlowTarget,
  lease: LeaseRef,
  fields: Partial<JobDocument>,
  at: Date,
): Promise<boolean> {
  const filter = heldBy(lease, at);
  if (!filter) return false;
  const update = { $set: { ...fields, updatedAt: at } };
  const { matchedCount } = await withCallLimit(target.limitMs, (signal) => {
    const options: Abortable<UpdateOptions> = { signal };
    return target.jobs.updateOne(filter, update, options);
  });
  return matchedCount === 1;
}
