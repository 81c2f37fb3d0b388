import mysql, { type Pool, type RowDataPacket } from 'mysql2/promise';
import { RUN_ID, SERVICES } from '../config.ts';
import { schemaName } from './pg-admin.ts';
import { pollingConsumer } from './raw-sql.ts';
import type { BenchSystem, QueueUnderTest } from './types.ts';

const MAX_BATCH = 50;

interface RawJob {
  id: number;
  n: number;
}

async function adminQuery(sql: string): Promise<void> {
  const connection = await mysql.createConnection(SERVICES.mysqlUrl);
  try {
    await connection.query(sql);
  } finally {
    await connection.end();
  }
}

/** Claims up to `limit` ready jobs: lock them in id order, skipping locked rows, and mark them taken, in one transaction. */
async function claimBatch(pool: Pool, t: string, limit: number): Promise<RawJob[]> {
  const connection = await pool.getConnection();
  try {
    await connection.beginTransaction();
    const [rows] = await connection.query<RowDataPacket[]>(
      `SELECT id, payload FROM ${t} WHERE state = 0 ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED`,
      [Math.min(limit, MAX_BATCH)],
    );
    if (rows.length > 0) {
      await connection.query(`UPDATE ${t} SET state = 1, locked_at = NOW(3) WHERE id IN (?)`, [
        rows.map((row) => row.id),
      ]);
    }
    await connection.commit();
    // mysql2 parses a JSON column as it reads the row.
    return rows.map((row) => ({ id: row.id as number, n: (row.payload as { n: number }).n }));
  } catch (error) {
    await connection.rollback().catch(() => undefined);
    throw error;
  } finally {
    connection.release();
  }
}

/**
 * The limit of MariaDB itself, written as raw-sql.ts is for PostgreSQL: a minimal job table with an index on
 * (state, id) for the claim (MariaDB has no partial index), sessions at READ COMMITTED (no gap locks); a claim
 * is one short transaction, `SELECT … ORDER BY id LIMIT n FOR UPDATE SKIP LOCKED` with n = min(concurrency, 50)
 * then one `UPDATE … WHERE id IN (…)` (MariaDB has no `UPDATE … RETURNING`); one autocommitted
 * `UPDATE … WHERE id IN (…)` acks a batch. An idle consumer polls every 5 ms.
 */
async function openRawMariadbQueue(tag: string): Promise<QueueUnderTest> {
  const database = schemaName(`raw_${RUN_ID}`, tag);
  const t = `\`${database}\`.jobs`;
  await adminQuery(`CREATE DATABASE \`${database}\``);
  await adminQuery(`CREATE TABLE ${t} (id BIGINT AUTO_INCREMENT PRIMARY KEY, payload JSON NOT NULL,
    state TINYINT NOT NULL DEFAULT 0, locked_at DATETIME(3), finished_at DATETIME(3), INDEX ready (state, id))`);
  const pool = mysql.createPool({ uri: SERVICES.mysqlUrl, connectionLimit: 20 });
  pool.pool.on('connection', (connection) => {
    connection.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED', () => undefined);
  });
  const claim = (limit: number) => claimBatch(pool, t, limit);
  const ack = async (jobs: RawJob[]) => {
    await pool.query(`UPDATE ${t} SET state = 2, finished_at = NOW(3) WHERE id IN (?)`, [jobs.map((j) => j.id)]);
  };
  return {
    enqueueOne: async (n) => {
      await pool.query(`INSERT INTO ${t} (payload) VALUES (?)`, [JSON.stringify({ n })]);
    },
    enqueueBulk: async (from, count) => {
      // The Sequence engine's seq_<from>_to_<to> table generates the rows on the server, as generate_series does.
      await pool.query(
        `INSERT INTO ${t} (payload) SELECT JSON_OBJECT('n', seq) FROM \`${database}\`.seq_${from}_to_${from + count - 1} ORDER BY seq`,
      );
    },
    consume: pollingConsumer(claim, ack),
    countCompleted: async () => {
      const [rows] = await pool.query<RowDataPacket[]>(`SELECT COUNT(*) AS c FROM ${t} WHERE state = 2`);
      return Number(rows[0]?.c);
    },
    close: async () => {
      await pool.end();
      await adminQuery(`DROP DATABASE IF EXISTS \`${database}\``);
    },
  };
}

const notSeeded = 'as for workq core on MariaDB, no seeding path was built';

export const rawSqlMariadbSystem: BenchSystem = {
  id: 'raw-sql-mariadb',
  label: 'raw SQL baseline (SKIP LOCKED, batches of 50), MariaDB',
  supports: { latency: true, claim: false, history: false },
  notAvailable: { claim: notSeeded, history: notSeeded },
  open: openRawMariadbQueue,
};
