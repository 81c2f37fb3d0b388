/** The figures table a chaos run prints, and the verdict: what, if anything, failed it. */
import { type Checks, percentile, type Redelivery } from './analysis.ts';
import type { ChaosReport } from './chaos-run.ts';

const ms = (value: number | undefined) => (value === undefined ? 'n/a' : `${(value / 1000).toFixed(2)} s`);

const spread = (redeliveries: readonly Redelivery[]) => {
  const values = redeliveries.map((r) => r.ms);
  return `p50 ${ms(percentile(values, 50))}, p99 ${ms(percentile(values, 99))} (${values.length} jobs)`;
};

/** The three slowest redeliveries, each with the faults injected within five seconds of its kill. */
function slowest(report: ChaosReport): string {
  const near = (at: number) =>
    report.faultEvents
      .filter((f) => f.kind !== 'worker-kill' && f.at <= at + 5_000 && f.until >= at - 5_000)
      .map((f) => f.kind)
      .join('+') || 'nothing else';
  return (
    [...report.checks.redeliveries]
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 3)
      .map((r) => `${ms(r.ms)} (kill at ${new Date(r.killAt).toISOString().slice(11, 23)}, ${near(r.killAt)})`)
      .join('; ') || 'none'
  );
}

const withBacklog = (report: ChaosReport) => report.checks.redeliveries.filter((r) => r.withBacklog);

/**
 * The redeliveries the full run's p99 limit applies to: a kill with a backlog, and no server or database down
 * from 5 s before it (workers still reconnecting) until the limit had passed: during an outage, redelivery
 * waits for the outage, not for the queue.
 */
export const asserted = (report: ChaosReport) => withBacklog(report).filter((r) => !r.duringOutage);

/** The checks that are plain counts, in the order the table shows them. */
const COUNTED: readonly [string, keyof Checks][] = [
  ['jobs in the store', 'jobsInStore'],
  ['lost', 'lost'],
  ['unfinished after draining', 'unfinished'],
  ['duplicate completions (two leases)', 'duplicateCompletions'],
  ['stale acks accepted', 'staleAcksAccepted'],
  ['delivered again after completion', 'deliveredAfterCompletion'],
  ['stale acks refused', 'staleAcksRefused'],
  ['  lost leases reported to workers', 'leaseLostReported'],
  ['  lease extensions refused', 'extensionsRefused'],
  ['keyed duplicates (idempotency broken)', 'keyedDuplicates'],
  ["jobs with another enqueue's key", 'misKeyed'],
  ['enqueues answered with another job', 'misanswered'],
];

