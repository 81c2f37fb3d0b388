import { availableParallelism } from 'node:os';
import type { RunConfig } from './config.ts';
import { CPU_COLUMNS, CPU_GROUPS, type CpuTimes, cpuSum, cpuTimes } from './cpu-meter.ts';
import type { Measurement } from './scenarios/types.ts';
import { median } from './stats.ts';

export type RowStatus = 'ok' | 'failed' | 'not available';

/** One line of the results: the median over repetitions, with its spread. */
export interface ResultRow {
  system: string;
  scenario: string;
  concurrency: number;
  value: number | null;
  unit: Measurement['unit'];
  min: number | null;
  max: number | null;
  status: RowStatus;
  note?: string;
  /** The figure is a lower bound: in some repetition it counted jobs that had not started (see `Measurement`). */
  atLeast?: true;
  /** Higher is better: value / best peer for jobs/s, best peer / value for ms. */
  vsBestPeer?: number | null;
  vsRawSql?: number | null;
  /** With `--cpu`: µs of CPU per job in each process group, the median over repetitions for each group. */
  cpuPerJob?: CpuTimes;
}

export const PEERS = ['bullmq-redis', 'bullmq-pg', 'pg-boss-pg', 'graphile-worker-pg'] as const;
export const PG_PEERS = ['bullmq-pg', 'pg-boss-pg', 'graphile-worker-pg'] as const;
export const RAW = 'raw-sql-pg';

/** Collects repetitions per (system, scenario, concurrency) and turns them into rows. */
export class ResultTable {
  private readonly samples = new Map<
    string,
    { row: Omit<ResultRow, 'value' | 'min' | 'max'>; values: number[]; cpu: CpuTimes[]; atLeast: boolean }
  >();
  private readonly order: string[] = [];

  private entry(system: string, m: Omit<Measurement, 'value'>) {
    const key = `${system}\u0000${m.scenario}\u0000${m.concurrency}`;
    let entry = this.samples.get(key);
    if (!entry) {
      entry = {
        row: { system, scenario: m.scenario, concurrency: m.concurrency, unit: m.unit, status: 'ok' },
        values: [],
        cpu: [],
        atLeast: false,
      };
      this.samples.set(key, entry);
      this.order.push(key);
    }
    return entry;
  }

  add(system: string, m: Measurement): void {
    const entry = this.entry(system, m);
    entry.values.push(m.value);
    if (m.cpuPerJob) entry.cpu.push(m.cpuPerJob);
    // The median of values of which some are lower bounds is a lower bound of the median.
    if (m.atLeast) entry.atLeast = true;
  }

  mark(system: string, m: Omit<Measurement, 'value'>, status: RowStatus, note: string): void {
    const { row } = this.entry(system, m);
    if (row.status === 'failed') return;
    row.status = status;
    row.note = note;
  }

  rows(): ResultRow[] {
    const rows = this.order.map((key): ResultRow => {
      const { row, values, cpu, atLeast } = this.samples.get(key) as {
        row: ResultRow;
        values: number[];
        cpu: CpuTimes[];
        atLeast: boolean;
      };
      const ok = row.status === 'ok' && values.length > 0;
      return {
        ...row,
        value: ok ? median(values) : null,
        min: ok ? Math.min(...values) : null,
        max: ok ? Math.max(...values) : null,
        ...(ok && atLeast ? { atLeast: true as const } : {}),
        ...(ok && cpu.length > 0 ? { cpuPerJob: medianTimes(cpu) } : {}),
      };
    });
    for (const row of rows) {
      const group = rows.filter(
        (r) => r.scenario === row.scenario && r.concurrency === row.concurrency && r.value !== null,
      );
      const better = (a: number, b: number) => (row.unit === 'jobs/s' ? a > b : a < b);
      const peers = group.filter((r) => (PEERS as readonly string[]).includes(r.system));
      const best = peers.reduce<number | null>(
        (acc, r) => (acc === null || better(r.value as number, acc) ? (r.value as number) : acc),
        null,
      );
      const raw = group.find((r) => r.system === RAW)?.value ?? null;
      row.vsBestPeer = speedRatio(row.value, best, row.unit);
      row.vsRawSql = speedRatio(row.value, raw, row.unit);
    }
    return rows;
  }
}

