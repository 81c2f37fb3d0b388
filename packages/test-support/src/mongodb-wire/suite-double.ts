import { MongoClient, type MongoServerError } from 'mongodb';
import { afterAll, beforeAll } from 'vitest';
import { type MongoWireDouble, startMongoWireDouble } from './server.ts';

/** A test suite's fake primary, its database `wire`, and a driver client connected to it. */
export interface WireSuite {
  double: MongoWireDouble;
  client: MongoClient;
}

/**
 * Starts a fake primary and connects a client to it before the tests of the `describe` block that calls it,
 * and closes both after them. The fields are set once the block's `beforeAll` hooks have run.
 */
export function wireDoubleSuite(): WireSuite {
  const suite = {} as WireSuite;
  beforeAll(async () => {
    suite.double = await startMongoWireDouble({ database: 'wire' });
    suite.client = new MongoClient(suite.double.url, { serverSelectionTimeoutMS: 5_000 });
    await suite.client.connect();
  });
  afterAll(async () => {
    await suite.client?.close();
    await suite.double?.close();
  });
  return suite;
}

/** What the server answered a call it refused with: its code, code name and message (all `undefined` if it ran). */
export async function refusalOf(work: Promise<unknown>) {
  const error = (await work.then(
    () => undefined,
    (thrown: unknown) => thrown,
  )) as MongoServerError | undefined;
  return { code: error?.code, codeName: error?.codeName, message: error?.message };
}
