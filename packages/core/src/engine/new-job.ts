import { isValidJobName } from '../contract/define-catalog.ts';
import { WorkqError } from '../errors.ts';
import { checkJobId, newJobId } from '../job-ids.ts';
import type { DebounceMode, JobStatus } from '../jobs.ts';
import { checkTimeoutMs } from './input-checks.ts';
import {
  checkDeduplication,
  checkGroup,
  checkIdempotencyKey,
  checkTraceContext,
  type EnqueueOptions,
  type ResolvedJobOptions,
  resolveDeduplication,
  resolveJobOptions,
  resolveRunAt,
} from './options.ts';
import type { NewJob } from './store.ts';

/** One job to enqueue. The payload must already be valid for `name` at `version`. */
export interface EnqueueInput {
  name: string;
  version: number;
  payload: unknown;
  options?: EnqueueOptions;
  /**
   * This job's idempotency key, in place of `options.idempotencyKey`: the jobs of a batch can then share one
   * options object (resolved once for all of them) and still each have a key of their own.
   */
  idempotencyKey?: string;
  /** This job's own id, in place of `options.id`, for the same reason. */
  id?: string;
}

export interface EnqueueResult {
  id: string;
  /** `false` when an idempotency key or the job's id returned an existing job. */
  created: boolean;
  state: JobStatus['state'];
}

import { toStoredValue } from './stored-value.ts';

/** What a job's options resolve to: its settings, when it may first run, and how it is deduplicated. */
export type JobSettings = ResolvedJobOptions & {
  runAt: Date;
  idempotencyExpiresAt: Date | null;
  idempotencyUntilFinished: boolean;
  debounceKey: string | null;
  debounceMode: DebounceMode;
  /** The job's time limit (`EnqueueOptions.timeoutMs`); `null`: none. */
  timeoutMs: number | null;
};

/** Resolves a job's options to its settings. */
export type SettingsOf = (options: EnqueueOptions | undefined) => JobSettings;

/**
 * The settings of jobs enqueued at `now` under `defaults`, resolved again only
 * when the options object changes: the jobs of a batch usually share one, so a
 * bulk enqueue resolves it once rather than once per job.
 */
export function batchSettings(defaults: Partial<ResolvedJobOptions> | undefined, now: Date): SettingsOf {
  let last: { options: EnqueueOptions | undefined; settings: JobSettings } | undefined;
  return (options) => {
    if (!last || last.options !== options) {
      const { priority, maxAttempts, backoff, leaseMs, order, retention } = resolveJobOptions(options, defaults);
      const { idempotencyExpiresAt, idempotencyUntilFinished, debounce } = resolveDeduplication(options, now);
      const runAt = debounce?.runAt ?? resolveRunAt(options, now);
      const debounceKey = debounce?.key ?? null;
      const debounceMode = debounce?.mode ?? 'replace';
      last = {
        options,
        settings: {
          priority,
          maxAttempts,
          backoff,
          leaseMs,
          timeoutMs: checkTimeoutMs(options?.timeoutMs),
          order,
          retention,
          runAt,
          idempotencyExpiresAt,
          idempotencyUntilFinished,
          debounceKey,
          debounceMode,
        },
      };
    }
    return last.settings;
  };
}

/**
 * The job a store inserts for `input`, made at `now`: its name and version
 * are checked first, then its options resolved with `settingsOf`.
 */
export function buildNewJob(
  input: EnqueueInput,
  now: Date,
  replayOf: string | null,
  settingsOf: SettingsOf,
  movedFrom: string | null = null,
): NewJob {
  if (typeof input.name !== 'string' || !isValidJobName(input.name)) {
    throw new WorkqError('UNKNOWN_JOB', `"${String(input.name)}" is not a valid job name.`);
  }
  if (!Number.isInteger(input.version) || input.version < 1) {
    throw new WorkqError('UNSUPPORTED_VERSION', `Job version must be an integer >= 1; got ${String(input.version)}.`);
  }
  const settings = settingsOf(input.options);
  const idempotencyKey = checkIdempotencyKey(input.idempotencyKey ?? input.options?.idempotencyKey);
  if (settings.idempotencyExpiresAt !== null || settings.idempotencyUntilFinished || settings.debounceKey !== null) {
    checkDeduplication(idempotencyKey, settings);
  }
  const id = checkJobId(input.id ?? input.options?.id);
  if (id !== null && settings.debounceKey !== null) {
    throw new WorkqError(
      'VALIDATION',
      'debounce cannot be combined with id: a debounced job is found by its debounce key.',
    );
  }
  // Built field by field, not by spreading the settings: this runs for every job of a bulk enqueue.
  const job: NewJob = {
    id: id ?? newJobId(),
    name: input.name,
    version: input.version,
    payload: toStoredValue(input.payload),
    priority: settings.priority,
    order: settings.order,
    runAt: settings.runAt,
    createdAt: now,
    maxAttempts: settings.maxAttempts,
    backoff: settings.backoff,
    leaseMs: settings.leaseMs,
    idempotencyKey,
    idempotencyExpiresAt: settings.idempotencyExpiresAt,
    debounceKey: settings.debounceKey,
    replayOf,
    movedFrom,
    traceContext: checkTraceContext(input.options?.traceContext),
    group: checkGroup(input.options?.group),
    retainCompletedMs: settings.retention?.completedMs ?? null,
    retainDeadMs: settings.retention?.deadMs ?? null,
  };
  // Only on the jobs that have them, so the usual job is sent and stored as it was.
  if (settings.idempotencyUntilFinished) job.idempotencyUntilFinished = true;
  if (settings.timeoutMs !== null) job.timeoutMs = settings.timeoutMs;
  if (settings.debounceKey !== null && settings.debounceMode !== 'replace') job.debounceMode = settings.debounceMode;
  return job;
}
