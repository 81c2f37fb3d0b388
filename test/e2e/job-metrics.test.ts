import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient, PermanentError, type Worker } from '@workq/sdk';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { collectingLogger } from '../support/quiet-logger.ts';

let server: QueueServer;
const workers: Worker[] = [];

beforeAll(async () => {
  server = await startServer({ store: 'pglite://memory', port: 0, logger: collectingLogger(), pollIntervalMs: 200 });
});

afterAll(async () => {
  await Promise.all(workers.map((w) => w.close()));
  await server?.close();
});

/** The value of one sample of `/metrics`, by its name and exact labels; `undefined` when absent. */
async function sample(name: string, labels: string): Promise<number | undefined> {
  const body = await (await fetch(`${server.url}/metrics`)).text();
  const line = body.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

const HANDLER_MS = 120;
/** Jobs wait this long before any worker runs; a delayed job comes due a little after that. */
const PAUSE_MS = 1_200;
const DELAY_MS = 1_500;

it('/metrics has histograms of the wait from run time to claim and of the lease from claim to ack or failure', async () => {
  const sdk = createClient({ url: server.url, jobs });
  // Jobs wait before any worker runs: the wait histogram sees that time.
  const ready = await Promise.all([1, 2, 3].map((n) => sdk.enqueue.imageConvert({ source: `${n}`, output: 'o' })));
  const delayed = await sdk.enqueue.imageConvert({ source: 'later', output: 'o' }, { delayMs: DELAY_MS });
  const failing = await sdk.enqueue.imageConvert(
    { source: 'bad', output: 'o' },
    { maxAttempts: 2, backoff: { type: 'fixed', delayMs: 0 } },
  );
  await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
  workers.push(
    sdk.consume(
      'imageConvert',
      async (job) => {
        await new Promise((resolve) => setTimeout(resolve, HANDLER_MS));
        if (job.payload.source !== 'bad') return { bytes: 1 };
        if (job.attempt === 1) throw new Error('try again');
        throw new PermanentError('give up');
      },
      { concurrency: 5 },
    ),
  );
  for (const handle of [...ready, delayed]) await handle.result({ timeoutMs: 20_000 });
  await expect(failing.result({ timeoutMs: 20_000 })).rejects.toThrow('give up');

  const name = 'name="imageConvert"';
  // Six claims: five jobs, one of them twice.
  expect(await sample('workq_job_wait_seconds_count', name)).toBe(6);
  // The ready jobs waited out the pause (the retry, due at once, keeps its place and its run time); the delayed
  // job waited only from its run time, under a second, though it was enqueued before the pause.
  expect(await sample('workq_job_wait_seconds_bucket', `le="1",${name}`)).toBe(1);
  expect(await sample('workq_job_wait_seconds_bucket', `le="+Inf",${name}`)).toBe(6);
  expect((await sample('workq_job_wait_seconds_sum', name)) ?? 0).toBeGreaterThanOrEqual((5 * PAUSE_MS) / 1000);

  // Completions arrive as acks (alone or riding on a claim), failures one by one; each is timed from its claim.
  expect(await sample('workq_job_handler_seconds_count', `${name},outcome="completed"`)).toBe(4);
  expect(await sample('workq_job_handler_seconds_count', `${name},outcome="retry"`)).toBe(1);
  expect(await sample('workq_job_handler_seconds_count', `${name},outcome="dead"`)).toBe(1);
  const held = (await sample('workq_job_handler_seconds_sum', `${name},outcome="completed"`)) ?? 0;
  expect(held).toBeGreaterThanOrEqual((4 * HANDLER_MS) / 1000);
  expect(held).toBeLessThan(4 * 10);
});
