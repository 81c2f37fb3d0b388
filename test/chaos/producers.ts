/**
 * The chaos run's producers, in the parent process, through the SDK: loops
 * that enqueue one job at a time at a paced rate (half with an idempotency
 * key, half without, so the server's handoff path runs), and optionally one
 * bulk enqueue that builds a backlog. A failed enqueue is retried, a keyed one
 * with the same key; an unkeyed one retried after a failure whose outcome is
 * unknown may have made a second job, which the checks account for.
 */
import { isWorkqError } from '@workq/core';
import { createClient } from '@workq/sdk';
import { chaosJobs } from './catalog.ts';
import { type FailoverFetch, failoverFetch } from './failover-fetch.ts';

export interface ProducerPlan {
  /** Server base URLs; loop i starts on server i modulo their number. */
  urls: readonly string[];
  token: string;
  /** Jobs enqueued one at a time. */
  singles: number;
  /** Loops enqueueing side by side. */
  loops: number;
  /** Target enqueues per second over all loops. */
  ratePerSec: number;
  /** Share of the single enqueues made with an idempotency key. */
  keyedShare: number;
  /** Handler time of each job, in milliseconds. */
  workMs: () => number;
  /** Unique per run: idempotency keys are `<runId>:<seq>`. */
  runId: string;
  /** Epoch ms after which a failing enqueue is given up (reported, and failing the run). */
  giveUpAt: number;
  /** A backlog enqueued in bulk (`enqueueMany`, unkeyed) `atMs` after the start, in batches of `batchSize`. */
  backlog?: { atMs: number; jobs: number; batchSize: number };
}

/** An enqueue the server acknowledged. */
export interface Acknowledged {
  seq: number;
  id: string;
  keyed: boolean;
  /** `false`: a keyed retry found the job its earlier, unanswered attempt had made. */
  created: boolean;
  /** An earlier attempt failed with an unknown outcome (so an unkeyed one may have made a job too). */
  uncertain: boolean;
  at: number;
}

export interface ProducerFigures {
  acknowledged: Acknowledged[];
  /** The idempotency key the producers sent with a sequence number; `undefined` for an unkeyed one. */
  keyOf: (seq: number) => string | undefined;
  /** What every key the producers made starts with. */
  keyPrefix: string;
  /** Sequence numbers whose enqueue was given up; each fails the run. */
  givenUp: { seq: number; error: string }[];
  keyedRetries: number;
  unkeyedRetries: number;
  /** Failed attempts by error code. */
  failures: Record<string, number>;
  /** The first message seen of each error code. */
  failureExamples: Record<string, string>;
  /** Requests sent again to the other server after theirs refused the connection (never sent, so no retry). */
  failovers: number;
}

const RETRY_DELAY_MS = 250;

/**
 * The harness retries enqueues itself, and counts each retry. An SDK that retries on its own would hide them,
 * and would send the unkeyed enqueues under keys it makes up, so no enqueue would take the handoff path.
 * (Spread, so that this compiles against an SDK without the option, too.)
 */
const NO_SDK_RETRIES = { enqueueRetries: 0 };

export async function runProducers(plan: ProducerPlan, stop: AbortSignal): Promise<ProducerFigures> {
  const keyedSeq = (seq: number) =>
    seq < plan.singles && Math.floor((seq + 1) * plan.keyedShare) > Math.floor(seq * plan.keyedShare);
  const keyOf = (seq: number) => (keyedSeq(seq) ? `${plan.runId}:${seq}` : undefined);
  const figures: ProducerFigures = {
    acknowledged: [],
    keyOf,
    keyPrefix: `${plan.runId}:`,
    givenUp: [],
    keyedRetries: 0,
    unkeyedRetries: 0,
    failures: {},
    failureExamples: {},
    failovers: 0,
  };
  const transports: FailoverFetch[] = [];
  const clientFor = (index: number) => {
    const urls = plan.urls.map((_, i) => plan.urls[(index + i) % plan.urls.length] as string);
    const transport = failoverFetch({ urls, timeoutMs: () => 15_000 });
    transports.push(transport);
    return createClient({
      url: urls[0] as string,
      jobs: chaosJobs,
      token: plan.token,
      fetch: transport.fetch,
      ...NO_SDK_RETRIES,
    });
  };
  const startedAt = Date.now();

  /** Runs `attempt` until it succeeds or the run gives up; resolves to whether an earlier try's outcome was unknown. */
  const withRetries = async (
    seqs: readonly number[],
    keyed: boolean,
    attempt: () => Promise<void>,
  ): Promise<boolean | undefined> => {
    let uncertain = false;
    for (;;) {
      try {
        await attempt();
        return uncertain;
      } catch (error) {
        const code = isWorkqError(error) ? error.code : 'OTHER';
        figures.failures[code] = (figures.failures[code] ?? 0) + 1;
        figures.failureExamples[code] ??= (error as Error).message.slice(0, 300);
        const retryable = isWorkqError(error) && (error.retryable || error.code === 'TIMEOUT');
        if (!retryable || Date.now() > plan.giveUpAt || stop.aborted) {
          for (const seq of seqs) figures.givenUp.push({ seq, error: `${code}: ${(error as Error).message}` });
          return undefined;
        }
        uncertain = true;
        if (keyed) figures.keyedRetries += seqs.length;
        else figures.unkeyedRetries += seqs.length;
        await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS));
      }
    }
  };

  let next = 0;
  const loop = async (index: number) => {
    const sdk = clientFor(index);
    for (;;) {
      const seq = next++;
      if (seq >= plan.singles || stop.aborted) return;
      const dueAt = startedAt + (seq * 1000) / plan.ratePerSec;
      if (dueAt > Date.now()) await new Promise((resolve) => setTimeout(resolve, dueAt - Date.now()));
      // Spread over the sequence, so keyed and unkeyed jobs interleave in time.
      const key = keyOf(seq);
      const keyed = key !== undefined;
      const payload = { seq, keyed, workMs: plan.workMs() };
      const options = key === undefined ? {} : { idempotencyKey: key };
      let handle: { id: string; created: boolean } | undefined;
      const uncertain = await withRetries([seq], keyed, async () => {
        handle = await sdk.enqueue.chaosJob(payload, options);
      });
      if (uncertain !== undefined && handle) {
        figures.acknowledged.push({ seq, id: handle.id, keyed, created: handle.created, uncertain, at: Date.now() });
      }
    }
  };

  const backlog = async () => {
    const bulk = plan.backlog;
    if (!bulk) return;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, startedAt + bulk.atMs - Date.now())));
    const sdk = clientFor(0);
    for (let first = 0; first < bulk.jobs && !stop.aborted; first += bulk.batchSize) {
      const seqs = Array.from(
        { length: Math.min(bulk.batchSize, bulk.jobs - first) },
        (_, i) => plan.singles + first + i,
      );
      const payloads = seqs.map((seq) => ({ seq, keyed: false, workMs: plan.workMs() }));
      let handles: { id: string; created: boolean }[] = [];
      const uncertain = await withRetries(seqs, false, async () => {
        handles = await sdk.enqueueMany.chaosJob(payloads);
      });
      if (uncertain === undefined) continue;
      for (const [i, seq] of seqs.entries()) {
        const handle = handles[i] as { id: string; created: boolean };
        figures.acknowledged.push({ seq, id: handle.id, keyed: false, created: true, uncertain, at: Date.now() });
      }
    }
  };

  await Promise.all([...Array.from({ length: plan.loops }, (_, i) => loop(i)), backlog()]);
  figures.failovers = transports.reduce((sum, transport) => sum + transport.failovers, 0);
  return figures;
}
