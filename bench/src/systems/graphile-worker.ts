import { Logger, makeWorkerUtils, run, type WorkerUtils } from 'graphile-worker';
import { RUN_ID, SERVICES } from '../config.ts';
import { dropSchema, pgQuery, schemaName } from './pg-admin.ts';
import type { BenchSystem, QueueUnderTest } from './types.ts';

const TASK = 'bench_noop';
const quietLogger = new Logger(() => (level, message) => {
  if (level === 'error') console.error(`graphile-worker: ${message}`);
});

/**
 * graphile-worker 0.18.0 on the local PostgreSQL, schema per scenario, tuned
 * for throughput as its performance docs advise: a local queue (jobs fetched
 * in batches) and batched completion (`completeJobBatchDelay: 0`).
 * It deletes jobs once completed, so "completed" = enqueued − rows left.
 */
async function openGraphileQueue(tag: string): Promise<QueueUnderTest> {
  const schema = schemaName(`gw_${RUN_ID}`, tag);
  const utils: WorkerUtils = await makeWorkerUtils({
    connectionString: SERVICES.postgresUrl,
    schema,
    logger: quietLogger,
  });
  await utils.migrate();
  let enqueued = 0;
  return {
    enqueueOne: async (n) => {
      await utils.addJob(TASK, { n });
      enqueued++;
    },
    enqueueBulk: async (from, count) => {
      await utils.addJobs(Array.from({ length: count }, (_, i) => ({ identifier: TASK, payload: { n: from + i } })));
      enqueued += count;
    },
    consume: async (concurrency, onJob) => {
      const runner = await run({
        connectionString: SERVICES.postgresUrl,
        schema,
        concurrency,
        maxPoolSize: concurrency + 2,
        noHandleSignals: true,
        logger: quietLogger,
        taskList: {
          [TASK]: async (payload) => {
            onJob((payload as { n: number }).n);
          },
        },
        preset: {
          worker: {
            localQueue: { size: Math.max(2 * concurrency, 10) },
            completeJobBatchDelay: 0,
            failJobBatchDelay: 0,
          },
        },
      });
      return { stop: () => runner.stop() };
    },
    countCompleted: async () => {
      const left = Number((await pgQuery<{ c: string }>(`SELECT count(*) AS c FROM "${schema}"._private_jobs`))[0]?.c);
      return enqueued - left;
    },
    close: async () => {
      await utils.release();
      await dropSchema(schema);
    },
  };
}

export const graphileWorkerSystem: BenchSystem = {
  id: 'graphile-worker-pg',
  label: 'graphile-worker 0.18.0, PostgreSQL',
  supports: { latency: true, claim: false, history: false },
  notAvailable: {
    claim: 'no public single-claim call (jobs are only fetched by its own worker loop)',
    history: 'the history scenario is workq-only (issue); peers are not run',
  },
  open: openGraphileQueue,
};