/** The run's figures as an aligned two-column table. */
export function formatFigures(report: ChaosReport): string {
  const { checks, producers, faults, timings, profile } = report;
  const reasons = Object.entries(checks.ranTwiceBecause).sort((a, b) => b[1] - a[1]);
  const rows: [string, string][] = [
    [
      'enqueues acknowledged',
      `${checks.enqueuesAcknowledged} (${checks.keyedAcknowledged} keyed, ${checks.unkeyedAcknowledged} unkeyed)`,
    ],
    ...COUNTED.map(([label, key]): [string, string] => [label, String(checks[key])]),
    ['jobs run twice', `${checks.ranTwice} (attempts beyond the first: ${checks.extraAttempts})`],
    ...reasons.map(([reason, count]): [string, string] => [`  ${reason}`, String(count)]),
    ['redelivery after a worker kill', spread(checks.redeliveries)],
    [`  with >= ${profile.backlogThreshold} ready`, spread(withBacklog(report))],
    [`  with >= ${profile.backlogThreshold} ready, no outage near (asserted)`, spread(asserted(report))],
    ['  with no backlog, no outage near', spread(checks.redeliveries.filter((r) => !r.withBacklog && !r.duringOutage))],
    ['worker kills with a backlog', String(checks.killsWithBacklog)],
    ['  slowest redeliveries', slowest(report)],
    ['largest ready backlog seen', String(report.maxBacklog)],
    ['producer retries', `${producers.keyedRetries} keyed (same key), ${producers.unkeyedRetries} unkeyed`],
    ['  keyed retries that found their job made', String(report.keyedRetriesFoundExisting)],
    [
      '  unkeyed retried: duplicates possible',
      `${report.uncertainUnkeyed} enqueues, ${checks.unkeyedRetryDuplicates} second jobs made`,
    ],
    ['  unexplained second jobs', String(checks.unexplainedDuplicates)],
    [
      '  failures by code',
      Object.entries(producers.failures)
        .map(([code, n]) => `${code} ${n}`)
        .join(', ') || 'none',
    ],
    ...Object.entries(producers.failureExamples).map(([code, message]): [string, string] => [
      `    ${code}, e.g.`,
      message,
    ]),
    ['  requests failed over (refused)', String(producers.failovers)],
    ['  enqueues given up', String(producers.givenUp.length)],
    ['handoffs to a waiting consumer', String(report.handoffs)],
    [
      'faults',
      `${faults['worker-kill']} worker SIGKILLs, ${faults['worker-stop']} SIGSTOPs, ${faults['server-kill']} server SIGKILLs, ` +
        `${faults['database-crash']} database crashes, ${faults['database-restart']} clean database restarts`,
    ],
    [
      'worker errors reported',
      Object.entries(checks.workerErrors)
        .map(([code, n]) => `${code} ${n}`)
        .join(', ') || 'none',
    ],
    ...(checks.workerErrorExample ? [['  for example', checks.workerErrorExample] as [string, string]] : []),
    ['unexpected exits', report.unexpectedExits.join('; ') || 'none'],
    ['server starts that failed (store down)', String(report.serverFailedStarts)],
    [
      'database start',
      `first ${ms(timings.databaseFirstStartMs)}, restarts ${timings.databaseRestartMs.map(ms).join(', ') || 'none'}`,
    ],
    ['server restarts', timings.serverRestartMs.map(ms).join(', ') || 'none'],
    [
      'time',
      `set-up ${ms(timings.setupMs)}, faults ${ms(timings.chaosMs)}, drain ${ms(timings.drainMs)}, total ${ms(timings.totalMs)}`,
    ],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  const title = `chaos (${profile.name}) on ${report.store}`;
  const lines = rows.map(([label, value]) => `  ${label.padEnd(width)}  ${value}`);
  const examples = checks.examples.map((example) => `  ! ${example}`);
  return [title, ...lines, ...examples].join('\n');
}

/** What failed the run; empty when it passed. `withLatency`: also the redelivery p99 the profile sets. */
export function verdict(report: ChaosReport, options: { withLatency: boolean }): string[] {
  const { checks, profile, producers } = report;
  const failures: string[] = [];
  const expectZero = (value: number, what: string) => {
    if (value !== 0) failures.push(`${what}: ${value}`);
  };
  expectZero(checks.lost, 'lost jobs');
  expectZero(checks.unfinished, 'jobs unfinished after draining');
  expectZero(checks.duplicateCompletions, 'duplicate completions');
  expectZero(checks.staleAcksAccepted, 'stale acks accepted');
  expectZero(checks.deliveredAfterCompletion, 'jobs delivered again after completion');
  expectZero(checks.keyedDuplicates, 'keyed duplicates');
  expectZero(checks.misKeyed, "jobs with another enqueue's key");
  expectZero(checks.misanswered, 'enqueues answered with another job');
  expectZero(checks.unexplainedDuplicates, 'unexplained second jobs');
  expectZero(producers.givenUp.length, 'enqueues given up');
  if (checks.staleAcksRefused < profile.minStaleAcksRefused) {
    failures.push(`stale acks refused: ${checks.staleAcksRefused}, expected at least ${profile.minStaleAcksRefused}`);
  }
  const limit = profile.redeliveryP99LimitMs;
  if (options.withLatency && limit !== undefined) {
    const p99 = percentile(
      asserted(report).map((r) => r.ms),
      99,
    );
    if (p99 === undefined) {
      failures.push(`no worker kill with >= ${profile.backlogThreshold} jobs ready and no outage to measure`);
    } else if (p99 > limit) failures.push(`redelivery p99 with a backlog ${ms(p99)} > ${ms(limit)}`);
  }
  return failures;
}
