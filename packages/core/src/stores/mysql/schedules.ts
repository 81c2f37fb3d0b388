/** The schedules kept in the store and the last run of each schedule: see `ScheduleStore`. */
import type { ScheduleRun, ScheduleStore, StoredSchedule } from '../../engine/store.ts';
import { execute, type Queryable, selectRows, upsertRow } from './connection.ts';
import { readDate, sqlDate, writeJson } from './records.ts';
import type { Tables } from './tables.ts';

const SCHEDULE_SELECT = 'schedule_key, cron, timezone, name, version, payload, options, updated_at';

function parseJson(value: unknown): unknown {
  return value === null || value === undefined ? null : JSON.parse(String(value));
}

/** The `ScheduleStore` operations over the store's tables. */
export function mysqlSchedules(db: Queryable, t: Tables): ScheduleStore {
  return {
    async upsertSchedule(schedule: StoredSchedule): Promise<void> {
      await upsertRow(db, t.schedules, {
        schedule_key: schedule.key,
        cron: schedule.cron,
        timezone: schedule.timezone,
        name: schedule.name,
        version: schedule.version,
        payload: writeJson(schedule.payload),
        options: schedule.options === null ? null : writeJson(schedule.options),
        updated_at: sqlDate(schedule.updatedAt),
      });
    },

    async removeSchedule(key: string): Promise<boolean> {
      const result = await execute(db, `DELETE FROM ${t.schedules} WHERE schedule_key = ?`, [key]);
      return result.affectedRows > 0;
    },

    async listSchedules(): Promise<StoredSchedule[]> {
      const rows = await selectRows(db, `SELECT ${SCHEDULE_SELECT} FROM ${t.schedules} ORDER BY schedule_key`);
      return rows.map((row) => ({
        key: String(row.schedule_key),
        cron: String(row.cron),
        timezone: String(row.timezone),
        name: String(row.name),
        version: row.version === null ? null : Number(row.version),
        payload: parseJson(row.payload),
        options: parseJson(row.options) as Record<string, unknown> | null,
        updatedAt: readDate(row.updated_at),
      }));
    },

    async recordScheduleRun(run: ScheduleRun): Promise<void> {
      // The IF keeps a later run: VALUES() reads the row offered, the bare column the row kept.
      await execute(
        db,
        `INSERT INTO ${t.scheduleRuns} (schedule_key, job_id, run_at) VALUES (?, ?, ?)
         ON DUPLICATE KEY UPDATE job_id = IF(run_at < VALUES(run_at), VALUES(job_id), job_id),
           run_at = IF(run_at < VALUES(run_at), VALUES(run_at), run_at)`,
        [run.key, run.jobId, sqlDate(run.at)],
      );
    },

    async listScheduleRuns(keys: readonly string[]): Promise<ScheduleRun[]> {
      if (keys.length === 0) return [];
      const rows = await selectRows(
        db,
        `SELECT schedule_key, job_id, run_at FROM ${t.scheduleRuns} WHERE schedule_key IN (?) ORDER BY schedule_key`,
        [keys],
      );
      return rows.map((row) => ({
        key: String(row.schedule_key),
        jobId: String(row.job_id),
        at: readDate(row.run_at),
      }));
    },
  };
}
