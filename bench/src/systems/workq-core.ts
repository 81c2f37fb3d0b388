import { type ClaimedJob, createEngine, type Engine, newLeaseToken, openStore } from '@workq/core/engine';
import { RUN_ID, SERVICES } from '../config.ts';
import { startBatchConsumer, WakeSignal } from './batch-consumer.ts';
import { BENCH_JOB, PLAIN_TWIN_JOB } from './bench-jobs.ts';
import { timeClaimOne } from './claim-one.ts';
import { createDatabase, dropDatabase } from './mariadb-admin.ts';
import { dropSchema, pgQuery, schemaName } from './pg-admin.ts';
import { timeStore } from './round-trips.ts';
import type { BenchSystem, QueueUnderTest } from './types.ts';
import { coreFlows } from './workq-core-flows.ts';
import { seedWorkqJobs } from './workq-seed.ts';

type Backend = 'pg' | 'pglite' | 'mariadb';

interface OpenedStore {
  url: string;
  schema?: string;
  drop(): Promise<void>;
}

async function prepareStore(backend: Backend, tag: string): Promise<OpenedStore> {
  if (backend === 'pglite') return { url: 'pglite://memory', drop: async () => undefined };
  if (backend === 'pg') {
    const schema = schemaName(`wq_core_${RUN_ID}`, tag);
    return { url: `${SERVICES.postgresUrl}?schema=${schema}`, schema, drop: () => dropSchema(schema) };
  }
  const database = schemaName(`wq_${RUN_ID}`, tag);
  return { url: await createDatabase(database), drop: () => dropDatabase(database) };
}

/** Enqueue, claim and ack straight through `Engine`, in this process, with no HTTP. */
async function openCoreQueue(backend: Backend, tag: string, timeRoundTrips: boolean): Promise<QueueUnderTest> {
  const prepared = await prepareStore(backend, tag);
  const opened = await openStore(prepared.url);
  const store = timeRoundTrips ? timeStore(opened, `workq-core-${backend}`) : opened;
  const engine: Engine = createEngine({ store });
  const wake = new WakeSignal();
  const unlisten = engine.onReady(() => wake.wake());
  const workerId = `bench-${process.pid}`;
  const claimOf = (name: string, limit: number) => engine.claim({ name, maxVersion: 1, limit, workerId });
  const claim = (limit: number) => claimOf(BENCH_JOB, limit);
  const completeJobs = async (jobs: readonly Pick<ClaimedJob, 'id' | 'leaseToken'>[]) => {
    await engine.completeMany(jobs.map((j) => ({ id: j.id, leaseToken: j.leaseToken })));
  };
  const complete = async (jobs: readonly Pick<ClaimedJob, 'id' | 'leaseToken'>[]) => {
    await completeJobs(jobs);
    // As the server's claim dispatcher does: claims held back by a concurrency limit wake when jobs finish.
    engine.freed(BENCH_JOB);
  };
  const ack = (jobs: ClaimedJob[]) => complete(jobs);
  const claimFromStore = () => {
    const now = new Date();
    const request = { name: BENCH_JOB, minVersion: 1, maxVersion: 1, limit: 1, workerId, leaseMs: null, now };
    const leaseToken = newLeaseToken(now);
    return store.claimJobs({ ...request, leaseToken }).then((records) => records.map(({ id }) => ({ id, leaseToken })));
  };
  const inputOf = (name: string, n: number) => ({ name, version: 1, payload: { n } });
  const input = (n: number) => inputOf(BENCH_JOB, n);
  const queue: QueueUnderTest = {
    enqueueOne: async (n) => {
      await engine.enqueue(input(n));
    },
    enqueueBulk: async (from, count) => {
      await engine.enqueueMany(Array.from({ length: count }, (_, i) => input(from + i)));
    },
    consume: async (concurrency, onJob) =>
      startBatchConsumer({
        concurrency,
        claim,
        handle: (job) => onJob((job.payload as { n: number }).n),
        ack,
        waitForWork: (ms) => wake.wait(ms),
      }),
    countCompleted: async () =>
      (await engine.counts()).filter((c) => c.state === 'completed').reduce((sum, c) => sum + c.count, 0),
    claimOne: () => timeClaimOne(() => claim(1), ack),
    claimOneFromStore: () => timeClaimOne(() => claimFromStore(), complete),
    plainTwin: {
      enqueueBulk: async (from, count) => {
        await engine.enqueueMany(Array.from({ length: count }, (_, i) => inputOf(PLAIN_TWIN_JOB, from + i)));
      },
      claimOne: () => timeClaimOne(() => claimOf(PLAIN_TWIN_JOB, 1), completeJobs),
    },
    setLimits: async (limits) => {
      await engine.setLimits(BENCH_JOB, limits);
    },
    enqueueGroupedBulk: async (from, count, group) => {
      const options = { group };
      await engine.enqueueMany(Array.from({ length: count }, (_, i) => ({ ...input(from + i), options })));
    },
    close: async () => {
      unlisten();
      await engine.close();
      await prepared.drop();
    },
  };
  const { schema } = prepared;
  if (backend === 'pg') queue.flows = coreFlows(engine, wake, workerId, () => queue.countCompleted());
  if (schema) {
    queue.seedReady = (count) => seedWorkqJobs(schema, BENCH_JOB, count, 'waiting', 0);
    queue.seedFinished = (count) => seedWorkqJobs(schema, BENCH_JOB, count, 'completed', 0);
    // counts() groups the whole table; with 1M rows of history that is the slow part, so count directly.
    queue.countCompleted = async () =>
      Number(
        (await pgQuery<{ c: string }>(`SELECT count(*) AS c FROM "${schema}".jobs WHERE state = 'completed'`))[0]?.c,
      );
  }
  return queue;
}

export function workqCoreSystem(backend: Backend, options: { timeRoundTrips: boolean }): BenchSystem {
  const labels = { pg: 'PostgreSQL', pglite: 'PGlite (in-memory)', mariadb: 'MariaDB' } as const;
  const sqlSeeding = backend === 'pg';
  const reason = 'built only for the local PostgreSQL server (bulk INSERT … SELECT into the store schema)';
  return {
    id: `workq-core-${backend}`,
    label: `workq core in-process, ${labels[backend]}`,
    supports: {
      latency: true,
      claim: sqlSeeding,
      history: sqlSeeding,
      flow: true,
      limitedClaim: true,
      flows: backend === 'pg',
    },
    ...(sqlSeeding ? {} : { notAvailable: { claim: reason, history: reason } }),
    open: (tag) => openCoreQueue(backend, tag, options.timeRoundTrips),
  };
}
