export {
  createPgliteStore,
  createPostgresStore,
  type PgliteStoreOptions,
  type PostgresStoreOptions,
} from './create-store.ts';
