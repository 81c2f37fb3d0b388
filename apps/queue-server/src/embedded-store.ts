import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Store } from '@workq/core/engine';
import type { Logger } from './options.ts';

/** A store the server owns, with whatever must stop alongside it. */
export interface EmbeddedStore {
  store: Store;
  url: string;
  stop(): Promise<void>;
}

const MONGOD_START_TIMEOUT_MS = 20_000;

/**
 * The embedded default: MongoDB through mongodb-memory-server with its data
 * under `dataDir`; where no mongod binary can be had (offline machines),
 * PGlite under `dataDir`, said in one log line.
 */
export async function openEmbeddedStore(
  dataDir: string,
  logger: Logger,
  historyRetentionMs: number,
): Promise<EmbeddedStore> {
  const root = resolve(dataDir);
  await mkdir(root, { recursive: true });
  const mongo = await startEmbeddedMongo(join(root, 'mongodb')).catch((error: unknown) => error as Error);
  if (!(mongo instanceof Error)) {
    const { createMongoStore } = await import('@workq/core/mongodb');
    const store = await createMongoStore({ url: mongo.url, dbName: 'workq', historyRetentionMs });
    logger.info('embedded MongoDB store', { dataDir: join(root, 'mongodb') });
    return { store, url: mongo.url, stop: mongo.stop };
  }
  const pgliteDir = join(root, 'pglite');
  logger.warn(noMongoMessage(mongo, pgliteDir), { dataDir: pgliteDir });
  const { createPgliteStore } = await import('@workq/core/postgres');
  const store = await createPgliteStore({ dataDir: pgliteDir });
  return { store, url: `pglite://${pgliteDir}`, stop: async () => undefined };
}

/**
 * The one line that says the embedded store fell back to PGlite: why no mongod could be had (the whole
 * reason, on one line), where the data is kept, and what to do instead: point the server at a mongod, or
 * name PGlite as the store, which skips the MongoDB attempt on later starts.
 */
export function noMongoMessage(error: Error, pgliteDir: string): string {
  const reason = error.message.replace(/\s+/g, ' ').trim().slice(0, 300);
  return (
    `no MongoDB binary could be had (${reason}), so the embedded store is PostgreSQL (PGlite), ` +
    `its data under ${pgliteDir}. For MongoDB, set MONGOMS_SYSTEM_BINARY to a mongod or pass --store mongodb://…; ` +
    `to keep PGlite without this attempt, pass --store pglite://${pgliteDir}.`
  );
}

async function startEmbeddedMongo(dbPath: string): Promise<{ url: string; stop: () => Promise<void> }> {
  await mkdir(dbPath, { recursive: true });
  const { MongoBinary, MongoMemoryReplSet } = await import('mongodb-memory-server-core');
  // Resolving the binary first fails quietly offline, before the server would log a download stack trace.
  const systemBinary = await withOneDownloadAttempt(() => MongoBinary.getPath());
  const started = MongoMemoryReplSet.create({
    binary: { systemBinary },
    replSet: { count: 1, storageEngine: 'wiredTiger' },
    instanceOpts: [{ dbPath }],
  });
  const timeout = new Promise<never>((_, reject) =>
    setTimeout(() => reject(new Error('mongod did not start in time')), MONGOD_START_TIMEOUT_MS).unref(),
  );
  const replSet = await Promise.race([started, timeout]);
  return { url: replSet.getUri('workq'), stop: async () => void (await replSet.stop({ doCleanup: false })) };
}

/**
 * Runs `fetchBinary` with mongodb-memory-server allowed one download attempt, unless the user set
 * `MONGOMS_MAX_RETRIES`: its default of three, with backoff, holds an offline first start some seven seconds
 * before the fallback to PGlite. The variable is restored afterwards.
 */
async function withOneDownloadAttempt<T>(fetchBinary: () => Promise<T>): Promise<T> {
  const setByUser = process.env.MONGOMS_MAX_RETRIES;
  if (setByUser === undefined) process.env.MONGOMS_MAX_RETRIES = '1';
  try {
    return await fetchBinary();
  } finally {
    if (setByUser === undefined) delete process.env.MONGOMS_MAX_RETRIES;
  }
}
