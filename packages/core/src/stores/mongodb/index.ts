/**
 * `@workq/core/mongodb`: the MongoDB store, over the official `mongodb` driver.
 */
export { createMongoStore, type MongoStoreOptions } from './create-store.ts';
export { dropRetiredMongoIndexes } from './indexes.ts';
