/**
 * `pnpm bench [--quick] [--profile] [--cpu] [--only=id,id] [--scenarios=id,id]`: workq side by side with
 * BullMQ, pg-boss, graphile-worker and a raw-SQL baseline, in one run. `--quick` ends with the MongoDB smoke
 * on the wire double (`mongodb-wire-smoke.ts`), which `--mongodb-smoke` runs alone: no figure of it is compared.
 * Every scenario runs on a fresh queue; repetitions are interleaved
 * (repetition → scenario → system) and each figure is their median.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { pickedBy, type RunConfig, resolveConfig, USAGE } from './config.ts';
import { evaluateGoals, goalsMarkdown } from './goals.ts';
import { runMongodbWireSmoke, smokeMarkdown } from './mongodb-wire-smoke.ts';
import { roundTripsMarkdown, startCpuProfile } from './profiling.ts';
import { cpuMarkdown, header, markdownTable, ResultTable } from './report.ts';
import { claimScenario } from './scenarios/claim.ts';
import { drainScenario, historyDrainScenario } from './scenarios/drain.ts';
import { enqueueScenario } from './scenarios/enqueue.ts';
import { eventsDrainScenario } from './scenarios/events-drain.ts';
import { flowScenario, limitedClaimScenario } from './scenarios/flow.ts';
import { flowsScenario } from './scenarios/flows.ts';
import { latencyScenario } from './scenarios/latency.ts';
import { steadyLoadScenario } from './scenarios/steady-load.ts';
import type { Scenario } from './scenarios/types.ts';
import { bullmqSystem } from './systems/bullmq.ts';
import { graphileWorkerSystem } from './systems/graphile-worker.ts';
import { pgBossSystem } from './systems/pg-boss.ts';
import { rawSqlSystem } from './systems/raw-sql.ts';
import { rawSqlMariadbSystem } from './systems/raw-sql-mariadb.ts';
import type { BenchSystem } from './systems/types.ts';
import { workqCoreSystem } from './systems/workq-core.ts';
import { workqSdkSystem } from './systems/workq-sdk.ts';

const RESULTS = fileURLToPath(new URL('../results/', import.meta.url));
const SCENARIO_TIMEOUT_MS = 10 * 60_000;
/** The MongoDB smoke's plain drain takes at most this many jobs: the wire double matches documents in JavaScript. */
const MONGODB_SMOKE_MAX_JOBS = 2_000;

