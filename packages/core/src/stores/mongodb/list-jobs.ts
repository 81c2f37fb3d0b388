import type { Collection, DistinctOptions, Filter } from 'mongodb';
import { type JobRecord, type ListFilter, STORED_STATES } from '../../engine/store.ts';
import { keptStates, NOT_STARTED } from '../shared/not-started.ts';
import { type Abortable, withCallLimit } from './call-limit.ts';
import { DEBOUNCE_INDEX, GROUP_LIST_INDEX, IDEMPOTENCY_INDEX } from './indexes.ts';
import { type JobDocument, projectionFor, stringOrNull, toJobRecord } from './records.ts';

/**
 * `Store.listJobs`: the jobs matching `filter`, ordered by id (descending with `newestFirst`).
 *
 * A type or a state is read through `list_by_name` `(name, state, _id)` or `list_by_state` `(state, _id)`, and a
 * group without a type through `list_by_group` `(group, state, _id)`, each state's run (and each type's, with a
 * type) merged by the server in id order, so a page reads at most a page per run. An idempotency or debounce
 * key is looked up through its `(name, key)` index, one point per type: a filter without a type reads the types
 * first (`distinct`, one index probe per type on the server).
 */
export async function listJobs(
  jobs: Collection<JobDocument>,
  filter: ListFilter,
  limitMs: number,
): Promise<JobRecord[]> {
  const limit = Math.floor(filter.limit);
  if (!(limit > 0)) return [];
  const query: Filter<JobDocument> = {};
  const name = stringOrNull(filter.name);
  if (filter.name !== undefined) query.name = name ?? { $in: [] };
  const keyIndex = filter.ids === undefined ? keyIndexOf(filter) : undefined;
  if (keyIndex !== undefined && filter.name === undefined) {
    const names = await withCallLimit(limitMs, (signal) => {
      const options: Abortable<DistinctOptions> = { signal };
      return jobs.distinct('name', {}, options);
    });
    query.name = { $in: names };
  }
  const groupIndex =
    filter.group !== undefined && filter.name === undefined && filter.ids === undefined && keyIndex === undefined
      ? GROUP_LIST_INDEX
      : undefined;
  // Every state when none is named, so a listing by name or group walks its index in id order, one run per state.
  const byRuns = (filter.name !== undefined && keyIndex === undefined) || groupIndex !== undefined;
  const states = STORED_STATES.filter((s) => filter.states?.includes(s) ?? byRuns);
  if (filter.states !== undefined || byRuns) query.state = { $in: states.flatMap(keptStates) };
  if (filter.version !== undefined) query.version = Number(filter.version);
  // With the type the group index's partial filter asks for, so the server may read it.
  if (filter.group !== undefined) query.group = { $eq: String(filter.group), $type: 'string' };
  // With the type the key's partial index asks for, so the server may read it.
  if (filter.idempotencyKey !== undefined)
    query.idempotencyKey = { $eq: String(filter.idempotencyKey), $type: 'string' };
  if (filter.debounceKey !== undefined) query.debounceKey = { $eq: String(filter.debounceKey), $type: 'string' };
  const ids = filter.ids === undefined ? {} : { $in: filter.ids.map(String) };
  const after = filter.afterId === undefined ? {} : { $gt: String(filter.afterId) };
  const before = filter.beforeId === undefined ? {} : { $lt: String(filter.beforeId) };
  if (filter.ids !== undefined || filter.afterId !== undefined || filter.beforeId !== undefined) {
    query._id = { ...ids, ...after, ...before };
  }
  if (filter.due) {
    const due = filter.due.ready ? { $lte: filter.due.now } : { $gt: filter.due.now };
    const waitingOnly = filter.states?.length === 1 && filter.states[0] === 'waiting';
    if (waitingOnly) query.runAt = due;
    else query.$or = [{ state: { $nin: NOT_STARTED } }, { runAt: due }];
  }
  // With neither name nor state, the `_id` index gives the order and the page ends after `limit` matches.
  const hint =
    keyIndex ?? groupIndex ?? (query.state === undefined && filter.ids === undefined ? { _id: 1 } : undefined);
  const sort = { _id: filter.newestFirst ? -1 : 1 } as const;
  const docs = await withCallLimit(limitMs, (signal) =>
    jobs
      .find(query, { sort, limit, projection: projectionFor(filter), ...(hint === undefined ? {} : { hint }), signal })
      .toArray(),
  );
  return docs.map((doc) => toJobRecord(doc as JobDocument));
}

/** The index of the filter's idempotency or debounce key, which holds each key once per type. */
function keyIndexOf(filter: ListFilter): string | undefined {
  if (filter.idempotencyKey !== undefined) return IDEMPOTENCY_INDEX;
  return filter.debounceKey === undefined ? undefined : DEBOUNCE_INDEX;
}
