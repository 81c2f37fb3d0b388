import { createPostgresBackend, Queue, Worker, withBackend } from 'bullmq';
import { RUN_ID, SERVICES } from '../config.ts';
import { timeClaimOne } from './claim-one.ts';
import { dropSchema, schemaName } from './pg-admin.ts';
import type { BenchSystem, QueueUnderTest } from './types.ts';

type Backend = 'redis' | 'pg';
const QUEUE = 'bench';

/**
 * BullMQ 6 on the local Redis (key prefix per scenario) or on its built-in
 * PostgreSQL backend (`withBackend(createPostgresBackend)`, schema per scenario).
 * Workers use `concurrency` as its docs advise; completed jobs are kept so the
 * bench can count them.
 */
async function openBullQueue(backend: Backend, tag: string): Promise<QueueUnderTest> {
  const prefix = `bench-${RUN_ID}-${tag}`;
  const schema = schemaName(`bull_${RUN_ID}`, tag);
  const classes =
    backend === 'pg'
      ? withBackend(createPostgresBackend)
      : { Queue: Queue as unknown as typeof Queue, Worker: Worker as unknown as typeof Worker };
  // biome-ignore lint/suspicious/noExplicitAny: the two backends take different connection option types.
  const options: any =
    backend === 'pg'
      ? { connection: { connectionString: SERVICES.postgresUrl, schema, migrate: true } }
      : { connection: SERVICES.redis, prefix };
  // biome-ignore lint/suspicious/noExplicitAny: see above
  const BullQueue = classes.Queue as any;
  // biome-ignore lint/suspicious/noExplicitAny: see above
  const BullWorker = classes.Worker as any;
  const queue: Queue = new BullQueue(QUEUE, options);
  await queue.waitUntilReady();
  let manual: Worker | undefined;
  const opts = { removeOnComplete: false, removeOnFail: false };
  return {
    enqueueOne: async (n) => {
      await queue.add('noop', { n }, opts);
    },
    enqueueBulk: async (from, count) => {
      await queue.addBulk(Array.from({ length: count }, (_, i) => ({ name: 'noop', data: { n: from + i }, opts })));
    },
    consume: async (concurrency, onJob) => {
      const worker: Worker = new BullWorker(
        QUEUE,
        async (job: { data: { n: number } }) => {
          onJob(job.data.n);
        },
        { ...options, concurrency },
      );
      await worker.waitUntilReady();
      return { stop: () => worker.close() };
    },
    countCompleted: () => queue.getCompletedCount(),
    ...(backend === 'redis'
      ? {
          seedReady: async (count: number) => {
            const batch = 1000;
            const calls: Promise<unknown>[] = [];
            for (let from = 0; from < count; from += batch) {
              const size = Math.min(batch, count - from);
              calls.push(
                queue.addBulk(Array.from({ length: size }, (_, i) => ({ name: 'noop', data: { n: from + i }, opts }))),
              );
              if (calls.length >= 8) await Promise.all(calls.splice(0));
            }
            await Promise.all(calls);
          },
          claimOne: () => {
            manual ??= new BullWorker(QUEUE, null, { ...options, autorun: false }) as Worker;
            const worker = manual;
            const token = 'bench-claim';
            return timeClaimOne(
              async () => {
                const job = await worker.getNextJob(token, { block: false });
                return job ? [job] : [];
              },
              async ([job]) => {
                await job?.moveToCompleted('ok', token, false);
              },
            );
          },
        }
      : {}),
    close: async () => {
      await manual?.close();
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      if (backend === 'pg') await dropSchema(schema);
    },
  };
}

export function bullmqSystem(backend: Backend): BenchSystem {
  return {
    id: `bullmq-${backend}`,
    label: backend === 'redis' ? 'BullMQ 6.7.0, Redis 7 (no persistence)' : 'BullMQ 6.7.0, built-in PostgreSQL backend',
    supports: { latency: true, claim: backend === 'redis', history: false },
    notAvailable: {
      ...(backend === 'pg' ? { claim: 'no fast seeding path in its own schema was built for this bench' } : {}),
      history: 'the history scenario is workq-only (issue); peers are not run',
    },
    open: (tag) => openBullQueue(backend, tag),
  };
}
