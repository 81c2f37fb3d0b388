/**
 * `@workq/core/mysql`: the MySQL/MariaDB store, over `mysql2`.
 */
export { createMysqlStore, type MysqlStoreOptions } from './create-store.ts';
