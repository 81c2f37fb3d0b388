import { parseArgs } from 'node:util';
import { catalogJsonSchemas } from '@workq/core';
import { jobs } from '@workq/schemas';
import { freshPostgresSchema } from '@workq/test-support';
import { rawClient } from '../support/raw-client.ts';
import { NodeProcesses, residentBytes } from './node-processes.ts';
import { startProbeServer } from './queue-server-process.ts';

/**
 * Many reads at once of the status of one job with a large payload, from one token that may only enqueue it: a
 * browser's token. Each `jobs.wait` (the SDK's `handle.result()`) and `jobs.get` reads the job's status, which
 * leaves its payload unread; tRPC batches 50 calls in one request. Prints the server's peak resident memory and
 * whether it still serves.
 */
const ADMIN = 'status-flood-admin-token-0123456789';
const PRODUCER = 'status-flood-produce-token-0123456789';
const PER_REQUEST = 50;
const WAIT_MS = 10_000;
const { values } = parseArgs({
  options: {
    reads: { type: 'string', default: '4000' },
    kind: { type: 'string', default: 'wait' },
    store: { type: 'string' },
    args: { type: 'string', default: '' },
  },
});
const reads = Number(values.reads);
const ownSchema = values.store === undefined ? freshPostgresSchema('status_flood') : undefined;
const store = values.store ?? (ownSchema?.url as string);

const processes = new NodeProcesses();
const server = await startProbeServer('status-flood', {
  store,
  token: ADMIN,
  processes,
  args: ['--token', `${PRODUCER}=produce:imageConvert`, ...(values.args ? values.args.split(' ') : [])],
});
const { url } = server;
try {
  await rawClient(url, ADMIN).schemas.register.mutate({ schemas: catalogJsonSchemas(jobs) });
  const { id } = await rawClient(url, ADMIN).jobs.enqueue.mutate({
    name: 'imageConvert',
    version: 2,
    payload: { source: 'x'.repeat(250_000), output: 'out.webp' },
  });

  let peakBytes = residentBytes(server.pid as number) ?? 0;
  const startBytes = peakBytes;
  // Waits time out after WAIT_MS: until shortly before, the server holds what the waiting calls keep.
  let peakWaitingBytes = peakBytes;
  const samplingFrom = Date.now();
  const sampler = setInterval(() => {
    const bytes = residentBytes(server.pid as number) ?? 0;
    peakBytes = Math.max(peakBytes, bytes);
    if (Date.now() - samplingFrom < WAIT_MS - 1_000) peakWaitingBytes = Math.max(peakWaitingBytes, bytes);
  }, 50);
  const call = values.kind === 'wait' ? 'jobs.wait' : 'jobs.get';
  const input = values.kind === 'wait' ? { id, timeoutMs: WAIT_MS } : { id };
  const batch = Array.from({ length: PER_REQUEST }, (_, i) => [i, { json: input }]);
  const query = `batch=1&input=${encodeURIComponent(JSON.stringify(Object.fromEntries(batch)))}`;
  const path = `${url}/trpc/${Array.from({ length: PER_REQUEST }, () => call).join(',')}?${query}`;
  const startedAt = Date.now();
  const statuses = new Map<string, number>();
  // Another caller enqueues one job at a time meanwhile, as a producer would.
  let flooding = true;
  const victim = { enqueued: 0, failed: 0, slowestMs: 0, totalMs: 0 };
  const producing = (async () => {
    const admin = rawClient(url, ADMIN);
    while (flooding) {
      const sentAt = performance.now();
      try {
        await admin.jobs.enqueue.mutate({
          name: 'sendEmail',
          version: 1,
          payload: { to: 'a@example.com', subject: 's', body: 'b' },
        });
        victim.enqueued++;
      } catch {
        victim.failed++;
      }
      const tookMs = performance.now() - sentAt;
      victim.slowestMs = Math.max(victim.slowestMs, Math.round(tookMs));
      victim.totalMs += tookMs;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  await Promise.all(
    Array.from({ length: Math.ceil(reads / PER_REQUEST) }, () =>
      fetch(path, { headers: { authorization: `Bearer ${PRODUCER}` } }).then(
        async (response) => {
          await response.arrayBuffer();
          statuses.set(String(response.status), (statuses.get(String(response.status)) ?? 0) + 1);
        },
        (error: Error) => statuses.set(error.message, (statuses.get(error.message) ?? 0) + 1),
      ),
    ),
  );
  flooding = false;
  await producing;
  clearInterval(sampler);
  console.log(
    JSON.stringify({
      call,
      reads,
      answers: Object.fromEntries(statuses),
      otherCallersEnqueues: {
        ...victim,
        totalMs: undefined,
        meanMs: Math.round(victim.totalMs / Math.max(1, victim.enqueued + victim.failed)),
      },
      seconds: (Date.now() - startedAt) / 1000,
      startResidentMiB: Math.round(startBytes / 2 ** 20),
      peakResidentMiB: Math.round(peakBytes / 2 ** 20),
      ...(call === 'jobs.wait' ? { peakWhileWaitingMiB: Math.round(peakWaitingBytes / 2 ** 20) } : {}),
      serving: await server.serving(),
    }),
  );
} finally {
  await server.stop();
  await ownSchema?.drop();
}
