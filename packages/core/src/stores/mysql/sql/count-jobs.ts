/**
 * Count jobs: `Store.countJobs`, one grouped `SELECT`: the jobs by name, version and the state a user sees at
 * `now` (a waiting job not yet due is `scheduled`, a due one `ready`). Takes no locks.
 */
import type { JobCount } from '../../../engine/store.ts';
import type { JobState } from '../../../jobs.ts';
import { type Queryable, selectRows } from '../connection.ts';
import { NOT_STARTED_SQL, sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';

export async function countJobs(db: Queryable, t: Tables, now: Date): Promise<JobCount[]> {
  const rows = await selectRows(
    db,
    `SELECT name, version,
           CASE WHEN state NOT IN ${NOT_STARTED_SQL} THEN state WHEN run_at > ? THEN 'scheduled' ELSE 'ready' END AS visible_state,
           COUNT(*) AS count
         FROM ${t.jobs} GROUP BY name, version, visible_state ORDER BY name, version, visible_state`,
    [sqlDate(now)],
  );
  return rows.map((row) => ({
    name: String(row.name),
    version: Number(row.version),
    state: String(row.visible_state) as JobState,
    count: Number(row.count),
  }));
}
