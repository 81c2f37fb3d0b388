import { PgBoss } from 'pg-boss';
import { RUN_ID, SERVICES } from '../config.ts';
import { timeClaimOne } from './claim-one.ts';
import { dropSchema, pgQuery, schemaName } from './pg-admin.ts';
import type { BenchSystem, QueueUnderTest } from './types.ts';

const QUEUE = 'bench';

/**
 * pg-boss 12.35.0 on the local PostgreSQL, schema per scenario, configured for
 * throughput as its docs advise: `work()` with `batchSize` = concurrency and
 * `burstWhenBatchFull`, LISTEN/NOTIFY on (`useListenNotify` + a `notify` queue).
 */
async function openBossQueue(tag: string): Promise<QueueUnderTest> {
  const schema = schemaName(`boss_${RUN_ID}`, tag);
  const boss = new PgBoss({
    connectionString: SERVICES.postgresUrl,
    schema,
    max: 20,
    useListenNotify: true,
    schedule: false,
    supervise: false,
  });
  boss.on('error', (error: unknown) => console.error('pg-boss error', error));
  await boss.start();
  await boss.createQueue(QUEUE, { notify: true });
  let working = false;
  return {
    enqueueOne: async (n) => {
      await boss.send(QUEUE, { n });
    },
    enqueueBulk: async (from, count) => {
      await boss.insert(
        QUEUE,
        Array.from({ length: count }, (_, i) => ({ data: { n: from + i } })),
      );
    },
    consume: async (concurrency, onJob) => {
      working = true;
      await boss.work<{ n: number }>(
        QUEUE,
        // At batchSize 1 pg-boss ignores burstWhenBatchFull and fetches once per polling interval, so
        // concurrency 1 uses batches of 2 run one after the other in one handler: still one job at a time.
        { batchSize: Math.max(2, concurrency), burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 },
        async (jobs) => {
          for (const job of jobs) onJob(job.data.n);
        },
      );
      return {
        stop: async () => {
          await boss.offWork(QUEUE, { wait: true });
          working = false;
        },
      };
    },
    countCompleted: async () =>
      Number(
        (
          await pgQuery<{ c: string }>(
            `SELECT count(*) AS c FROM "${schema}".job WHERE name = $1 AND state = 'completed'`,
            [QUEUE],
          )
        )[0]?.c,
      ),
    seedReady: async (count) => {
      // Rows as `insert()` writes them: the queue's policy and defaults, `created` state, due now.
      await pgQuery(
        `INSERT INTO "${schema}".job (name, data, policy)
         SELECT $1, jsonb_build_object('n', g), (SELECT policy FROM "${schema}".queue WHERE name = $1)
         FROM generate_series(0, $2::int - 1) g`,
        [QUEUE, count],
      );
      await pgQuery(`VACUUM ANALYZE "${schema}".job`);
    },
    claimOne: () =>
      timeClaimOne(
        () => boss.fetch(QUEUE, { batchSize: 1 }),
        async (jobs) => {
          await boss.complete(
            QUEUE,
            jobs.map((j) => j.id),
          );
        },
      ),
    close: async () => {
      if (working) await boss.offWork(QUEUE).catch(() => undefined);
      await boss.stop({ graceful: true, close: true, timeout: 5_000 });
      await dropSchema(schema);
    },
  };
}

export const pgBossSystem: BenchSystem = {
  id: 'pg-boss-pg',
  label: 'pg-boss 12.35.0, PostgreSQL',
  supports: { latency: true, claim: true, history: false },
  notAvailable: { history: 'the history scenario is workq-only (issue); peers are not run' },
  open: openBossQueue,
};
