/**
 * `tsx src/goals-table.ts [--quick] results/latest.json`: the goals table of a finished run, written again from
 * its JSON rows with the goals as they now stand (a goal added since that run shows "not measured"). `--quick`
 * reads the rows with the quick run's sizes (claim and history scenarios).
 */
import { readFile } from 'node:fs/promises';
import { resolveConfig } from './config.ts';
import { evaluateGoals, goalsMarkdown } from './goals.ts';
import type { ResultRow } from './report.ts';

const args = process.argv.slice(2);
const file = args.find((arg) => !arg.startsWith('--'));
if (!file) {
  process.stderr.write('Usage: tsx src/goals-table.ts [--quick] <results.json>\n');
  process.exit(2);
}
const config = resolveConfig(args.filter((arg) => arg === '--quick'));
const rows = JSON.parse(await readFile(file, 'utf8')) as ResultRow[];
if (config) process.stdout.write(`${goalsMarkdown(evaluateGoals(rows, config))}\n`);
