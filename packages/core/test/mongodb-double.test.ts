import type { MongoClient } from 'mongodb';
import { createMongoStore } from '../src/stores/mongodb/index.ts';
import { describeStore } from './conformance/describe-store.ts';
import { CONFORMANCE_STORE_OPTIONS } from './support/mongodb-conformance.ts';
import { createMongoDriverDouble } from './support/mongodb-double.ts';

// The MongoDB store through the whole conformance suite, over a mingo-based
// double of the driver calls it makes (no MongoDB server exists here).
describeStore('mongodb (double)', async () => {
  // A replica set's member, with the TTL monitor running by today's date, as on a real deployment.
  const double = createMongoDriverDouble({ replicaSet: 'rs0', ttlMonitor: true });
  const client = double.client as unknown as MongoClient;
  return {
    open: () => createMongoStore({ client, dbName: 'workq_conformance', notify: false, ...CONFORMANCE_STORE_OPTIONS }),
    close: async () => {
      double.databases.clear();
    },
    separateConnections: false,
    scaleSkipReason: 'the mingo double scans documents without indexes; claim cost at scale is proven on real MongoDB',
  };
});
