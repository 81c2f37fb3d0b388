import { isFinishedState, type JobState, MAX_BATCH_SIZE } from '@workq/core';
import type { QueueApi } from '@workq/sdk';
import { type PendingAction, plural } from './components/confirm.tsx';
import { describeFilter, type JobFilter, jobsInput } from './job-list.ts';

/** Jobs named one by one (a selection, or the job of a job page), for the actions that apply to them. */
export interface ChosenJobs {
  /** What the jobs are, for the question: "3 selected jobs", "job 0190…". */
  describe: string;
  jobs: readonly { id: string; state: JobState }[];
}

const cancellable = (state: string) => state === 'scheduled' || state === 'ready' || state === 'active';

/** What each action does to one job, and which states it applies to. */
const ACTIONS = {
  retry: {
    verb: 'Retry',
    applies: (state: string) => state === 'dead',
    after: 'Each starts again with fresh attempts.',
    done: 'retried',
  },
  cancel: {
    verb: 'Cancel',
    applies: cancellable,
    after: 'Running ones are told to stop.',
    done: 'cancelled',
  },
  replay: {
    verb: 'Replay',
    applies: isFinishedState,
    after: 'Each is enqueued again as a new job with the same payload.',
    done: 'enqueued again',
  },
} as const;

type ActionKind = keyof typeof ACTIONS;

/** Runs one action on the jobs with these ids; resolves to how many it applied to. */
async function runOn(api: QueueApi, kind: ActionKind, ids: readonly string[]): Promise<number> {
  if (kind === 'retry') {
    let total = 0;
    for (let at = 0; at < ids.length; at += MAX_BATCH_SIZE) {
      total += await api.admin.retryDead.mutate({ ids: ids.slice(at, at + MAX_BATCH_SIZE) });
    }
    return total;
  }
  let applied = 0;
  for (const id of ids) {
    if (kind === 'cancel') applied += (await api.jobs.cancel.mutate({ id })) ? 1 : 0;
    else {
      await api.admin.replay.mutate({ id });
      applied++;
    }
  }
  return applied;
}

/** The actions that apply to some of the chosen jobs, each with a confirmation saying how many. */
export function chosenActions(api: QueueApi, chosen: ChosenJobs): { label: string; action: PendingAction }[] {
  return (Object.keys(ACTIONS) as ActionKind[]).flatMap((kind) => {
    const { verb, applies, after, done } = ACTIONS[kind];
    const ids = chosen.jobs.filter((job) => applies(job.state)).map((job) => job.id);
    if (ids.length === 0) return [];
    return [
      {
        label: `${verb} ${plural(ids.length, 'job')}`,
        action: {
          question: `${verb} ${plural(ids.length, 'job')} (${chosen.describe})? ${after}`,
          confirmLabel: `${verb} ${plural(ids.length, 'job')}`,
          run: async () => `${plural(await runOn(api, kind, ids), 'job')} ${done}.`,
        },
      },
    ];
  });
}

/**
 * The actions on every job the filter matches, offered only where the filter
 * names one state (so each action's jobs are exactly the list's) and the
 * count is known; the confirmation says the count and the filter. Ids are read
 * page by page from the server when the action runs; the dead jobs of a whole
 * type are retried in one call.
 */
export function filterActions(
  api: QueueApi,
  filter: JobFilter,
  count: number | undefined,
): { label: string; action: PendingAction }[] {
  if (count === undefined || count === 0 || !filter.state) return [];
  const kind = (Object.keys(ACTIONS) as ActionKind[]).find((each) => ACTIONS[each].applies(filter.state));
  if (!kind) return [];
  const { verb, after, done } = ACTIONS[kind];
  const whole = kind === 'retry' && filter.name !== '' && onlyTypeAndState(filter);
  return [
    {
      label: `${verb} all ${plural(count, 'job')}`,
      action: {
        question: `${verb} all ${plural(count, 'job')}: ${describeFilter(filter)}? ${after}`,
        confirmLabel: `${verb} ${plural(count, 'job')}`,
        run: async () => {
          const applied = whole
            ? await api.admin.retryDead.mutate({ name: filter.name })
            : await runOn(api, kind, await matchingIds(api, filter));
          return `${plural(applied, 'job')} ${done}.`;
        },
      },
    },
  ];
}

function onlyTypeAndState(filter: JobFilter): boolean {
  return !filter.version && !filter.group && !filter.q && !filter.from && !filter.to;
}

/** Every id the filter matches, read in pages of the server's list. */
async function matchingIds(api: QueueApi, filter: JobFilter): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await api.admin.jobs.query({ ...jobsInput(filter, cursor), limit: 200 });
    ids.push(...page.jobs.map((job) => job.id));
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return ids;
}

/** How many jobs the filter matches, from the counts by type, version and state; unknown for narrower filters. */
export function countMatching(
  counts: readonly { name: string; version: number; state: string; count: number }[],
  filter: JobFilter,
): number | undefined {
  if (filter.group || filter.q || filter.from || filter.to) return undefined;
  return counts
    .filter((row) => !filter.name || row.name === filter.name)
    .filter((row) => !filter.version || row.version === Number(filter.version))
    .filter((row) => !filter.state || row.state === filter.state)
    .reduce((sum, row) => sum + row.count, 0);
}
