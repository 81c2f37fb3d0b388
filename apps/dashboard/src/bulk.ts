import { isFinishedState, type JobStatus, MAX_BATCH_SIZE } from '@workq/core';
import type { Api } from './api.ts';
import { type PendingAction, plural } from './components/confirm.tsx';

/** The one-job and every-matching-job actions: which jobs each applies to, and how it runs. */
export interface BulkTarget {
  /** What the jobs are, for the question: "dead jobs of imageConvert". */
  describe: string;
  jobs: readonly Pick<JobStatus, 'id' | 'state'>[];
  /** Set when the filter is exactly "the dead jobs of this type": retried in one call, whatever their number. */
  allDeadOf?: string;
}

const cancellable = (state: string) => state === 'scheduled' || state === 'ready' || state === 'active';

/** The actions that apply to some of `target`'s jobs, each with a confirmation saying how many. */
export function bulkActions(api: Api, target: BulkTarget): { label: string; action: PendingAction }[] {
  const dead = target.jobs.filter((job) => job.state === 'dead').map((job) => job.id);
  const open = target.jobs.filter((job) => cancellable(job.state)).map((job) => job.id);
  const finished = target.jobs.filter((job) => isFinishedState(job.state)).map((job) => job.id);
  const actions: { label: string; action: PendingAction }[] = [];
  if (dead.length > 0) {
    actions.push({
      label: `Retry ${dead.length === 1 ? '' : 'all '}${plural(dead.length, 'dead job')}`,
      action: {
        question: `Retry ${plural(dead.length, 'dead job')} (${target.describe})? Each starts again with fresh attempts.`,
        confirmLabel: `Retry ${plural(dead.length, 'job')}`,
        run: async () => {
          const name = target.allDeadOf;
          const retried = name
            ? await api.admin.retryDead.mutate({ name })
            : await inChunks(dead, (ids) => api.admin.retryDead.mutate({ ids }));
          return `${plural(retried, 'job')} retried.`;
        },
      },
    });
  }
  if (open.length > 0) {
    actions.push({
      label: `Cancel ${plural(open.length, 'job')}`,
      action: {
        question: `Cancel ${plural(open.length, 'job')} (${target.describe}) that have not finished? Running ones are told to stop.`,
        confirmLabel: `Cancel ${plural(open.length, 'job')}`,
        run: async () => {
          let cancelled = 0;
          for (const id of open) if (await api.jobs.cancel.mutate({ id })) cancelled++;
          return `${plural(cancelled, 'job')} cancelled.`;
        },
      },
    });
  }
  if (finished.length > 0) {
    actions.push({
      label: `Replay ${plural(finished.length, 'job')}`,
      action: {
        question: `Replay ${plural(finished.length, 'finished job')} (${target.describe})? Each is enqueued again as a new job with the same payload.`,
        confirmLabel: `Replay ${plural(finished.length, 'job')}`,
        run: async () => {
          for (const id of finished) await api.admin.replay.mutate({ id });
          return `${plural(finished.length, 'job')} enqueued again.`;
        },
      },
    });
  }
  return actions;
}

async function inChunks(ids: readonly string[], run: (chunk: string[]) => Promise<number>): Promise<number> {
  let total = 0;
  for (let at = 0; at < ids.length; at += MAX_BATCH_SIZE) total += await run(ids.slice(at, at + MAX_BATCH_SIZE));
  return total;
}
