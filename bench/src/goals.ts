import type { RunConfig } from './config.ts';
import { CPU_GROUPS, type CpuTimes, cpuSum } from './cpu-meter.ts';
import { PG_PEERS, RAW, type ResultRow, speedRatio } from './report.ts';
import { claimLabel } from './scenarios/claim.ts';
import { historyLabel } from './scenarios/drain.ts';
import { EVENTS_DRAIN_LABEL } from './scenarios/events-drain.ts';
import { type FlowKind, flowRows, LIMITED_CLAIM_ROWS } from './scenarios/flow.ts';
import { FLOWS_CONCURRENCY, flowsLabel } from './scenarios/flows.ts';
import { STEADY_CONCURRENCY, type SteadyFigure, steadyLabel } from './scenarios/steady-load.ts';

export interface Goal {
  goal: string;
  ratio: number | null;
  target: number;
  detail: string;
  /** Why the goal is missed whatever its ratio says: a condition the ratio cannot show (a backlog left behind). */
  missedBecause?: string;
  /** The rows its figures were read from: the goals table shows their CPU per job. */
  rows: readonly ResultRow[];
}

type GoalInput = Omit<Goal, 'rows'> & { rows?: readonly (ResultRow | undefined)[] };

/**
 * The goals of one run as they are written: `row` and `value` read a figure and keep its row, and `push` gives
 * each goal the rows read since the goal before it (and any it names itself), so that the goals table can show
 * the CPU per job of every system a goal compares.
 */
class GoalList {
  readonly goals: Goal[] = [];
  private read: ResultRow[] = [];

  constructor(private readonly rows: readonly ResultRow[]) {}

  row(system: string, scenario: string, concurrency?: number): ResultRow | undefined {
    const row = rowOf(this.rows, system, scenario, concurrency);
    if (row) this.read.push(row);
    return row;
  }

  value(system: string, scenario: string, concurrency?: number): number | null {
    return this.row(system, scenario, concurrency)?.value ?? null;
  }

  push(...goals: GoalInput[]): void {
    for (const { rows = [], ...goal } of goals) {
      const named = rows.filter((row): row is ResultRow => row !== undefined);
      this.goals.push({ ...goal, rows: [...new Set([...this.read, ...named])] });
      this.read = [];
    }
  }
}

/** The row of `system` and `scenario` (at `concurrency`, when given). */
function rowOf(rows: readonly ResultRow[], system: string, scenario: string, concurrency?: number) {
  return rows.find(
    (r) =>
      r.system === system && r.scenario === scenario && (concurrency === undefined || r.concurrency === concurrency),
  );
}

/** "a vs b unit", each to the precision of its unit, or — where it was not measured; ≥ marks a lower bound. */
function describe(a: number | null | ResultRow, b: number | null | ResultRow, unit: string): string {
  const figure = (v: number | null | ResultRow) => {
    const row = typeof v === 'object' && v !== null ? v : undefined;
    const value = row ? row.value : (v as number | null);
    return value === null ? '—' : `${row?.atLeast ? '≥ ' : ''}${value.toFixed(unit === 'ms' ? 2 : 0)}`;
  };
  return `${figure(a)} vs ${figure(b)} ${unit}`;
}

