import { shownUrl, uniqueName } from './names.ts';

/** A real MongoDB replica set, where `WORKQ_TEST_MONGODB_URI` names one (the hosted CI workflow starts one). */
export const MONGODB_URI = process.env.WORKQ_TEST_MONGODB_URI;

/** A database of its own on the real MongoDB server, for one test file: its URL, and how to drop it. */
export interface FreshMongoDatabase {
  database: string;
  url: string;
  drop: () => Promise<void>;
}

/** A new database name on `MONGODB_URI`'s server (MongoDB creates it on first write). Needs `MONGODB_URI`. */
export function freshMongoDatabase(prefix = 'workq_t'): FreshMongoDatabase {
  const uri = requiredUri();
  const database = uniqueName(prefix);
  const url = new URL(uri);
  url.pathname = `/${database}`;
  return {
    database,
    url: url.toString(),
    drop: async () => {
      const { MongoClient } = await import('mongodb');
      const client = new MongoClient(uri, { serverSelectionTimeoutMS: 5_000 });
      try {
        await client.db(database).dropDatabase();
      } finally {
        await client.close();
      }
    },
  };
}

let reachability: Promise<string | undefined> | undefined;

/** Why no real MongoDB can be reached, or `undefined` when one can. Checked once per test file. */
export function mongoUnreachableReason(): Promise<string | undefined> {
  if (MONGODB_URI === undefined) {
    return Promise.resolve('WORKQ_TEST_MONGODB_URI is unset; no MongoDB server runs on this machine');
  }
  reachability ??= (async () => {
    const { MongoClient } = await import('mongodb');
    const client = new MongoClient(MONGODB_URI, { serverSelectionTimeoutMS: 5_000 });
    try {
      await client.db('admin').command({ ping: 1 });
      return undefined;
    } catch (error) {
      return `MongoDB not reachable at ${shownUrl(MONGODB_URI)}: ${(error as Error).message}`;
    } finally {
      await client.close();
    }
  })();
  return reachability;
}

function requiredUri(): string {
  if (MONGODB_URI === undefined) throw new Error('WORKQ_TEST_MONGODB_URI is unset');
  return MONGODB_URI;
}
