/**
 * The chaos analysis on hand-written runs: what it counts, and that a job it flags comes with the trail that
 * explains it.
 */
import type { JobRecord } from '@workq/core/engine';
import { describe, expect, it } from 'vitest';
import { analyse, type FaultEvent } from './analysis.ts';
import type { ProducerFigures } from './producers.ts';
import type { RunLogRecord } from './run-log.ts';

const LEASE_MS = 3_000;
const ID = 'job-1';
const [W1, W2] = [101, 102];
const [STALE, FRESH] = ['1a2b3c.lease-one-aaaaaaaa', '1a2b3c.lease-two-bbbbbbbb'];

function completedJob(change: Partial<JobRecord>): JobRecord {
  return {
    id: ID,
    payload: { seq: 0 },
    state: 'completed',
    attempts: 2,
    leaseToken: FRESH,
    result: { seq: 0, attempt: 2, pid: W2 },
    ...change,
  } as JobRecord;
}

/** One acknowledged, unkeyed enqueue: the analysis reads only these fields of the producers' figures. */
const producers = {
  acknowledged: [{ seq: 0, id: ID, keyed: false, created: true, uncertain: false, at: 0 }],
  keyOf: () => undefined,
  keyPrefix: 'run:',
} as Pick<ProducerFigures, 'acknowledged' | 'keyOf' | 'keyPrefix'> as ProducerFigures;

/**
 * A worker stopped past its lease while it ran the job's first attempt; another ran the second; both acks are
 * answered at 9 s, the first lease's ack as `staleAck` says.
 */
function stoppedWorkerRun(staleAck: 'ok' | 'refused'): { records: RunLogRecord[]; faults: FaultEvent[] } {
  const records: RunLogRecord[] = [
    { k: 'claim', id: ID, a: 1, tok: STALE, seq: 0, t: 1_000, pid: W1 },
    { k: 'start', id: ID, a: 1, seq: 0, t: 1_010, pid: W1 },
    { k: 'claim', id: ID, a: 2, tok: FRESH, seq: 0, t: 5_000, pid: W2 },
    { k: 'start', id: ID, a: 2, seq: 0, t: 5_010, pid: W2 },
    { k: 'end', id: ID, a: 2, seq: 0, t: 5_030, pid: W2 },
    { k: 'end', id: ID, a: 1, seq: 0, t: 8_990, pid: W1 },
    { k: 'ack', id: ID, tok: STALE, ok: staleAck === 'ok', t: 9_000, pid: W1 },
    { k: 'ack', id: ID, tok: FRESH, ok: true, t: 9_000, pid: W2 },
  ];
  const faults: FaultEvent[] = [{ kind: 'worker-stop', at: 1_020, until: 8_980, target: String(W1) }];
  return { records, faults };
}

function analyseRun(run: { records: RunLogRecord[]; faults: FaultEvent[] }, job: JobRecord) {
  return analyse({
    stored: [job],
    producers,
    ...run,
    backlog: [],
    backlogThreshold: 5_000,
    leaseMs: LEASE_MS,
  });
}

describe('chaos analysis', () => {
  it('an ack of a superseded lease answered ok is a stale ack accepted and a duplicate completion, each told with the job’s trail', () => {
    const checks = analyseRun(stoppedWorkerRun('ok'), completedJob({}));
    expect(checks).toMatchObject({ staleAcksAccepted: 1, duplicateCompletions: 1, staleAcksRefused: 0, lost: 0 });
    const stale = checks.examples.find((example) => example.startsWith('stale ack accepted'));
    expect(stale).toBe(
      `stale ack accepted: job ${ID} attempt 1 acked after attempt 2 was handed out [+0.000s claim a1 aaaaaaaa pid ${W1}; ` +
        `+0.010s start a1 pid ${W1}; +0.020s worker-stop ${W1} until +7.980s; +4.000s claim a2 bbbbbbbb pid ${W2}; ` +
        `+4.010s start a2 pid ${W2}; +4.030s end a2 pid ${W2}; +7.990s end a1 pid ${W1}; ` +
        `+8.000s ack aaaaaaaa ok pid ${W1}; +8.000s ack bbbbbbbb ok pid ${W2}; ` +
        `store: completed, attempts 2, lease bbbbbbbb, result of attempt 2 (pid ${W2})]`,
    );
    expect(checks.examples.some((example) => example.startsWith(`duplicate completion: job ${ID}`))).toBe(true);

    // The same run with that ack refused is clean: a refusal, and a job run twice because of the stop.
    const refused = analyseRun(stoppedWorkerRun('refused'), completedJob({}));
    expect(refused).toMatchObject({
      staleAcksAccepted: 0,
      duplicateCompletions: 0,
      deliveredAfterCompletion: 0,
      staleAcksRefused: 1,
      ranTwice: 1,
      ranTwiceBecause: { 'lease expired while its worker was SIGSTOPped': 1 },
      examples: [],
    });
  });

  it('a completed job whose result names an earlier attempt than its last is a stale ack accepted, seen in the store alone', () => {
    const job = completedJob({ leaseToken: STALE, result: { seq: 0, attempt: 1, pid: W1 } });
    const checks = analyseRun({ records: [], faults: [] }, job);
    expect(checks.staleAcksAccepted).toBe(1);
    expect(checks.examples).toEqual([
      `stale ack accepted: job ${ID} completed by attempt 1 of 2 [store: completed, attempts 2, lease aaaaaaaa, result of attempt 1 (pid ${W1})]`,
    ]);
  });
});
