import type { JobState } from '@workq/core';
import type { QueueApi } from '@workq/sdk';
import type { PendingAction } from './components/confirm.tsx';
import { relativeTime } from './components/format.tsx';

/** What a job page knows of its job that decides which of these actions it offers. */
interface ShownJob {
  id: string;
  name: string;
  state: JobState;
  runAt: Date;
  attempts: number;
  idempotencyKey?: string | undefined;
  parentId?: string | undefined;
  childCount?: number | undefined;
}

/**
 * The actions on one job beside retry, cancel and replay (see `chosenActions`), each offered only in the state
 * it starts from: run a scheduled job now, run a completed job again in place, put a cancelled job that never
 * started back, and remove a waiting job by its idempotency key. Jobs of a flow get none but run now: the
 * server refuses the others there, saying to replay.
 */
export function singleJobActions(api: QueueApi, job: ShownJob): { label: string; action: PendingAction }[] {
  const inFlow = job.parentId !== undefined || (job.childCount ?? 0) > 0;
  const actions: { label: string; action: PendingAction }[] = [];
  if (job.state === 'scheduled') actions.push({ label: 'Run now', action: runNow(api, job) });
  if (inFlow) return actions;
  if (job.state === 'completed') actions.push({ label: 'Retry', action: rerun(api, job) });
  if (job.state === 'cancelled' && job.attempts === 0) actions.push({ label: 'Restore', action: restore(api, job) });
  const waiting = job.state === 'scheduled' || job.state === 'ready';
  if (waiting && job.idempotencyKey) {
    actions.push({ label: 'Remove', action: removeByKey(api, job.name, job.id, job.idempotencyKey) });
  }
  return actions;
}

/** Runs a scheduled job (delayed, or waiting out a retry's backoff) at once. */
function runNow(api: QueueApi, job: ShownJob): PendingAction {
  const retrying =
    job.attempts > 0 ? ` It keeps its ${job.attempts} attempt${job.attempts === 1 ? '' : 's'} so far.` : '';
  return {
    question: `Run job ${job.id} now instead of ${relativeTime(job.runAt)}?${retrying}`,
    confirmLabel: 'Run now',
    run: async () =>
      (await api.admin.promote.mutate({ id: job.id }))
        ? 'The job is ready: a worker takes it next.'
        : 'The job was no longer scheduled: it had started or finished.',
  };
}

/** Runs a completed job again under its id, its result cleared (`admin.retry`). */
function rerun(api: QueueApi, job: ShownJob): PendingAction {
  return backToWaiting(job, (input) => api.admin.retry.mutate(input), {
    question: `Run job ${job.id} again? It keeps its id and payload; its result is cleared and it starts with fresh attempts.`,
    confirmLabel: 'Retry',
    done: 'The job is ready again: a worker takes it next.',
  });
}

/** Puts a cancelled job that never started back to waiting, at its own run time (`admin.restore`). */
function restore(api: QueueApi, job: ShownJob): PendingAction {
  return backToWaiting(job, (input) => api.admin.restore.mutate(input), {
    question: `Put job ${job.id} back? It never started, so it waits again to run at its own time (${relativeTime(job.runAt)}).`,
    confirmLabel: 'Restore',
    done: 'The job is waiting again.',
  });
}

/**
 * An action that puts a job that ended back to waiting under its id through `move`, which resolves to whether
 * it moved the job: it did not when the job was waiting or running already.
 */
function backToWaiting(
  job: ShownJob,
  move: (input: { id: string }) => Promise<unknown>,
  wording: { question: string; confirmLabel: string; done: string },
): PendingAction {
  return {
    question: wording.question,
    confirmLabel: wording.confirmLabel,
    run: async () => ((await move({ id: job.id })) ? wording.done : 'The job was waiting or running already.'),
  };
}

/** Deletes the waiting job that holds an idempotency key, freeing the key (`admin.removeByKey`). */
function removeByKey(api: QueueApi, name: string, id: string, key: string): PendingAction {
  return {
    question: `Remove job ${id} for good? It has not started; the key "${key}" is free for a new ${name} job once it is gone.`,
    confirmLabel: 'Remove',
    thenGoTo: `/jobs?name=${encodeURIComponent(name)}`,
    run: async () =>
      (await api.admin.removeByKey.mutate({ name, key }))
        ? `Job removed; the key "${key}" is free.`
        : 'The job was not removed: it had started or finished.',
  };
}
