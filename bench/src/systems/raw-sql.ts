import pg from 'pg';
import { RUN_ID, SERVICES } from '../config.ts';
import { sleep } from '../stats.ts';
import { startBatchConsumer } from './batch-consumer.ts';
import { timeClaimOne } from './claim-one.ts';
import { dropSchema, pgQuery, schemaName } from './pg-admin.ts';
import type { BenchSystem, QueueUnderTest } from './types.ts';

const IDLE_POLL_MS = 5;

interface RawJob {
  id: string;
  n: number;
}

/**
 * How the raw baselines consume: batches from `claim`, each acked by `ack` in one statement. No NOTIFY (on
 * PostgreSQL it serializes committing transactions on a global lock): an idle consumer polls every 5 ms.
 */
export function pollingConsumer<J extends { n: number }>(
  claim: (limit: number) => Promise<J[]>,
  ack: (jobs: J[]) => Promise<void>,
): QueueUnderTest['consume'] {
  return async (concurrency, onJob) =>
    startBatchConsumer({
      concurrency,
      claim,
      handle: (job) => onJob(job.n),
      ack,
      waitForWork: () => sleep(IDLE_POLL_MS),
    });
}

/**
 * The limit of the database itself: a minimal job table, claim with
 * `UPDATE … WHERE id IN (SELECT … FOR UPDATE SKIP LOCKED) RETURNING` in
 * batches of up to 50, one `UPDATE … WHERE id = ANY(…)` ack per batch; an
 * idle consumer polls every 5 ms.
 */
async function openRawQueue(tag: string): Promise<QueueUnderTest> {
  const schema = schemaName(`raw_${RUN_ID}`, tag);
  const t = `"${schema}".jobs`;
  await pgQuery(`CREATE SCHEMA "${schema}"`);
  await pgQuery(`CREATE TABLE ${t} (id bigserial PRIMARY KEY, payload jsonb NOT NULL, state smallint NOT NULL DEFAULT 0,
    locked_at timestamptz, finished_at timestamptz)`);
  await pgQuery(`CREATE INDEX ON ${t} (id) WHERE state = 0`);
  const pool = new pg.Pool({ connectionString: SERVICES.postgresUrl, max: 20 });
  const claim = async (limit: number): Promise<RawJob[]> => {
    const { rows } = await pool.query<{ id: string; payload: { n: number } }>(
      `UPDATE ${t} SET state = 1, locked_at = now() WHERE id IN (
         SELECT id FROM ${t} WHERE state = 0 ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
       RETURNING id, payload`,
      [Math.min(limit, 50)],
    );
    return rows.map((r) => ({ id: r.id, n: r.payload.n }));
  };
  const ack = async (jobs: RawJob[]) => {
    await pool.query(`UPDATE ${t} SET state = 2, finished_at = now() WHERE id = ANY($1::bigint[])`, [
      jobs.map((j) => j.id),
    ]);
  };
  return {
    enqueueOne: async (n) => {
      await pool.query(`INSERT INTO ${t} (payload) VALUES ($1)`, [{ n }]);
    },
    enqueueBulk: async (from, count) => {
      await pool.query(
        `INSERT INTO ${t} (payload) SELECT jsonb_build_object('n', g) FROM generate_series($1::int, $2::int) g`,
        [from, from + count - 1],
      );
    },
    consume: pollingConsumer(claim, ack),
    countCompleted: async () =>
      Number((await pool.query<{ c: string }>(`SELECT count(*) AS c FROM ${t} WHERE state = 2`)).rows[0]?.c),
    seedReady: async (count) => {
      await pool.query(
        `INSERT INTO ${t} (payload) SELECT jsonb_build_object('n', g) FROM generate_series(0, $1::int - 1) g`,
        [count],
      );
      await pool.query(`VACUUM ANALYZE ${t}`);
    },
    seedFinished: async (count) => {
      await pool.query(
        `INSERT INTO ${t} (payload, state, finished_at) SELECT jsonb_build_object('n', g), 2, now() FROM generate_series(0, $1::int - 1) g`,
        [count],
      );
      await pool.query(`VACUUM ANALYZE ${t}`);
    },
    claimOne: () => timeClaimOne(() => claim(1), ack),
    close: async () => {
      await pool.end();
      await dropSchema(schema);
    },
  };
}

export const rawSqlSystem: BenchSystem = {
  id: 'raw-sql-pg',
  label: 'raw SQL baseline (SKIP LOCKED, batches of 50), PostgreSQL',
  supports: { latency: true, claim: true, history: true },
  open: openRawQueue,
};
