import type { Collection } from 'mongodb';
import type { JobCount } from '../../engine/store.ts';
import { JOB_STATES } from '../../jobs.ts';
import { NOT_STARTED } from '../shared/not-started.ts';
import type { JobDocument } from './documents.ts';

/** `Store.countJobs`: job counts by name, version and user-visible state at `now`, in one aggregation. */
export async function countJobs(jobs: Collection<JobDocument>, now: Date): Promise<JobCount[]> {
  const groups = await jobs
    .aggregate<{ _id: { name: string; version: number; state: JobCount['state'] }; count: number }>([
      {
        $group: {
          _id: {
            name: '$name',
            version: '$version',
            state: {
              $cond: [
                { $in: ['$state', NOT_STARTED] },
                { $cond: [{ $gt: ['$runAt', now] }, 'scheduled', 'ready'] },
                '$state',
              ],
            },
          },
          count: { $sum: 1 },
        },
      },
    ])
    .toArray();
  const counts = groups.map(
    ({ _id, count }): JobCount => ({
      name: _id.name,
      version: _id.version,
      state: _id.state,
      count,
    }),
  );
  const rank = (state: string) => (JOB_STATES as readonly string[]).indexOf(state);
  return counts.sort((a, b) => a.name.localeCompare(b.name) || a.version - b.version || rank(a.state) - rank(b.state));
}