/** The issue's goals, each as a higher-is-better ratio from this run's rows. */
export function evaluateGoals(rows: readonly ResultRow[], config: RunConfig): Goal[] {
  const goals = new GoalList(rows);
  const value = (system: string, scenario: string, concurrency?: number) => goals.value(system, scenario, concurrency);
  const bestOf = (
    systems: readonly string[],
    scenario: string,
    concurrency: number | undefined,
    unit: 'jobs/s' | 'ms',
  ) => {
    let best: { system: string; value: number } | null = null;
    for (const system of systems) {
      const v = value(system, scenario, concurrency);
      if (v === null) continue;
      if (!best || (unit === 'ms' ? v < best.value : v > best.value)) best = { system, value: v };
    }
    return best;
  };
  const sdkDrain = value('workq-sdk-pg', 'drain', 50);
  const bullDrain = value('bullmq-redis', 'drain', 50);
  goals.push({
    goal: 'drain c=50, SDK/tRPC on PostgreSQL ≥ 1.2× BullMQ on Redis',
    ratio: speedRatio(sdkDrain, bullDrain, 'jobs/s'),
    target: 1.2,
    detail: describe(sdkDrain, bullDrain, 'jobs/s'),
  });
  const pgPeer = bestOf(PG_PEERS, 'drain', 50, 'jobs/s');
  goals.row('workq-sdk-pg', 'drain', 50);
  goals.push({
    goal: `drain c=50, SDK/tRPC on PostgreSQL ≥ 1.5× best PostgreSQL peer (${pgPeer?.system ?? '—'})`,
    ratio: speedRatio(sdkDrain, pgPeer?.value ?? null, 'jobs/s'),
    target: 1.5,
    detail: describe(sdkDrain, pgPeer?.value ?? null, 'jobs/s'),
  });
  sdkCpuGoals(goals);
  for (const c of [1, 10, 50]) {
    const core = value('workq-core-pg', 'drain', c);
    const raw = value(RAW, 'drain', c);
    goals.push({
      goal: `drain c=${c}, workq core in-process ≥ 0.6× raw-SQL baseline`,
      ratio: speedRatio(core, raw, 'jobs/s'),
      target: 0.6,
      detail: describe(core, raw, 'jobs/s'),
    });
  }
  for (const c of [10, 50]) {
    const core = value('workq-core-mariadb', 'drain', c);
    const raw = value('raw-sql-mariadb', 'drain', c);
    goals.push({
      goal: `drain c=${c}, workq core in-process on MariaDB ≥ 0.8× raw-SQL baseline on MariaDB`,
      ratio: speedRatio(core, raw, 'jobs/s'),
      target: 0.8,
      detail: describe(core, raw, 'jobs/s'),
    });
  }
  const bulk = 'enqueue, bulk 1,000 per call';
  const bestBulk = bestOf(['bullmq-redis', ...PG_PEERS], bulk, undefined, 'jobs/s');
  const sdkBulk = value('workq-sdk-pg', bulk);
  goals.push({
    goal: `bulk enqueue via SDK ≥ 1.0× best peer (${bestBulk?.system ?? '—'})`,
    ratio: speedRatio(sdkBulk, bestBulk?.value ?? null, 'jobs/s'),
    target: 1.0,
    detail: describe(sdkBulk, bestBulk?.value ?? null, 'jobs/s'),
  });
  const coreBulk = value('workq-core-pg', bulk);
  const rawBulk = value(RAW, bulk);
  goals.push({
    goal: 'bulk enqueue, workq core in-process ≥ 0.5× raw-SQL baseline',
    ratio: speedRatio(coreBulk, rawBulk, 'jobs/s'),
    target: 0.5,
    detail: describe(coreBulk, rawBulk, 'jobs/s'),
  });
  const sdkP50 = value('workq-sdk-pg', 'idle latency p50');
  const gwP50 = value('graphile-worker-pg', 'idle latency p50');
  goals.push({
    goal: 'idle latency p50 via SDK ≤ graphile-worker p50',
    ratio: speedRatio(sdkP50, gwP50, 'ms'),
    target: 1.0,
    detail: describe(sdkP50, gwP50, 'ms'),
  });
  const sdkP99 = value('workq-sdk-pg', 'idle latency p99');
  const bossP99 = value('pg-boss-pg', 'idle latency p99');
  goals.push({
    goal: 'idle latency p99 via SDK ≤ pg-boss p99',
    ratio: speedRatio(sdkP99, bossP99, 'ms'),
    target: 1.0,
    detail: describe(sdkP99, bossP99, 'ms'),
  });
  const sizes = config.claimSizes;
  const smallest = sizes[0] as number;
  const largest = sizes.at(-1) as number;
  const claimSmall = value('workq-core-pg', claimLabel(smallest));
  const claimLarge = value('workq-core-pg', claimLabel(largest));
  goals.push({
    goal: `claim p50 at ${largest.toLocaleString('en-US')} ready ≤ 2× claim p50 at ${smallest.toLocaleString('en-US')} (workq core)`,
    ratio: claimSmall !== null && claimLarge !== null ? (2 * claimSmall) / claimLarge : null,
    target: 1.0,
    detail: describe(claimLarge, claimSmall, 'ms'),
  });
  for (const system of ['workq-sdk-pg', 'workq-core-pg']) {
    const history = value(system, historyLabel(config), 50);
    const empty = value(system, 'drain', 50);
    goals.push({
      goal: `${system}: drain c=50 with ${config.historyJobs.toLocaleString('en-US')} finished kept ≥ 0.8× empty history`,
      ratio: speedRatio(history, empty, 'jobs/s'),
      target: 0.8,
      detail: describe(history, empty, 'jobs/s'),
    });
  }
  const watched = value('workq-sdk-pg', EVENTS_DRAIN_LABEL, 50);
  const unwatched = value('workq-sdk-pg', 'drain', 50);
  goals.push({
    goal: 'drain c=50, SDK/tRPC on PostgreSQL, with one events subscriber ≥ 0.9× without',
    ratio: speedRatio(watched, unwatched, 'jobs/s'),
    target: 0.9,
    detail: describe(watched, unwatched, 'jobs/s'),
  });
  steadyGoals(goals);
  flowGoals(goals);
  for (const shape of ['wide', 'many'] as const) {
    for (const [figure, unit] of [
      ['children drained', 'jobs/s'],
      ['last child → parent p50', 'ms'],
    ] as const) {
      const workq = goals.value('workq-sdk-pg', flowsLabel(shape, figure), FLOWS_CONCURRENCY);
      const bull = goals.value('bullmq-redis', flowsLabel(shape, figure), FLOWS_CONCURRENCY);
      goals.push({
        goal: `${flowsLabel(shape, figure)}, SDK/tRPC on PostgreSQL ${unit === 'ms' ? '≤' : '≥'} BullMQ FlowProducer on Redis`,
        ratio: speedRatio(workq, bull, unit),
        target: 1.0,
        detail: describe(workq, bull, unit),
      });
    }
  }
  return goals.goals;
}

