import { startMongoWireDouble, until } from '@workq/test-support';
import { afterAll, describe, expect, it } from 'vitest';
import { createMongoStore } from '../src/stores/mongodb/index.ts';
import { describeStore } from './conformance/describe-store.ts';
import { CONFORMANCE_STORE_OPTIONS } from './support/mongodb-conformance.ts';
import { untargetedJobWrites, writeStatements } from './support/mongodb-writes.ts';

// The MongoDB store through the whole conformance suite under the real
// driver, against a fake primary that speaks the wire protocol (no MongoDB
// server exists here): every store opened has its own client, as separate
// processes would, and the TTL monitor runs by today's date.
const dbName = 'workq_conformance';
const double = await startMongoWireDouble({ database: dbName, ttlMonitor: true });

describeStore('mongodb (wire double)', async () => ({
  separateConnections: true,
  open: () => createMongoStore({ url: double.url, dbName, ...CONFORMANCE_STORE_OPTIONS }),
  close: async () => {
    double.state.databases.delete(dbName);
  },
  scaleSkipReason:
    'the wire double does not model what its indexes cost; claim cost at scale is proven on real MongoDB',
}));

describe('mongodb (wire double): what the store sent in that run', () => {
  afterAll(() => double.close());

  const jobsCommands = () =>
    double.commands.filter((command) => command.db === dbName && Object.values(command.body)[0] === 'workq_jobs');

  it('opened every change stream at read concern majority (or none)', async () => {
    // The suite opens stores without waiting on wake-ups: one store subscribes and publishes here.
    const store = await createMongoStore({ url: double.url, dbName, ...CONFORMANCE_STORE_OPTIONS });
    try {
      const heard: string[] = [];
      const unsubscribe = await store.notifier?.subscribe((name) => heard.push(name));
      await store.notifier?.publish('probe');
      await until(() => heard.includes('probe'), 10_000, 10);
      await unsubscribe?.();
    } finally {
      await store.close();
    }
    const streams = double.commands.filter((command) => command.body.pipeline?.[0]?.$changeStream !== undefined);
    expect(streams.length).toBeGreaterThan(0);
    for (const stream of streams) expect([undefined, 'majority']).toContain(stream.body.readConcern?.level);
  });

  it('read jobs from the primary only', () => {
    const reads = jobsCommands().filter((command) => ['find', 'aggregate', 'count', 'distinct'].includes(command.name));
    expect(reads.length).toBeGreaterThan(0);
    for (const read of reads) expect([undefined, 'primary']).toContain(read.body.$readPreference?.mode);
  });

  it('named the job type in every write statement to jobs, so each is targeted on a collection sharded by it', () => {
    expect(jobsCommands().flatMap(writeStatements).length).toBeGreaterThan(0);
    expect(untargetedJobWrites(double.commands, dbName)).toEqual([]);
  });

  it('hinted only indexes that exist and that the query can use', () => {
    const hinted = double.commands.filter((command) => command.queries.some((query) => query.index !== undefined));
    expect(hinted.length).toBeGreaterThan(0);
    expect(double.commands.flatMap((command) => command.refusedHints)).toEqual([]);
  });
});
