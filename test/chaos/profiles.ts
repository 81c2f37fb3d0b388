/**
 * The two chaos runs: `short`, inside `pnpm test` (a few thousand jobs in
 * about a minute per store), and `full`, `pnpm chaos` (20,000 jobs, with a
 * backlog of ready jobs while workers are killed).
 */
import { CHAOS_LEASE_MS } from './catalog.ts';

export interface ChaosProfile {
  name: string;
  /** Jobs enqueued one at a time (half keyed), paced evenly over `produceOverMs`. */
  singles: number;
  produceOverMs: number;
  producerLoops: number;
  keyedShare: number;
  /** Jobs enqueued in bulk, unkeyed, `atMs` into the run: a backlog of ready jobs. */
  backlog?: { atMs: number; jobs: number; batchSize: number };
  /** Ready jobs that count as a backlog for the redelivery figures. */
  backlogThreshold: number;
  /** How long faults are injected, from the first enqueue. */
  chaosMs: number;
  workers: number;
  concurrency: number;
  /** Handler time of each job, drawn evenly from this range, in milliseconds. */
  workMs: readonly [number, number];
  firstWorkerKillAtMs: number;
  workerKillEveryMs: number;
  firstWorkerStopAtMs: number;
  workerStopEveryMs: number;
  /** How long a stopped worker stays stopped: past its lease, so its late acks must be refused. */
  workerStopMs: number;
  /** When a queue server is SIGKILLed (the two in turn), and how long it stays down. */
  serverKillsAtMs: readonly number[];
  serverDownMs: number;
  /** Database faults: a crash (SIGKILL of every process) or a clean restart, and how long it stays down. */
  databaseFaults: readonly { atMs: number; kind: 'crash' | 'restart'; downMs: number }[];
  /** How long the jobs may take to drain once the faults stop. */
  drainTimeoutMs: number;
  /** Redelivery p99 after a kill with a backlog that the run asserts, or `undefined` to only print it. */
  redeliveryP99LimitMs?: number;
  /** Stale acks refused that the run requires at least. */
  minStaleAcksRefused: number;
}

export const SHORT_PROFILE: ChaosProfile = {
  name: 'short',
  singles: 3_000,
  produceOverMs: 28_000,
  producerLoops: 6,
  keyedShare: 0.5,
  backlogThreshold: 5_000,
  chaosMs: 30_000,
  workers: 3,
  concurrency: 4,
  workMs: [5, 30],
  firstWorkerKillAtMs: 3_000,
  workerKillEveryMs: 4_000,
  firstWorkerStopAtMs: 5_000,
  workerStopEveryMs: 12_000,
  workerStopMs: CHAOS_LEASE_MS + 2_500,
  serverKillsAtMs: [8_000, 20_000],
  serverDownMs: 500,
  databaseFaults: [
    { atMs: 13_000, kind: 'crash', downMs: 1_000 },
    { atMs: 25_000, kind: 'restart', downMs: 500 },
  ],
  drainTimeoutMs: 45_000,
  minStaleAcksRefused: 0,
};

export const FULL_PROFILE: ChaosProfile = {
  name: 'full',
  singles: 8_000,
  produceOverMs: 150_000,
  producerLoops: 8,
  keyedShare: 0.5,
  backlog: { atMs: 45_000, jobs: 12_000, batchSize: 500 },
  backlogThreshold: 5_000,
  chaosMs: 170_000,
  workers: 3,
  concurrency: 6,
  workMs: [60, 100],
  firstWorkerKillAtMs: 3_000,
  workerKillEveryMs: 2_500,
  firstWorkerStopAtMs: 7_000,
  workerStopEveryMs: 15_000,
  workerStopMs: CHAOS_LEASE_MS + 2_500,
  // Servers and the database are left alone from 40 s to 100 s, while the backlog is largest: worker kills
  // there time redelivery through the queue alone. Before it jobs are handed over; after it, everything fails.
  serverKillsAtMs: [12_000, 32_000, 105_000, 125_000, 150_000, 165_000],
  serverDownMs: 1_000,
  databaseFaults: [
    { atMs: 22_000, kind: 'crash', downMs: 2_000 },
    { atMs: 115_000, kind: 'restart', downMs: 1_000 },
    { atMs: 140_000, kind: 'crash', downMs: 1_000 },
  ],
  drainTimeoutMs: 240_000,
  redeliveryP99LimitMs: CHAOS_LEASE_MS + 2_000,
  minStaleAcksRefused: 1,
};
