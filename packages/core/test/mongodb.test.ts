import { MONGODB_URI } from '@workq/test-support';
import { MongoClient } from 'mongodb';
import { MongoMemoryReplSet } from 'mongodb-memory-server';
import { createMongoStore } from '../src/stores/mongodb/index.ts';
import { describeStore, type StoreHarness } from './conformance/describe-store.ts';
import { CONFORMANCE_STORE_OPTIONS } from './support/mongodb-conformance.ts';

/** How long mongodb-memory-server may take to obtain and start a mongod before the suite is skipped. */
const MEMORY_SERVER_TIMEOUT_MS = 20_000;

interface ReachableMongo {
  uri: string;
  /** Stops what this file started (the memory server), if anything. */
  stop: () => Promise<void>;
}

async function startMemoryReplSet(): Promise<ReachableMongo> {
  let timer: NodeJS.Timeout | undefined;
  const starting = MongoMemoryReplSet.create({ replSet: { count: 1 } });
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no mongod within ${MEMORY_SERVER_TIMEOUT_MS / 1000} s`)),
      MEMORY_SERVER_TIMEOUT_MS,
    );
  });
  try {
    const replSet = await Promise.race([starting, timeout]);
    return { uri: replSet.getUri(), stop: async () => void (await replSet.stop()) };
  } catch (error) {
    // A server that comes up after the timeout is stopped as soon as it does.
    starting.then((late) => late.stop()).catch(() => undefined);
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

function shortReason(error: unknown): string {
  const text = (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' ').trim();
  return text.length > 200 ? `${text.slice(0, 197)}...` : text;
}

async function findMongo(): Promise<ReachableMongo | { reason: string }> {
  if (MONGODB_URI) return { uri: MONGODB_URI, stop: async () => {} };
  try {
    return await startMemoryReplSet();
  } catch (error) {
    return { reason: shortReason(error) };
  }
}

const mongo = await findMongo();

/** A database of its own for this file, dropped at the end; every `open()` has its own client. */
async function makeHarness(found: ReachableMongo): Promise<StoreHarness> {
  const dbName = `workq_test_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  return {
    separateConnections: true,
    open: () => createMongoStore({ url: found.uri, dbName, ...CONFORMANCE_STORE_OPTIONS }),
    async close() {
      const client = new MongoClient(found.uri, { serverSelectionTimeoutMS: 3000 });
      try {
        await client.db(dbName).dropDatabase();
      } finally {
        await client.close();
        await found.stop();
      }
    },
  };
}

if ('uri' in mongo) {
  describeStore('mongodb (real)', () => makeHarness(mongo));
} else {
  describeStore('mongodb (real)', () => Promise.reject(new Error('unreachable')), {
    skipReason: `no MongoDB reachable: WORKQ_TEST_MONGODB_URI is unset and mongodb-memory-server could not obtain a mongod (${mongo.reason})`,
  });
}
