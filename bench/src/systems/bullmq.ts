import { createPostgresBackend, FlowProducer, Queue, Worker, withBackend } from 'bullmq';
import { RUN_ID, SERVICES } from '../config.ts';
import { timeClaimOne } from './claim-one.ts';
import { dropSchema, schemaName } from './pg-admin.ts';
import type { BenchSystem, FlowChild, FlowsUnderTest, QueueUnderTest } from './types.ts';

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
  const flows = backend === 'redis' ? await openBullFlows(prefix) : undefined;
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
    ...(flows ? { flows } : {}),
    close: async () => {
      await manual?.close();
      await flows?.close();
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      if (backend === 'pg') await dropSchema(schema);
    },
  };
}

const PARENTS = 'bench-parent';
const CHILDREN = 'bench-child';

/**
 * BullMQ's FlowProducer on Redis: a parent with its children in one `add`, children on a queue of their own, and
 * the parent's processor reading `job.getChildrenValues()` (keyed by child job key; put in child order here).
 */
async function openBullFlows(prefix: string): Promise<FlowsUnderTest & { close(): Promise<void> }> {
  const options = { connection: SERVICES.redis, prefix };
  const producer = new FlowProducer(options);
  const queues = [new Queue(PARENTS, options), new Queue(CHILDREN, options)];
  await Promise.all(queues.map((queue) => queue.waitUntilReady()));
  const opts = { removeOnComplete: false, removeOnFail: false };
  return {
    enqueueFlow: async (p, children) => {
      await producer.add({
        name: 'parent',
        queueName: PARENTS,
        data: { p },
        opts,
        children: Array.from({ length: children }, (_, c) => ({
          name: 'child',
          queueName: CHILDREN,
          data: { p, c },
          opts,
        })),
      });
    },
    consume: async (concurrency, listener) => {
      const children = new Worker<FlowChild>(
        CHILDREN,
        async (job) => {
          listener.onChild(job.data);
          return job.data;
        },
        { ...options, concurrency: concurrency.children },
      );
      const parents = new Worker<{ p: number }>(
        PARENTS,
        (job) =>
          listener.onParent(job.data.p, async () =>
            Object.values(await job.getChildrenValues<FlowChild>()).sort((a, b) => a.c - b.c),
          ),
        { ...options, concurrency: concurrency.parents },
      );
      await Promise.all([children.waitUntilReady(), parents.waitUntilReady()]);
      return { stop: () => Promise.all([children.close(), parents.close()]).then(() => undefined) };
    },
    countCompleted: async () =>
      (await Promise.all(queues.map((queue) => queue.getCompletedCount()))).reduce((a, b) => a + b),
    close: async () => {
      await producer.close();
      for (const queue of queues) {
        await queue.obliterate({ force: true }).catch(() => undefined);
        await queue.close();
      }
    },
  };
}

export function bullmqSystem(backend: Backend): BenchSystem {
  return {
    id: `bullmq-${backend}`,
    label: backend === 'redis' ? 'BullMQ 6.7.0, Redis 7 (no persistence)' : 'BullMQ 6.7.0, built-in PostgreSQL backend',
    supports: { latency: true, claim: backend === 'redis', history: false, flows: backend === 'redis' },
    notAvailable: {
      ...(backend === 'pg' ? { claim: 'no fast seeding path in its own schema was built for this bench' } : {}),
      history: 'the history scenario is workq-only (issue); peers are not run',
    },
    open: (tag) => openBullQueue(backend, tag),
  };
}
