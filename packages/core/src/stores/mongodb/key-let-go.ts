import type { Filter } from 'mongodb';
import { FINISHED_STATES } from '../../jobs.ts';
import type { JobDocument } from './records.ts';

/**
 * The condition under which a job holding an idempotency key has let go of it by `at` (see `keyExpired`): its
 * TTL ended at or before then, or it held the key until it finished, and has. The update that clears the key
 * on its holder adds it, so a holder that changed since it was read keeps its key.
 */
export function keyLetGo(at: Date): Filter<JobDocument> {
  return {
    $or: [
      { idempotencyExpiresAt: { $lte: at } },
      { idempotencyUntilFinished: true, state: { $in: [...FINISHED_STATES] } },
    ],
  };
}
