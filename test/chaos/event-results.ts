/**
 * Job events with large results, against a queue server in its own process: one events subscriber reads every
 * event while a worker completes `jobs` `sendEmail` jobs, each returning a result of ~200 KB (under the default
 * `maxResultBytes`). A server keeps recent events for subscribers that reconnect, and a `completed` event
 * carries its result, so this is what those results cost the server's memory. Prints the events read, how long
 * it took, the server's resident memory at the start and its peak (sampled from `/proc` every 50 ms), and
 * whether it still serves.
 *
 *   pnpm --filter @workq/e2e exec tsx chaos/event-results.ts [--jobs 5000] [--store <url>]
 *
 * The default store is a schema of its own on the tests' PostgreSQL server (`WORKQ_TEST_POSTGRES_URL`, else the
 * local one), dropped at the end; everything goes to 127.0.0.1 and stops by itself.
 */
import { parseArgs } from 'node:util';
import { jobs } from '@workq/schemas';
import { createClient } from '@workq/sdk';
import { freshPostgresSchema } from '@workq/test-support';
import { NodeProcesses, residentBytes } from './node-processes.ts';
import { startProbeServer } from './queue-server-process.ts';

const TOKEN = 'event-results-admin-token-0123456789';
const RESULT_CHARACTERS = 200_000;
const { values } = parseArgs({
  options: { jobs: { type: 'string', default: '5000' }, store: { type: 'string' } },
});
const jobCount = Number(values.jobs);
const ownSchema = values.store === undefined ? freshPostgresSchema('event_results') : undefined;
const store = values.store ?? (ownSchema?.url as string);

const processes = new NodeProcesses();
const server = await startProbeServer('event-results', { store, token: TOKEN, processes });
const sdk = createClient({ url: server.url, jobs, token: TOKEN });
const watching = new AbortController();
try {
  await sdk.ready();
  let completedSeen = 0;
  let resyncs = 0;
  const watched = (async () => {
    for await (const event of sdk.events('sendEmail', { signal: watching.signal })) {
      if (event.type === 'completed') completedSeen++;
      else if (event.type === 'resync') resyncs++;
    }
  })().catch((error: unknown) => {
    if (!watching.signal.aborted) throw error;
  });
  const startBytes = residentBytes(server.pid as number) ?? 0;
  let peakBytes = startBytes;
  const sampler = setInterval(() => {
    peakBytes = Math.max(peakBytes, residentBytes(server.pid as number) ?? 0);
  }, 50);
  const blob = 'r'.repeat(RESULT_CHARACTERS);
  const worker = sdk.consume('sendEmail', async (job) => ({ messageId: `${job.payload.subject}:${blob}` }), {
    concurrency: 50,
  });
  const startedAt = Date.now();
  for (let first = 0; first < jobCount; first += 1_000) {
    const count = Math.min(1_000, jobCount - first);
    await sdk.enqueueMany.sendEmail(
      Array.from({ length: count }, (_, i) => ({ to: 'a@example.com', subject: `s${first + i}`, body: '' })),
    );
  }
  while (completedSeen < jobCount && Date.now() - startedAt < 600_000) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const seconds = (Date.now() - startedAt) / 1000;
  clearInterval(sampler);
  await worker.close();
  console.log(
    JSON.stringify({
      jobs: jobCount,
      resultBytes: RESULT_CHARACTERS,
      completedEventsSeen: completedSeen,
      resyncs,
      seconds,
      startResidentMiB: Math.round(startBytes / 2 ** 20),
      peakResidentMiB: Math.round(peakBytes / 2 ** 20),
      serving: await server.serving(),
    }),
  );
  watching.abort();
  await watched;
} finally {
  watching.abort();
  await sdk.close();
  await server.stop();
  await ownSchema?.drop();
}
