import type { RunConfig } from '../config.ts';
import type { QueueUnderTest } from '../systems/types.ts';
import { claimP50s, claimsTimed } from './claim.ts';
import { fillQueue, timeDrain } from './drain.ts';
import type { Measurement, Scenario } from './types.ts';

const BULK = 1000;
const GROUPS = 100;
const GROUPS_CONCURRENCY = 50;
const LIMIT = 20;

/** Enqueues n = 0 … count-1 spread over `groups` groups, each group's jobs in one range (not timed). */
async function fillGroups(queue: QueueUnderTest, count: number, groups: number): Promise<void> {
  const enqueue = queue.enqueueGroupedBulk as NonNullable<QueueUnderTest['enqueueGroupedBulk']>;
  const perGroup = Math.ceil(count / groups);
  for (let g = 0; g < groups; g++) {
    const end = Math.min(count, (g + 1) * perGroup);
    for (let from = g * perGroup; from < end; from += BULK) {
      await enqueue(from, Math.min(BULK, end - from), `g${g}`);
    }
  }
}

export type FlowKind = 'groups' | 'concurrency';

/**
 * The rows of a flow scenario and the consumer concurrency of all its drains: the limited drain; its plain twin
 * (no limits, the consumer as every drain runs it); and, for a consumer that claims ahead of free slots, its
 * twin holding no more jobs at once than the limit lets the limited drain hold (`held`).
 */
export function flowRows(kind: FlowKind): {
  limited: string;
  plain: string;
  sameHeld: string;
  held: number;
  concurrency: number;
} {
  return kind === 'groups'
    ? {
        limited: `drain, ${GROUPS} groups, groupConcurrency 1`,
        plain: 'drain, no limits (groups twin)',
        sameHeld: `drain, no limits, ${GROUPS} held at most (groups twin)`,
        held: GROUPS,
        concurrency: GROUPS_CONCURRENCY,
      }
    : {
        limited: `drain, concurrency limit ${LIMIT}`,
        plain: 'drain, no limits (concurrency twin)',
        sameHeld: `drain, no limits, ${LIMIT} held at most (concurrency twin)`,
        held: LIMIT,
        concurrency: LIMIT,
      };
}

/**
 * Flow control (issue 32), each limited drain beside plain ones on the same queue in the same scenario, so they
 * compare under the same conditions: first the jobs drain with no limits set (the plain claim); then, for a
 * consumer that claims ahead of free slots, as many again with no limits while it holds no more jobs than the
 * limit will let it (a limit counts held jobs: 20 under `concurrency: 20`, one per group under
 * `groupConcurrency: 1`); then the limits are set and as many jobs again drain under them (the limited claim).
 * - `groups`: jobs spread over 100 groups, `groupConcurrency: 1`, consumer concurrency 50.
 * - `concurrency`: `concurrency: 20`, consumer concurrency 20.
 */
export function flowScenario(kind: FlowKind): Scenario {
  const { concurrency, limited, plain, sameHeld, held } = flowRows(kind);
  return {
    id: `flow-${kind}`,
    needs: 'flow',
    rows: () => [plain, sameHeld, limited].map((scenario) => ({ scenario, concurrency, unit: 'jobs/s' as const })),
    async run(queue: QueueUnderTest, config: RunConfig): Promise<Measurement[]> {
      const setLimits = queue.setLimits as NonNullable<QueueUnderTest['setLimits']>;
      const measured: Measurement[] = [];
      let drained = 0;
      const drain = async (scenario: string, holdAtMost?: number) => {
        drained += config.jobs;
        const { jobsPerSecond, cpuPerJob } = await timeDrain(queue, config.jobs, concurrency, {
          expectedCompleted: drained,
          measureCpu: config.cpu,
          holdAtMost,
        });
        measured.push({ scenario, concurrency, value: jobsPerSecond, unit: 'jobs/s', cpuPerJob });
      };
      await fillQueue(queue, config.jobs);
      await drain(plain);
      if (queue.claimsAhead) {
        await fillQueue(queue, config.jobs);
        await drain(sameHeld, held);
      }
      if (kind === 'groups') {
        await setLimits({ groupConcurrency: 1 });
        await fillGroups(queue, config.jobs, GROUPS);
      } else {
        await setLimits({ concurrency: LIMIT });
        await fillQueue(queue, config.jobs);
      }
      await drain(limited);
      return measured;
    },
  };
}