/**
 * Steady load (issue 49): through the SDK, on each SQL store, workq's p99 at 1,000/s at most BullMQ on Redis's;
 * at 3,000/s the rate held (achieved at least 0.98× offered, and no job left unstarted after the grace), the p99
 * at most 2× BullMQ's, and a tail that does not drift (the last third's p99 at most 1.5× the first third's). A
 * system that left jobs unstarted misses every one of its goals: its latency figures are then lower bounds, which
 * can show a miss but never a goal met. A peer's lower bound is kept as its figure: that only makes the goal
 * harder for workq. Each goal also reads the achieved-rate rows, which carry the CPU per job.
 */
function steadyGoals(goals: GoalList): void {
  const row = (system: string, rate: number, figure: SteadyFigure) =>
    goals.row(system, steadyLabel(rate, figure), STEADY_CONCURRENCY);
  const cpuRows = (rate: number, ...systems: string[]) =>
    systems.map((system) => goals.row(system, steadyLabel(rate, 'achieved rate'), STEADY_CONCURRENCY));
  /** Why `system`'s figures at `rate` cannot meet a goal: the jobs it left unstarted, if any. */
  const backlog = (system: string, rate: number) => {
    const unstarted = row(system, rate, 'unstarted')?.value ?? 0;
    return unstarted > 0 ? { missedBecause: `${Math.round(unstarted).toLocaleString('en-US')} jobs unstarted` } : {};
  };
  const figureOf = (r: ResultRow | undefined) => r?.value ?? null;
  for (const system of ['workq-sdk-pg', 'workq-sdk-mariadb']) {
    const p99 = row(system, 1_000, 'p99');
    const bullP99 = row('bullmq-redis', 1_000, 'p99');
    goals.push({
      goal: `steady 1,000/s, ${system}: p99 ≤ BullMQ on Redis p99`,
      ratio: speedRatio(figureOf(p99), figureOf(bullP99), 'ms'),
      target: 1.0,
      detail: describe(p99 ?? null, bullP99 ?? null, 'ms'),
      ...backlog(system, 1_000),
      rows: cpuRows(1_000, system, 'bullmq-redis'),
    });
    const achieved = row(system, 3_000, 'achieved rate');
    goals.push({
      goal: `steady 3,000/s, ${system}: holds the rate (achieved ≥ 0.98× offered, none unstarted)`,
      ratio: speedRatio(figureOf(achieved), 3_000, 'jobs/s'),
      target: 0.98,
      detail: describe(achieved ?? null, 3_000, 'jobs/s'),
      ...backlog(system, 3_000),
    });
    const p99At3k = row(system, 3_000, 'p99');
    const bullP99At3k = row('bullmq-redis', 3_000, 'p99');
    goals.push({
      goal: `steady 3,000/s, ${system}: p99 ≤ 2× BullMQ on Redis p99`,
      ratio: speedRatio(figureOf(p99At3k), figureOf(bullP99At3k), 'ms'),
      target: 0.5,
      detail: describe(p99At3k ?? null, bullP99At3k ?? null, 'ms'),
      ...backlog(system, 3_000),
      rows: cpuRows(3_000, system, 'bullmq-redis'),
    });
    const first = row(system, 3_000, 'p99, first third');
    const last = row(system, 3_000, 'p99, last third');
    goals.push({
      goal: `steady 3,000/s, ${system}: last-third p99 ≤ 1.5× first-third p99`,
      ratio: speedRatio(figureOf(last), figureOf(first), 'ms'),
      target: 1 / 1.5,
      detail: describe(last ?? null, first ?? null, 'ms'),
      ...backlog(system, 3_000),
      rows: cpuRows(3_000, system),
    });
  }
}

