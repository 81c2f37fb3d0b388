import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient, type Worker, WorkqError } from '@workq/sdk';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { collectingLogger } from '../support/quiet-logger.ts';
import { describeEachStore, type FreshStore, SHARED_STORES, serverStore } from '../support/stores.ts';

const TOKEN = 'strict-order-e2e-secret';
const email = (to: string) => ({ to: `${to}@example.com`, subject: to, body: 'hi' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Strict order per group through the SDK: a failed job holds its group until it completes after its retry. */
await describeEachStore(SHARED_STORES, 'strict group order through the SDK on the $label store', ({ open }) => {
  let target: FreshStore | undefined;
  let server: QueueServer;
  let worker: Worker | undefined;

  beforeAll(async () => {
    target = await open();
    const tokens = [{ token: TOKEN, scopes: ['produce:*', 'consume:*', 'admin'] }];
    server = await startServer({ port: 0, tokens, logger: collectingLogger(), store: await serverStore(target) });
  });

  afterAll(async () => {
    await worker?.close();
    await server?.close();
    await target?.drop();
  });

  it("groupOrder 'strict': a group's jobs run in order across a retry while other groups keep flowing", async () => {
    const sdk = createClient({ url: server.url, jobs, token: TOKEN });
    const refused = await sdk.admin.setLimits('sendEmail', { groupOrder: 'strict' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(WorkqError);
    expect((refused as WorkqError).code).toBe('VALIDATION');
    expect(await sdk.admin.setLimits('sendEmail', { groupConcurrency: 1, groupOrder: 'strict' })).toEqual({
      concurrency: null,
      rateLimit: null,
      groupConcurrency: 1,
      groupOrder: 'strict',
    });

    const options = { group: 'account-1', backoff: { type: 'fixed', delayMs: 400 } } as const;
    const ordered = await sdk.enqueueMany.sendEmail([email('first'), email('second'), email('third')], options);
    const others = await sdk.enqueueMany.sendEmail([email('o1'), email('o2')], { group: 'account-2' });
    const starts: string[] = [];
    worker = sdk.consume(
      'sendEmail',
      async (job) => {
        const to = job.payload.to.split('@')[0] as string;
        starts.push(`${to}#${job.attempt}`);
        await sleep(20);
        if (to === 'first' && job.attempt === 1) throw new Error('the mail server said try later');
        return { messageId: to };
      },
      { concurrency: 4 },
    );
    await Promise.all([...ordered, ...others].map((h) => h.result({ timeoutMs: 20_000 })));
    const account1 = starts.filter((s) => !s.startsWith('o'));
    expect(account1).toEqual(['first#1', 'first#2', 'second#1', 'third#1']);
    expect(starts.filter((s) => s.startsWith('o'))).toEqual(['o1#1', 'o2#1']);
    const [queue] = (await sdk.admin.queues()).filter((q) => q.name === 'sendEmail');
    expect(queue?.limits).toMatchObject({ groupConcurrency: 1, groupOrder: 'strict' });
  });
});
