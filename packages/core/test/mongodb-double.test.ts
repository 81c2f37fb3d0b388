import type { MongoClient } from 'mongodb';
import { createMongoStore } from '../src/stores/mongodb/index.ts';
import { describeStore } from './conformance/describe-store.ts';
import { createMongoDriverDouble } from './support/mongodb-double.ts';

// The MongoDB store through the whole conformance suite, over a mingo-based
// double of the driver calls it makes (no MongoDB server exists here).
describeStore('mongodb (double)', async () => {
  const double = createMongoDriverDouble();
  const client = double.client as unknown as MongoClient;
  return {
    open: () => createMongoStore({ client, dbName: 'workq_conformance', notify: false }),
    close: async () => {
      double.databases.clear();
    },
    separateConnections: false,
    scaleSkipReason: 'the mingo double scans documents without indexes; claim cost at scale is proven on real MongoDB',
  };
});