const FLOW_SYSTEMS = ['workq-sdk-pg', 'workq-core-pg', 'workq-core-pglite', 'workq-core-mariadb'] as const;

/**
 * A row's CPU per job summed over its process groups, or null without `--cpu`: PostgreSQL's share is the
 * backends of the bench's own connections and the background processes, never the other backends.
 */
function cpuTotal(row: ResultRow | undefined): number | null {
  return row?.cpuPerJob ? cpuSum(row.cpuPerJob) : null;
}

/** The most CPU per job the SDK's client and the server together may spend on the c=50 drain, in µs. */
const SDK_OWN_CPU_US = 25;

/**
 * The product path's CPU budget, from the c=50 drains' CPU per job (`--cpu`): the SDK's client (the bench
 * process) and the queue server together at most `SDK_OWN_CPU_US`, and the SDK path's total, PostgreSQL
 * included, at most graphile-worker's. PostgreSQL counts as in `cpuTotal`: other clients' backends are left out.
 */
function sdkCpuGoals(goals: GoalList): void {
  const sdk = goals.row('workq-sdk-pg', 'drain', 50);
  const own = sdk?.cpuPerJob ? sdk.cpuPerJob.bench + sdk.cpuPerJob.server : null;
  goals.push({
    goal: `drain c=50, SDK/tRPC on PostgreSQL: SDK client + server CPU per job ≤ ${SDK_OWN_CPU_US} µs`,
    ratio: own === null || own <= 0 ? null : SDK_OWN_CPU_US / own,
    target: 1.0,
    detail: describe(own, SDK_OWN_CPU_US, 'µs/job'),
  });
  const graphile = goals.row('graphile-worker-pg', 'drain', 50);
  const sdkTotal = cpuTotal(sdk);
  const graphileTotal = cpuTotal(graphile);
  goals.push({
    goal: "drain c=50, SDK/tRPC on PostgreSQL: total CPU per job ≤ graphile-worker's",
    ratio: sdkTotal === null || graphileTotal === null || sdkTotal <= 0 ? null : graphileTotal / sdkTotal,
    target: 1.0,
    detail: describe(sdkTotal, graphileTotal, 'µs/job'),
    rows: [sdk],
  });
}

/**
 * Flow control's goal, "a claim with limits set costs at most 1.5× a plain one", per system and kind: the limited
 * drain at least 1/1.5 of its plain twin's jobs/s, and (with `--cpu`) at most 1.5× its CPU per job, all processes.
 * The twin is the one holding no more jobs at once than the limit lets the limited drain hold, where the consumer
 * claims ahead of free slots (a limit counts held jobs, so the drain's cap on them is the limit itself, not the
 * cost of its claims); otherwise the plain twin, which already holds no more.
 */