function configFromArgs(): RunConfig {
  let config: RunConfig | null;
  try {
    config = resolveConfig(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${USAGE}\n`);
    process.exit(2);
  }
  if (config === null) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  return config;
}

const config = configFromArgs();
if (config.mongodbSmoke === 'only') {
  const smoke = smokeMarkdown(await runMongodbWireSmoke(Math.min(config.jobs, MONGODB_SMOKE_MAX_JOBS)));
  await mkdir(RESULTS, { recursive: true });
  await writeFile(`${RESULTS}mongodb-smoke.md`, `${smoke}\n`);
  process.stdout.write(`${smoke}\n`);
  process.exit(0);
}
const profileDir = `${RESULTS}profiles`;
if (config.profile) await mkdir(profileDir, { recursive: true });
const stopCpuProfile = config.profile ? await startCpuProfile() : undefined;

const sdkOptions = { timeRoundTrips: config.profile, ...(config.profile ? { cpuProfileDir: profileDir } : {}) };
const allSystems: BenchSystem[] = [
  workqSdkSystem('pg', sdkOptions),
  workqSdkSystem('mariadb', sdkOptions),
  workqCoreSystem('pg', { timeRoundTrips: config.profile }),
  workqCoreSystem('pglite', { timeRoundTrips: false }),
  workqCoreSystem('mariadb', { timeRoundTrips: false }),
  bullmqSystem('redis'),
  bullmqSystem('pg'),
  pgBossSystem,
  graphileWorkerSystem,
  rawSqlSystem,
  rawSqlMariadbSystem,
];
const pickSystem = pickedBy(
  config.only,
  allSystems.map((system) => system.id),
);
const systems = allSystems.filter((system) => pickSystem(system.id));
const allScenarios: Scenario[] = [
  enqueueScenario('one'),
  enqueueScenario('inflight'),
  enqueueScenario('bulk'),
  drainScenario(1),
  drainScenario(10),
  drainScenario(50),
  latencyScenario,
  ...config.claimSizes.map(claimScenario),
  historyDrainScenario,
  eventsDrainScenario(1),
  eventsDrainScenario(20),
  flowScenario('groups'),
  flowScenario('concurrency'),
  limitedClaimScenario(1000),
  flowsScenario('wide'),
  flowsScenario('many'),
  ...config.steadyRates.map(steadyLoadScenario),
];
const pickScenario = pickedBy(
  config.scenarios,
  allScenarios.map((scenario) => scenario.id),
);
const scenarios = allScenarios.filter((scenario) => pickScenario(scenario.id));

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no result within ${ms / 1000} s`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/** Writes the markdown and JSON results (after every scenario, so a partial run leaves its figures). */
async function writeResults(finished: boolean): Promise<string> {
  const rows = table.rows();
  const labels = new Map(allSystems.map((s) => [s.id, s.label]));
  const goals = goalsMarkdown(evaluateGoals(rows, config));
  const markdown = [
    header(config, startedAt, Date.now() - startedAt.getTime()) +
      (finished ? '' : '\n\n**Partial: the run is still going.**'),
    '',
    '## Goals',
    '',
    goals,
    '',
    '## All figures',
    '',
    markdownTable(rows, labels),
    '',
    ...(smoke ? [smoke, ''] : []),
    ...(config.cpu
      ? [
          '## CPU per job (--cpu)',
          '',
          'µs of CPU per job over the timed part, read from `/proc`: bench = this process (the clients, and the workers of in-process systems), server = its child processes (the workq server), postgres = the PostgreSQL backends of the connections of those two, postgres-bg = the background processes of PostgreSQL, then MariaDB and Redis whole, whoever they served; total sums those; postgres, whole = every PostgreSQL process, the backends of other clients included. Median over repetitions, per column. Latency rows count the whole scenario.',
          '',
          cpuMarkdown(rows, labels),
          '',
        ]
      : []),
  ].join('\n');
  await mkdir(RESULTS, { recursive: true });
  const suffix = config.quick ? '-quick' : '';
  await writeFile(`${RESULTS}latest${suffix}.md`, markdown);
  await writeFile(
    `${RESULTS}latest${suffix}.json`,
    `${JSON.stringify(
      rows.map(({ note, atLeast, vsBestPeer, vsRawSql, cpuPerJob, ...figure }) => ({
        ...figure,
        ...(note ? { note } : {}),
        ...(atLeast ? { atLeast } : {}),
        vsBestPeer,
        vsRawSql,
        ...(cpuPerJob ? { cpuPerJob } : {}),
      })),
      null,
      2,
    )}\n`,
  );
  return markdown;
}

const table = new ResultTable();
const startedAt = new Date();
/** The MongoDB smoke's section, once it ran (see `RunConfig.mongodbSmoke`). */
let smoke: string | undefined;
const log = (line: string) => process.stderr.write(`${line}\n`);

/**
 * The systems in the order repetition `rep` runs them: each repetition starts
 * a further share of the list on, so no system always runs first in a
 * scenario, just after the previous system's queue was dropped.
 */
function runOrder<T>(items: readonly T[], rep: number): T[] {
  if (items.length === 0) return [];
  const shift = Math.floor(((rep - 1) * items.length) / config.repetitions) % items.length;
  return [...items.slice(shift), ...items.slice(0, shift)];
}

for (let rep = 1; rep <= config.repetitions; rep++) {
  for (const scenario of scenarios) {
    for (const system of runOrder(systems, rep)) {
      if (scenario.systems && !scenario.systems.includes(system.id)) continue;
      if (scenario.needs && !system.supports[scenario.needs]) {
        const reason = system.notAvailable?.[scenario.needs] ?? 'not supported';
        for (const row of scenario.rows(config)) table.mark(system.id, row, 'not available', reason);
        continue;
      }
      const tag = `${scenario.id}_r${rep}`.replace(/-/g, '_');
      const t0 = performance.now();
      let queue: Awaited<ReturnType<BenchSystem['open']>> | undefined;
      try {
        queue = await system.open(tag);
        const measured = await withTimeout(scenario.run(queue, config, system), SCENARIO_TIMEOUT_MS);
        for (const m of measured) table.add(system.id, m);
        const summary = measured.map(
          (m) => `${m.scenario} ${m.atLeast ? '≥ ' : ''}${m.value.toFixed(m.unit === 'ms' ? 2 : 0)} ${m.unit}`,
        );
        log(
          `[rep ${rep}] ${system.id} ${scenario.id}: ${summary.join(', ')} (${((performance.now() - t0) / 1000).toFixed(1)} s)`,
        );
      } catch (error) {
        const message = (error instanceof Error ? error.message : String(error)).split('\n')[0]?.slice(0, 160) ?? '';
        for (const row of scenario.rows(config)) table.mark(system.id, row, 'failed', message);
        log(`[rep ${rep}] ${system.id} ${scenario.id}: FAILED ${message}`);
      } finally {
        await queue?.close().catch((error: unknown) => log(`  close failed: ${String(error)}`));
      }
      await writeResults(false);
    }
  }
}

if (config.mongodbSmoke === 'after') {
  log('MongoDB smoke on the wire double (a fake server: no figure of it is compared)');
  smoke = smokeMarkdown(await runMongodbWireSmoke(Math.min(config.jobs, MONGODB_SMOKE_MAX_JOBS)));
}
const markdown = await writeResults(true);
for (const system of systems)
  await system.dispose?.().catch((error: unknown) => log(`  dispose failed: ${String(error)}`));
if (config.profile) {
  await writeFile(`${profileDir}/round-trips.md`, roundTripsMarkdown());
  await stopCpuProfile?.(`${profileDir}/bench-process.cpuprofile`);
}
process.stdout.write(`${markdown}\n`);
process.exit(0);
