/**
 * What the core tests and the end-to-end tests share: waits, free ports, a
 * TCP proxy that stands for an outage, a fake MongoDB primary that speaks the
 * wire protocol to the real driver, and the test databases — their URLs
 * (each overridable from the environment), whether they can be reached, and
 * fresh schemas or databases for one test file. Nothing here knows workq:
 * helpers that need `@workq/core` stay beside the tests that use them.
 */

export type { FreshMongoDatabase } from './mongodb.ts';
export { freshMongoDatabase, MONGODB_URI, mongoUnreachableReason } from './mongodb.ts';
export type { Doc, IndexSpec } from './mongodb-wire/data.ts';
export {
  CollectionData,
  cloneDoc,
  duplicateKeyError,
  projected,
  updatedDoc,
  upsertSeed,
  valueAt,
  writeError,
} from './mongodb-wire/data.ts';
export type { FailCommandData } from './mongodb-wire/fail-points.ts';
export type { PlanInput, PlannedIndex, QueryPlan } from './mongodb-wire/plan.ts';
export { impliesPartialFilter, planQuery } from './mongodb-wire/plan.ts';
export type { ChangeEntry, RecordedCommand } from './mongodb-wire/primary.ts';
export type { MongoWireDouble, MongoWireDoubleOptions } from './mongodb-wire/server.ts';
export { DEFAULT_ELECTION_MS, failCommandAfter, startMongoWireDouble } from './mongodb-wire/server.ts';
export type { FreshMysqlDatabase } from './mysql.ts';
export { freshMysqlDatabase, MYSQL_URL, mysqlUnreachableReason, mysqlUrl } from './mysql.ts';
export { shownUrl, uniqueName } from './names.ts';
export { freePort } from './ports.ts';
export type { FreshPostgresSchema } from './postgres.ts';
export { freshPostgresSchema, POSTGRES_URL, postgresUnreachableReason } from './postgres.ts';
export type { PrivateMariadb, PrivateMariadbOptions } from './private-mariadb.ts';
export { startPrivateMariadb } from './private-mariadb.ts';
export type { TcpProxy } from './tcp-proxy.ts';
export { startTcpProxy } from './tcp-proxy.ts';
export { until, waitFor } from './waits.ts';