function flowGoals(goals: GoalList): void {
  for (const kind of ['concurrency', 'groups'] as FlowKind[]) {
    const { limited, plain, sameHeld, concurrency } = flowRows(kind);
    for (const system of FLOW_SYSTEMS) {
      const limitedRow = goals.row(system, limited, concurrency);
      const sameHeldRow = goals.row(system, sameHeld, concurrency);
      const twinRow = sameHeldRow ?? goals.row(system, plain, concurrency);
      if (!limitedRow && !twinRow) continue;
      const twin = sameHeldRow ? 'its twin holding as many jobs' : 'its plain twin';
      const limitedValue = limitedRow?.value ?? null;
      const twinValue = twinRow?.value ?? null;
      goals.push({
        goal: `${system}: ${limited} ≥ 0.67× ${twin}`,
        ratio: speedRatio(limitedValue, twinValue, 'jobs/s'),
        target: 0.67,
        detail: describe(limitedValue, twinValue, 'jobs/s'),
      });
      const limitedCpu = cpuTotal(limitedRow);
      const twinCpu = cpuTotal(twinRow);
      if (limitedCpu === null || twinCpu === null) continue;
      goals.push({
        goal: `${system}: ${limited}, CPU per job ≤ 1.5× that of ${twin}`,
        ratio: (1.5 * twinCpu) / limitedCpu,
        target: 1.0,
        detail: describe(limitedCpu, twinCpu, 'µs/job'),
        rows: [limitedRow, twinRow],
      });
    }
  }
  for (const system of FLOW_SYSTEMS) {
    const plain = goals.row(system, LIMITED_CLAIM_ROWS.plain, 1)?.value ?? null;
    const storeAlone = goals.row(system, LIMITED_CLAIM_ROWS.storeAlone, 1)?.value ?? null;
    if (plain !== null || storeAlone !== null) {
      goals.push({
        goal: `${system}: ${LIMITED_CLAIM_ROWS.plain} ≤ 1.1× ${LIMITED_CLAIM_ROWS.storeAlone.replace('claim p50, no limits, ', '')}`,
        ratio: plain !== null && storeAlone !== null ? (1.1 * storeAlone) / plain : null,
        target: 1.0,
        detail: describe(plain, storeAlone, 'ms'),
      });
    }
    const limitedClaims = [
      [LIMITED_CLAIM_ROWS.concurrency, LIMITED_CLAIM_ROWS.besideConcurrency],
      [LIMITED_CLAIM_ROWS.groups, LIMITED_CLAIM_ROWS.besideGroups],
    ] as const;
    for (const [limited, beside] of limitedClaims) {
      const value = goals.row(system, limited, 1)?.value ?? null;
      const twin = goals.row(system, beside, 1)?.value ?? null;
      if (twin === null && value === null) continue;
      goals.push({
        goal: `${system}: ${limited} ≤ 1.5× the plain claims timed in turn with it`,
        ratio: twin !== null && value !== null ? (1.5 * twin) / value : null,
        target: 1.0,
        detail: describe(value, twin, 'ms'),
      });
    }
  }
}

/**
 * The goals table that leads the results: per goal what was measured, the ratio, the target, whether it was
 * met, and the CPU per job by process (µs; with `--cpu`) of each row the goal read that counted it.
 */
export function goalsMarkdown(goals: readonly Goal[]): string {
  const lines = [
    '| goal | measured | ratio | target | met | CPU per job, µs by process |',
    '| --- | --- | ---: | ---: | --- | --- |',
  ];
  for (const g of goals) {
    const met = g.missedBecause
      ? `**missed**: ${g.missedBecause}`
      : g.ratio === null
        ? 'not measured'
        : g.ratio >= g.target
          ? 'met'
          : '**missed**';
    lines.push(
      `| ${g.goal} | ${g.detail} | ${g.ratio === null ? '—' : `${g.ratio.toFixed(2)}×`} | ${Number(g.target.toFixed(2))}× | ${met} | ${cpuCell(g.rows)} |`,
    );
  }
  return lines.join('\n');
}

/**
 * "system: bench 23, server 22, postgres 55 = 100; …" for the rows that counted CPU (a group under 2% of its
 * row's total is left out but counted in it), a row named by its scenario too where the goal read more than one row of its system; — where none did.
 */
function cpuCell(rows: readonly ResultRow[]): string {
  const counted = rows.filter((row) => row.cpuPerJob !== undefined);
  if (counted.length === 0) return '—';
  const systems = counted.map((row) => row.system);
  return counted
    .map((row) => {
      const times = row.cpuPerJob as CpuTimes;
      const total = cpuSum(times);
      const parts = CPU_GROUPS.filter((group) => times[group] >= total / 50).map(
        (group) => `${group} ${Math.round(times[group])}`,
      );
      const repeated = systems.indexOf(row.system) !== systems.lastIndexOf(row.system);
      const name = repeated ? `${row.system} (${row.scenario}, c=${row.concurrency})` : row.system;
      return `${name}: ${parts.join(', ')} = ${Math.round(total)}`;
    })
    .join('; ');
}
