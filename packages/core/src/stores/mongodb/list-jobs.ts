import type { Collection, Filter } from 'mongodb';
import { type JobRecord, type ListFilter, STORED_STATES } from '../../engine/store.ts';
import { keptStates, NOT_STARTED } from '../shared/not-started.ts';
import { type JobDocument, stringOrNull, toJobRecord } from './documents.ts';

/** `Store.listJobs`: the jobs matching `filter`, ordered by id (descending with `newestFirst`). */
export async function listJobs(jobs: Collection<JobDocument>, filter: ListFilter): Promise<JobRecord[]> {
  const limit = Math.floor(filter.limit);
  if (!(limit > 0)) return [];
  const query: Filter<JobDocument> = {};
  const name = stringOrNull(filter.name);
  if (filter.name !== undefined) query.name = name ?? { $in: [] };
  // Every state when none is named, so a listing by name walks `list_by_name` in id order, one run per state.
  const states = STORED_STATES.filter((s) => filter.states?.includes(s) ?? filter.name !== undefined);
  if (filter.states !== undefined || filter.name !== undefined) query.state = { $in: states.flatMap(keptStates) };
  if (filter.version !== undefined) query.version = Number(filter.version);
  if (filter.group !== undefined) query.group = String(filter.group);
  if (filter.idempotencyKey !== undefined) query.idempotencyKey = String(filter.idempotencyKey);
  if (filter.debounceKey !== undefined) query.debounceKey = String(filter.debounceKey);
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
  const hint = query.state === undefined && filter.ids === undefined ? { hint: { _id: 1 } } : {};
  const docs = await jobs.find(query, { sort: { _id: filter.newestFirst ? -1 : 1 }, limit, ...hint }).toArray();
  return docs.map((doc) => toJobRecord(doc as JobDocument));
}
