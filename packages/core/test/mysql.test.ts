import mysql from 'mysql2/promise';
import { createMysqlStore } from '../src/stores/mysql/index.ts';
import { describeStore, type StoreHarness } from './conformance/describe-store.ts';
import { mysqlUnreachableReason, MYSQL_URL as url, withDatabase } from './support/mysql-server.ts';

/** Each run gets its own database, dropped when the suite ends; each `open()` has its own pool. */
async function makeMysqlHarness(): Promise<StoreHarness> {
  const database = `workq_t_${Math.random().toString(36).slice(2, 10)}`;
  const admin = await mysql.createConnection(url);
  try {
    await admin.query(`CREATE DATABASE \`${database}\``);
  } finally {
    await admin.end();
  }
  return {
    separateConnections: true,
    open: () => createMysqlStore({ url: withDatabase(database), poolSize: 4 }),
    async close() {
      const connection = await mysql.createConnection(url);
      try {
        await connection.query(`DROP DATABASE IF EXISTS \`${database}\``);
      } finally {
        await connection.end();
      }
    },
  };
}

const skipReason = await mysqlUnreachableReason();
describeStore('mysql', makeMysqlHarness, skipReason === undefined ? {} : { skipReason });
