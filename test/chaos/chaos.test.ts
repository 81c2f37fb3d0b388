/**
 * The short chaos run, inside `pnpm test`: a few thousand jobs per store while
 * workers, queue servers and the database are killed and restarted (see
 * chaos-run.ts), on a private PostgreSQL and a private MariaDB. It fails on a
 * lost job, a job completed under two leases, or a stale ack accepted; the
 * redelivery figures are printed, not asserted (`pnpm chaos` asserts them).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { ChaosUnavailable, runChaos, stopChaosRuns } from './chaos-run.ts';
import { formatFigures } from './figures.ts';
import type { DatabaseKind } from './private-database.ts';
import { SHORT_PROFILE } from './profiles.ts';

const STORES: readonly DatabaseKind[] = ['postgres', 'mysql'];

// A run that timed out would leave its processes and database running: they are in process groups of their own.
afterAll(() => stopChaosRuns());

describe.each(STORES)('chaos (short) over a private %s', (kind) => {
  it('loses no job, completes none under two leases and accepts no stale ack', async (context) => {
    let report: Awaited<ReturnType<typeof runChaos>>;
    try {
      report = await runChaos(kind, SHORT_PROFILE, { log: (line) => console.log(line) });
    } catch (error) {
      if (!(error instanceof ChaosUnavailable)) throw error;
      console.log(`chaos (short) over a private ${kind}: skipped — ${error.message}`);
      return context.skip(error.message);
    }
    console.log(formatFigures(report));
    const { checks, producers } = report;
    // The problems found, each job's with its trail, so that a failure explains itself.
    const found = checks.examples.map((example) => `\n  ${example}`).join('');
    expect(checks.lost, `lost jobs${found}`).toBe(0);
    expect(checks.unfinished, `jobs unfinished after draining${found}`).toBe(0);
    expect(checks.duplicateCompletions, `duplicate completions${found}`).toBe(0);
    expect(checks.staleAcksAccepted, `stale acks accepted${found}`).toBe(0);
    expect(checks.deliveredAfterCompletion, `jobs delivered again after completion${found}`).toBe(0);
    expect(checks.keyedDuplicates, 'keyed enqueues that made two jobs').toBe(0);
    expect(checks.misKeyed, "jobs with another enqueue's idempotency key").toBe(0);
    expect(checks.misanswered, 'enqueues answered with another job').toBe(0);
    expect(checks.unexplainedDuplicates, 'second jobs without a retried enqueue').toBe(0);
    expect(producers.givenUp, 'enqueues given up').toEqual([]);
    expect(checks.enqueuesAcknowledged).toBe(SHORT_PROFILE.singles);
  }, 180_000);
});