/**
 * The rows of the limited-claim scenario: a plain claim's p50, the store's claim alone, a claim's under each limit,
 * and, for each limit, the plain claims of another type timed in turn with the limited ones.
 */
export const LIMITED_CLAIM_ROWS = {
  plain: 'claim p50, no limits (limits twin)',
  storeAlone: "claim p50, no limits, the store's claim alone",
  concurrency: `claim p50, concurrency limit ${LIMIT}`,
  besideConcurrency: `claim p50, no limits, in turn with concurrency limit ${LIMIT}`,
  groups: `claim p50, ${GROUPS} groups, groupConcurrency 1`,
  besideGroups: `claim p50, no limits, in turn with ${GROUPS} groups`,
} as const;

/**
 * Flow control's claim cost (issue 32), one claim at a time, each in turn with the claims it is compared with on
 * the same store: with `ready` jobs waiting, `claimSamples` single-job claims are timed (each acked right after,
 * outside the timing) with no limits set, each followed by one through the store's plain claim alone (below flow
 * control, which then has nothing to add); then as many under `concurrency: 20`; then, with `ready` more jobs
 * spread over 100 groups, as many under `groupConcurrency: 1`. Each limited claim is followed by a plain claim of
 * a second type that has no limits (`plainTwin`, filled with jobs at the start, and claimed as often as the first
 * type before the limits are set), so that both meet the machine and the store in the same state. Figure: each
 * p50.
 */
export function limitedClaimScenario(ready: number): Scenario {
  const rows = [
    LIMITED_CLAIM_ROWS.plain,
    LIMITED_CLAIM_ROWS.storeAlone,
    LIMITED_CLAIM_ROWS.concurrency,
    LIMITED_CLAIM_ROWS.besideConcurrency,
    LIMITED_CLAIM_ROWS.groups,
    LIMITED_CLAIM_ROWS.besideGroups,
  ];
  return {
    id: 'flow-claim',
    needs: 'limitedClaim',
    rows: () => rows.map((scenario) => ({ scenario, concurrency: 1, unit: 'ms' as const })),
    async run(queue: QueueUnderTest, config: RunConfig): Promise<Measurement[]> {
      const setLimits = queue.setLimits as NonNullable<QueueUnderTest['setLimits']>;
      const claimOne = queue.claimOne as NonNullable<QueueUnderTest['claimOne']>;
      const claimOneFromStore = queue.claimOneFromStore as NonNullable<QueueUnderTest['claimOneFromStore']>;
      const twin = queue.plainTwin as NonNullable<QueueUnderTest['plainTwin']>;
      await fillQueue(queue, ready);
      await fillQueue(twin, 4 * claimsTimed(config));
      const [plain, storeAlone] = await claimP50s([claimOne, claimOneFromStore], config);
      // As many claims of the second type, untimed, so that both types' ranges of the claim index carry the dead
      // entries of as many claims when they are compared.
      for (let i = 0; i < 2 * claimsTimed(config); i++) await twin.claimOne();
      await setLimits({ concurrency: LIMIT });
      const [limited, besideLimited] = await claimP50s([claimOne, twin.claimOne], config);
      await setLimits({ concurrency: null, groupConcurrency: 1 });
      await fillGroups(queue, ready, GROUPS);
      const [grouped, besideGrouped] = await claimP50s([claimOne, twin.claimOne], config);
      const completed = await queue.countCompleted();
      const expected = 8 * claimsTimed(config);
      if (completed !== expected)
        throw new Error(`check failed: store shows ${completed} completed, expected ${expected}`);
      return [plain, storeAlone, limited, besideLimited, grouped, besideGrouped].map((value, i) => ({
        scenario: rows[i] as string,
        concurrency: 1,
        value: value as number,
        unit: 'ms' as const,
      }));
    },
  };
}
