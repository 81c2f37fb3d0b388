/**
 * A consumer in its own process, for crash tests. Settings come from the environment:
 * WORKQ_URL (server), WORKQ_RUN_LOG (file this process appends `<jobId> <attempt> <pid> <epochMs>` to,
 * once per handler run, before the work), WORKQ_CONCURRENCY (default 4), WORKQ_HANDLER_MS (default 5),
 * WORKQ_HANG_AFTER (optional: handler runs after this many never finish, so the process holds leases mid-job),
 * WORKQ_PREFETCH (default 0), WORKQ_POLL_WAIT_MS (default 2000).
 * Prints `ready <pid>` once started (its own pid: under tsx's launcher that is not the launcher's); closes its worker on SIGTERM.
 */
import { appendFileSync } from 'node:fs';
import { jobs } from '@workq/schemas';
import { createClient } from '@workq/sdk';

const url = process.env.WORKQ_URL;
const runLog = process.env.WORKQ_RUN_LOG;
if (!url || !runLog) throw new Error('WORKQ_URL and WORKQ_RUN_LOG are required');
const concurrency = Number(process.env.WORKQ_CONCURRENCY ?? 4);
const handlerMs = Number(process.env.WORKQ_HANDLER_MS ?? 5);
const hangAfter = Number(process.env.WORKQ_HANG_AFTER ?? Number.POSITIVE_INFINITY);
const prefetch = Number(process.env.WORKQ_PREFETCH ?? 0);
const pollWaitMs = Number(process.env.WORKQ_POLL_WAIT_MS ?? 2_000);
let runs = 0;

const sdk = createClient({ url, jobs });
const worker = sdk.consume(
  'imageConvert',
  async (job) => {
    // Synchronous, so the line is on disk before the process can be killed mid-job.
    appendFileSync(runLog, `${job.id} ${job.attempt} ${process.pid} ${Date.now()}\n`);
    runs += 1;
    if (runs > hangAfter) await new Promise(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, handlerMs));
    return { bytes: job.payload.quality };
  },
  {
    concurrency,
    prefetch,
    pollWaitMs,
    onError: (error) => process.stderr.write(`worker error: ${String(error)}\n`),
  },
);
process.once('SIGTERM', () => void worker.close().then(() => process.exit(0)));
process.stdout.write(`ready ${process.pid}\n`);
