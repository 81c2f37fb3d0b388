/** The schedules kept in the store and the last run of each schedule: see `ScheduleStore`. */
import type { ScheduleRun, ScheduleStore, StoredSchedule } from '../../engine/store.ts';
import type { SqlQueryable } from './connection.ts';
import { toJsonText } from './records.ts';

/** A `schedules` row: a `StoredSchedule`, with `updatedAt` under its column's name. */
type ScheduleRow = Omit<StoredSchedule, 'updatedAt'> & { updated_at: Date };

interface RunRow {
  key: string;
  job_id: string;
  run_at: Date;
}

/** The `ScheduleStore` operations over one schema (`quotedSchema`, already escaped). */
export function postgresSchedules(db: SqlQueryable, quotedSchema: string): ScheduleStore {
  const schedules = `${quotedSchema}.schedules`;
  const runs = `${quotedSchema}.schedule_runs`;
  return {
    async upsertSchedule(schedule: StoredSchedule): Promise<void> {
      await db.query(
        `INSERT INTO ${schedules} (key, cron, timezone, name, version, payload, options, updated_at)
VALUES ($1, $2, $3, $4, $5::int, $6::jsonb, $7::jsonb, $8::timestamptz)
ON CONFLICT (key) DO UPDATE SET cron = excluded.cron, timezone = excluded.timezone, name = excluded.name,
  version = excluded.version, payload = excluded.payload, options = excluded.options, updated_at = excluded.updated_at`,
        [
          schedule.key,
          schedule.cron,
          schedule.timezone,
          schedule.name,
          schedule.version,
          toJsonText(schedule.payload ?? null),
          schedule.options === null ? null : toJsonText(schedule.options),
          schedule.updatedAt,
        ],
      );
    },

    async removeSchedule(key: string): Promise<boolean> {
      const rows = await db.query(`DELETE FROM ${schedules} WHERE key = $1 RETURNING key`, [key]);
      return rows.length > 0;
    },

    async listSchedules(): Promise<StoredSchedule[]> {
      const rows = await db.query<ScheduleRow>(
        `SELECT key, cron, timezone, name, version, payload, options, updated_at FROM ${schedules} ORDER BY key`,
      );
      return rows.map((row) => ({
        key: row.key,
        cron: row.cron,
        timezone: row.timezone,
        name: row.name,
        version: row.version,
        payload: row.payload,
        options: row.options,
        updatedAt: row.updated_at,
      }));
    },

    async recordScheduleRun(run: ScheduleRun): Promise<void> {
      await db.query(
        `INSERT INTO ${runs} AS r (key, job_id, run_at) VALUES ($1, $2, $3::timestamptz)
ON CONFLICT (key) DO UPDATE SET job_id = excluded.job_id, run_at = excluded.run_at WHERE r.run_at < excluded.run_at`,
        [run.key, run.jobId, run.at],
      );
    },

    async listScheduleRuns(keys: readonly string[]): Promise<ScheduleRun[]> {
      if (keys.length === 0) return [];
      const rows = await db.query<RunRow>(
        `SELECT key, job_id, run_at FROM ${runs} WHERE key = ANY($1::text[]) ORDER BY key`,
        [keys],
      );
      return rows.map((row) => ({ key: row.key, jobId: row.job_id, at: row.run_at }));
    },
  };
}
