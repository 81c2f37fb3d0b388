/**
 * `pnpm chaos`: the full chaos run (20,000 jobs per store, a backlog of ready
 * jobs while workers are killed), on a private PostgreSQL and a private
 * MariaDB, one after the other. Prints each run's figures and exits non-zero
 * when any check fails, the redelivery p99 with a backlog included.
 *
 *   pnpm chaos [--store postgres|mysql] [--profile full|short] [--keep] [--json <file>]
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ChaosUnavailable, runChaos, stopChaosRuns } from './chaos-run.ts';
import { formatFigures, verdict } from './figures.ts';
import type { DatabaseKind } from './private-database.ts';
import { FULL_PROFILE, SHORT_PROFILE } from './profiles.ts';

const { values } = parseArgs({
  options: {
    store: { type: 'string', multiple: true },
    profile: { type: 'string', default: 'full' },
    keep: { type: 'boolean', default: false },
    json: { type: 'string' },
  },
});
const stores = (values.store ?? ['postgres', 'mysql']) as DatabaseKind[];
const profile = values.profile === 'short' ? SHORT_PROFILE : FULL_PROFILE;
const log = (line: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void stopChaosRuns().finally(() => process.exit(130)));
}

let failed = false;
const reports: unknown[] = [];
for (const kind of stores) {
  if (kind !== 'postgres' && kind !== 'mysql') throw new Error(`unknown store "${kind}": postgres or mysql`);
  try {
    const report = await runChaos(kind, profile, { log, keepDir: values.keep });
    console.log(formatFigures(report));
    const failures = verdict(report, { withLatency: true });
    for (const failure of failures) console.log(`  FAILED: ${failure}`);
    if (failures.length === 0) console.log('  passed');
    failed ||= failures.length > 0;
    reports.push({ ...report, failures });
  } catch (error) {
    if (!(error instanceof ChaosUnavailable)) throw error;
    console.log(`chaos (${profile.name}) on ${kind}: skipped — ${error.message}`);
    failed = true;
  }
}
if (values.json) writeFileSync(values.json, JSON.stringify(reports, null, 2));
process.exit(failed ? 1 : 0);