function medianTimes(samples: readonly CpuTimes[]): CpuTimes {
  return cpuTimes((group) => median(samples.map((sample) => sample[group])));
}

/** Higher is better, whatever the unit (jobs/s: more is better; ms and a count of jobs left: fewer). */
export function speedRatio(value: number | null, reference: number | null, unit: Measurement['unit']): number | null {
  if (value === null || reference === null || value <= 0 || reference <= 0) return null;
  return unit === 'jobs/s' ? value / reference : reference / value;
}

const fmt = (v: number | null | undefined, unit?: string) =>
  v === null || v === undefined
    ? '—'
    : unit === 'ms'
      ? v.toFixed(v < 10 ? 2 : 1)
      : Math.round(v).toLocaleString('en-US');
const ratio = (v: number | null | undefined) => (v === null || v === undefined ? '—' : `${v.toFixed(2)}×`);

export function markdownTable(rows: readonly ResultRow[], labels: ReadonlyMap<string, string>): string {
  const lines = [
    '| system | scenario | conc. | figure | unit | min–max | vs best peer | vs raw SQL |',
    '| --- | --- | ---: | ---: | --- | --- | ---: | ---: |',
  ];
  const sorted = [...rows].sort((a, b) => a.scenario.localeCompare(b.scenario) || a.concurrency - b.concurrency);
  for (const r of sorted) {
    const label = labels.get(r.system) ?? r.system;
    const figure = r.status === 'ok' ? `${r.atLeast ? '≥ ' : ''}${fmt(r.value, r.unit)}` : `**${r.status}**`;
    const spread = r.status === 'ok' ? `${fmt(r.min, r.unit)}–${fmt(r.max, r.unit)}` : (r.note ?? '');
    lines.push(
      `| ${label} | ${r.scenario} | ${r.concurrency} | ${figure} | ${r.unit} | ${spread} | ${ratio(r.vsBestPeer)} | ${ratio(r.vsRawSql)} |`,
    );
  }
  return lines.join('\n');
}

/** The `--cpu` table: µs of CPU per job by process group, for the rows that counted it. */
export function cpuMarkdown(rows: readonly ResultRow[], labels: ReadonlyMap<string, string>): string {
  const lines = [
    `| system | scenario | conc. | ${CPU_GROUPS.join(' | ')} | total | postgres, whole |`,
    `| --- | --- | ---: | ${CPU_COLUMNS.map(() => '---:').join(' | ')} | ---: |`,
  ];
  const counted = rows.filter((r) => r.cpuPerJob !== undefined);
  const sorted = [...counted].sort((a, b) => a.scenario.localeCompare(b.scenario) || a.concurrency - b.concurrency);
  for (const r of sorted) {
    const times = r.cpuPerJob as CpuTimes;
    const cells = [...CPU_GROUPS.map((group) => times[group]), cpuSum(times), times['postgres-whole']].map((us) =>
      Math.round(us).toLocaleString('en-US'),
    );
    const scenario = r.scenario.replace(/ p50$/, '');
    lines.push(`| ${labels.get(r.system) ?? r.system} | ${scenario} | ${r.concurrency} | ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

export function header(config: RunConfig, startedAt: Date, elapsedMs: number): string {
  return [
    `# workq bench results${config.quick ? ' (--quick)' : ''}`,
    '',
    `Run ${startedAt.toISOString()}, ${(elapsedMs / 60_000).toFixed(1)} min; ${config.repetitions} interleaved repetition(s), figure = median; ` +
      `${config.jobs.toLocaleString('en-US')} jobs per enqueue/drain scenario; ${config.latencyJobs} latency jobs ${config.latencyGapMs} ms apart; ` +
      `Node ${process.version}, ${cpuCount()} CPU cores.`,
    '',
    'Ratios: higher is better (jobs/s: value ÷ reference; ms: reference ÷ value). Best peer = best of BullMQ (Redis, PostgreSQL), pg-boss, graphile-worker in that row.',
  ].join('\n');
}

function cpuCount(): number {
  return availableParallelism();
}
