import type { ClaimedJob } from '@workq/queue-server/router';
import type { Logger } from '../logger.ts';
import type { AttemptError } from './attempt-error.ts';

/** What the server answered to a failed attempt: the job's state after it, and when it runs again. */
export interface FailAnswer {
  state: string;
  runAt: Date;
}

/**
 * Logs one failed attempt: the job, the attempt, the error with the handler's
 * stack, and what follows (another attempt, when; or the job is dead). Without
 * `answer` the failure could not be recorded, and the job runs again once its
 * lease runs out.
 */
export function logAttempt(
  logger: Logger,
  job: ClaimedJob,
  described: AttemptError,
  thrown: unknown,
  answer: FailAnswer | undefined,
): void {
  const error = described.errorName ? `${described.errorName}: ${described.message}` : described.message;
  const which = `Job ${job.id} ("${job.name}") failed on attempt ${job.attempt} of ${job.maxAttempts}: ${error}`;
  const fields = { jobId: job.id, name: job.name, attempt: job.attempt, error: thrown };
  if (answer === undefined) {
    logger.warn(`${which} — the failure could not be recorded; the job runs again once its lease runs out.`, fields);
  } else if (answer.state === 'dead') {
    logger.error(`${which} — the job is dead, not retried.`, fields);
  } else {
    logger.warn(`${which} — it runs again at ${answer.runAt.toISOString()}.`, fields);
  }
}
