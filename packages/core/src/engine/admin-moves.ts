import { WorkqError } from '../errors.ts';
import type { JobRecord } from './store-records.ts';

/** An operator's move on one job that changed nothing: `admin.retry` or `admin.restore`. */
export type RefusedMove = 'retry' | 'restore';

const inFlow = (job: JobRecord) => job.parentId != null || (job.childCount ?? 0) > 0;

/**
 * Why `move` left `job` (read after the move's atomic step changed nothing) as it is: `NOT_FOUND` when there
 * is no such job; `CONFLICT`, saying what to do instead, when the move can never apply to the job as it is
 * (finished in a state the move does not start from, or in a flow); `false` when the job is live (waiting,
 * scheduled, running or waiting for its children), so there is nothing to do, as a second operator finds
 * after the first one's move.
 */
export function refusedMove(job: JobRecord | null, id: string, move: RefusedMove): false {
  if (!job)
    throw new WorkqError('NOT_FOUND', `No job with id ${id} to ${move} (it may have been pruned from history).`);
  const replay = 'admin.replay enqueues it again as a new job';
  if (move === 'retry' && job.state === 'cancelled') {
    throw new WorkqError(
      'CONFLICT',
      `Job ${id} was cancelled: admin.restore puts it back if it never started, or ${replay}.`,
    );
  }
  if (move === 'restore' && (job.state === 'completed' || job.state === 'dead')) {
    throw new WorkqError('CONFLICT', `Job ${id} is ${job.state}, not cancelled: admin.retry runs it again in place.`);
  }
  const startsFrom = move === 'retry' ? job.state === 'completed' || job.state === 'dead' : job.state === 'cancelled';
  if (startsFrom && inFlow(job)) {
    throw new WorkqError('CONFLICT', `Job ${id} is part of a flow, which ${move} would break: ${replay}.`);
  }
  if (move === 'restore' && job.state === 'cancelled') {
    throw new WorkqError(
      'CONFLICT',
      `Job ${id} was cancelled after it started (${job.attempts} attempt${job.attempts === 1 ? '' : 's'}), so it cannot go back to waiting: ${replay}.`,
    );
  }
  return false;
}
