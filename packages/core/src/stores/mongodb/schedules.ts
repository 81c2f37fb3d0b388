/** The schedules kept in the store and the last run of each schedule: see `ScheduleStore`. */
import type { Collection, DeleteOptions, UpdateOptions } from 'mongodb';
import type { ScheduleRun, ScheduleStore, StoredSchedule } from '../../engine/store.ts';
import { type Abortable, withCallLimit } from './call-limit.ts';
import { fromJson, literal, type ScheduleDocument, type ScheduleRunDocument, stringOrNull, toJson } from './records.ts';

/** The `ScheduleStore` operations over the store's two schedule collections. */
export function mongoSchedules(
  schedules: Collection<ScheduleDocument>,
  runs: Collection<ScheduleRunDocument>,
  limitMs: number,
): ScheduleStore {
  return {
    async upsertSchedule(schedule: StoredSchedule): Promise<void> {
      const document: Omit<ScheduleDocument, '_id'> = {
        cron: String(schedule.cron),
        timezone: String(schedule.timezone),
        name: String(schedule.name),
        version: schedule.version,
        payload: toJson(schedule.payload),
        options: schedule.options === null ? null : toJson(schedule.options),
        updatedAt: schedule.updatedAt,
      };
      await withCallLimit(limitMs, (signal) => {
        const options: Abortable<UpdateOptions> = { upsert: true, signal };
        return schedules.updateOne({ _id: String(schedule.key) }, { $set: document }, options);
      });
    },

    async removeSchedule(key: string): Promise<boolean> {
      const id = stringOrNull(key);
      if (id === null) return false;
      const { deletedCount } = await withCallLimit(limitMs, (signal) => {
        const options: Abortable<DeleteOptions> = { signal };
        return schedules.deleteMany({ _id: id }, options);
      });
      return deletedCount > 0;
    },

    async listSchedules(): Promise<StoredSchedule[]> {
      const docs = await withCallLimit(limitMs, (signal) => schedules.find({}, { sort: { _id: 1 }, signal }).toArray());
      return docs.map((doc) => ({
        key: doc._id,
        cron: doc.cron,
        timezone: doc.timezone,
        name: doc.name,
        version: doc.version ?? null,
        payload: fromJson(doc.payload),
        options: fromJson(doc.options) as Record<string, unknown> | null,
        updatedAt: doc.updatedAt,
      }));
    },

    async recordScheduleRun(run: ScheduleRun): Promise<void> {
      // One pipeline update: both fields are computed from the document as it was, so the job id follows
      // only a later time. A new document has no `at`: it counts as the epoch.
      const later = { $lt: [{ $ifNull: ['$at', literal(new Date(0))] }, literal(run.at)] };
      const latest = {
        jobId: { $cond: [later, literal(String(run.jobId)), '$jobId'] },
        at: { $cond: [later, literal(run.at), '$at'] },
      };
      await withCallLimit(limitMs, (signal) => {
        const options: Abortable<UpdateOptions> = { upsert: true, signal };
        return runs.updateOne({ _id: String(run.key) }, [{ $set: latest }], options);
      });
    },

    async listScheduleRuns(keys: readonly string[]): Promise<ScheduleRun[]> {
      const ids = keys.filter((key) => typeof key === 'string');
      if (ids.length === 0) return [];
      const docs = await withCallLimit(limitMs, (signal) =>
        runs.find({ _id: { $in: ids } }, { sort: { _id: 1 }, signal }).toArray(),
      );
      return docs.map((doc) => ({ key: doc._id, jobId: doc.jobId, at: doc.at }));
    },
  };
}
