/**
 * A chaos worker: one consumer of `chaosJob` in its own process, run with
 * `node --import tsx`. Settings come from the environment:
 * CHAOS_URLS (comma-separated server URLs, the first its home), CHAOS_TOKEN,
 * CHAOS_RUN_LOG (the JSON-lines file it appends to, see run-log.ts; none: nothing is logged, as in the soak),
 * CHAOS_CONCURRENCY (default 4).
 *
 * Each lease it is handed, each handler start and end, each ack outcome and each lost lease
 * the server reports is logged, with the lease token where the wire carries it (the handler
 * itself never sees it). Prints `ready <pid>` once its worker runs; closes it on SIGTERM.
 */
import { isWorkqError } from '@workq/core';
import { createClient } from '@workq/sdk';
import { chaosJobs } from './catalog.ts';
import { failoverFetch } from './failover-fetch.ts';
import { appendRecords, type RunLogRecord } from './run-log.ts';

const urls = (process.env.CHAOS_URLS ?? '').split(',').filter(Boolean);
const runLog = process.env.CHAOS_RUN_LOG ?? '';
if (urls.length === 0) throw new Error('CHAOS_URLS is required');
const log = (records: readonly RunLogRecord[]) => {
  if (runLog !== '') appendRecords(runLog, records);
};
const concurrency = Number(process.env.CHAOS_CONCURRENCY ?? 4);
const POLL_WAIT_MS = 5_000;
const pid = process.pid;

interface WireLease {
  id: string;
  leaseToken: string;
  attempt: number;
  payload: { seq?: number };
}
interface WireItem {
  id: string;
  leaseToken: string;
}

/** The `json` part of a tRPC answer (superjson's `{ json, meta? }`); `undefined` for an error. */
function answerOf(text: string): unknown {
  try {
    return (JSON.parse(text) as { result?: { data?: { json?: unknown } } }).result?.data?.json;
  } catch {
    return undefined;
  }
}

function inputOf(body: string): Record<string, unknown> {
  try {
    return ((JSON.parse(body) as { json?: unknown }).json ?? {}) as Record<string, unknown>;
  } catch {
    return {};
  }
}

/** Logs what the wire says about leases: claims handed out, acks applied or refused, extensions refused. */
function observe(path: string, body: string, text: string, ok: boolean): void {
  if (!ok) return;
  const answer = answerOf(text);
  if (answer === undefined) return;
  const t = Date.now();
  const records: RunLogRecord[] = [];
  const ackOutcome = ({ id, leaseToken }: WireItem, ok: boolean) =>
    records.push({ k: 'ack', id, tok: leaseToken, ok, t, pid });
  if (path === 'consumer.claim') {
    const claimed = answer as { jobs: WireLease[]; completed: string[]; acksFailed: boolean };
    const carried = (inputOf(body).complete ?? []) as WireItem[];
    // Acks that failed in the store are sent again; only answered ones are outcomes. The answer names the jobs
    // completed, not the leases: a job carried under two leases has no outcome that can be told per lease.
    const completed = new Set(claimed.completed);
    const leases = new Map<string, number>();
    for (const { id } of carried) leases.set(id, (leases.get(id) ?? 0) + 1);
    for (const item of claimed.acksFailed ? [] : carried.filter(({ id }) => leases.get(id) === 1)) {
      ackOutcome(item, completed.has(item.id));
    }
    for (const job of claimed.jobs) {
      records.push({ k: 'claim', id: job.id, a: job.attempt, tok: job.leaseToken, seq: job.payload.seq ?? -1, t, pid });
    }
  } else if (path === 'consumer.complete') {
    // One outcome per item, in the items' order.
    const outcomes = answer as { id: string; ok: boolean }[];
    const items = (inputOf(body).items ?? []) as WireItem[];
    for (const [index, item] of items.entries()) ackOutcome(item, outcomes[index]?.ok === true);
  } else if (path === 'consumer.extend') {
    const outcomes = answer as { id: string; ok: boolean }[];
    const tokens = new Map(((inputOf(body).items ?? []) as WireItem[]).map((item) => [item.id, item.leaseToken]));
    for (const outcome of outcomes) {
      if (!outcome.ok) records.push({ k: 'extend-lost', id: outcome.id, tok: tokens.get(outcome.id) ?? '', t, pid });
    }
  }
  log(records);
}

const transport = failoverFetch({
  urls,
  timeoutMs: (path) => (path === 'consumer.claim' ? POLL_WAIT_MS + 15_000 : 15_000),
  ...(runLog === '' ? {} : { observe }),
});
const sdk = createClient({
  url: urls[0] as string,
  jobs: chaosJobs,
  token: process.env.CHAOS_TOKEN,
  fetch: transport.fetch,
});
const worker = sdk.consume(
  'chaosJob',
  async (job) => {
    const { seq, workMs } = job.payload;
    log([{ k: 'start', id: job.id, a: job.attempt, seq, t: Date.now(), pid }]);
    await new Promise((resolve) => setTimeout(resolve, workMs));
    log([{ k: 'end', id: job.id, a: job.attempt, seq, t: Date.now(), pid }]);
    return { seq, attempt: job.attempt, pid };
  },
  {
    concurrency,
    pollWaitMs: POLL_WAIT_MS,
    onError: (error) => {
      const code = isWorkqError(error) ? error.code : 'OTHER';
      const message = error instanceof Error ? error.message : String(error);
      log([{ k: 'error', code, message: message.slice(0, 300), t: Date.now(), pid }]);
    },
  },
);
process.once('SIGTERM', () => void worker.close().then(() => process.exit(0)));
process.stdout.write(`ready ${pid}\n`);
