/**
 * Parents reading many large results, against a queue server in its own process: `parents` `generateReport`
 * parents, each with `children` `sendEmail` children that return results of ~200 KB (under the default
 * `maxResultBytes`), and a parents' worker running them all at once, each handler reading every child's result
 * (`ctx.children`). A resumed parent's claim carries its first page of children, and `consumer.children` the
 * rest, so this is what those pages cost the server's memory. Prints the children each parent read, how long it
 * took, the server's resident memory after the children ran and its peak while the parents ran (sampled from
 * `/proc` every 50 ms), and whether it still serves. Before the parents run, `status-reads` reads of their
 * statuses at once (`handle.status()`, which lists a parent's first 1,000 children), with the server's memory
 * alike.
 *
 *   pnpm --filter @workq/e2e exec tsx chaos/children-results.ts [--parents 4] [--children 1000]
 *     [--status-reads 8] [--store <url>]
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

const TOKEN = 'children-results-admin-token-0123456789';
const RESULT_CHARACTERS = 200_000;
const { values } = parseArgs({
  options: {
    parents: { type: 'string', default: '4' },
    children: { type: 'string', default: '1000' },
    'status-reads': { type: 'string', default: '8' },
    store: { type: 'string' },
  },
});
const parentCount = Number(values.parents);
const childCount = Number(values.children);
const statusReads = Number(values['status-reads']);
const ownSchema = values.store === undefined ? freshPostgresSchema('children_results') : undefined;
const store = values.store ?? (ownSchema?.url as string);

const processes = new NodeProcesses();
const server = await startProbeServer('children-results', { store, token: TOKEN, processes });
const sdk = createClient({ url: server.url, jobs, token: TOKEN });
try {
  await sdk.ready();
  const blob = 'r'.repeat(RESULT_CHARACTERS);
  const report = { accountId: 'a', kind: 'usage', from: '2026-01-01', to: '2026-01-31' } as const;
  const handles: { status(): Promise<{ children?: readonly unknown[] }> }[] = [];
  for (let p = 0; p < parentCount; p++) {
    const children = Array.from({ length: childCount }, (_, c) =>
      sdk.child.sendEmail({ to: 'a@example.com', subject: `${p}/${c}`, body: '' }),
    );
    handles.push(await sdk.enqueue.generateReport({ ...report, accountId: `a${p}` }, { children }));
  }
  let childrenRun = 0;
  const childWorker = sdk.consume(
    'sendEmail',
    (job) => {
      childrenRun++;
      return { messageId: `${job.payload.subject}:${blob}` };
    },
    { concurrency: 50 },
  );
  const startedAt = Date.now();
  while (childrenRun < parentCount * childCount && Date.now() - startedAt < 600_000) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await childWorker.close();
  const childrenSeconds = (Date.now() - startedAt) / 1000;

  // Each parent's status, read `statusReads` times at once over the parents: a status lists a parent's first
  // children by id, name and state.
  const statusStartBytes = residentBytes(server.pid as number) ?? 0;
  let statusPeakBytes = statusStartBytes;
  const statusSampler = setInterval(() => {
    statusPeakBytes = Math.max(statusPeakBytes, residentBytes(server.pid as number) ?? 0);
  }, 50);
  const statusAt = Date.now();
  const statuses = await Promise.all(
    Array.from({ length: statusReads }, (_, i) => handles[i % handles.length]?.status()),
  );
  const statusSeconds = (Date.now() - statusAt) / 1000;
  clearInterval(statusSampler);

  const startBytes = residentBytes(server.pid as number) ?? 0;
  let peakBytes = startBytes;
  const sampler = setInterval(() => {
    peakBytes = Math.max(peakBytes, residentBytes(server.pid as number) ?? 0);
  }, 50);
  const read: number[] = [];
  const parentsAt = Date.now();
  const parentWorker = sdk.consume(
    'generateReport',
    (_job, ctx) => {
      read.push(ctx.children.length);
      return { url: 'done', rows: ctx.children.length };
    },
    { concurrency: parentCount },
  );
  while (read.length < parentCount && Date.now() - parentsAt < 600_000) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const parentsSeconds = (Date.now() - parentsAt) / 1000;
  clearInterval(sampler);
  await parentWorker.close();
  console.log(
    JSON.stringify({
      parents: parentCount,
      children: childCount,
      resultBytes: RESULT_CHARACTERS,
      childrenRead: read,
      childrenSeconds,
      statusReads,
      statusChildrenListed: statuses.map((status) => status?.children?.length ?? 0),
      statusSeconds,
      statusStartResidentMiB: Math.round(statusStartBytes / 2 ** 20),
      statusPeakResidentMiB: Math.round(statusPeakBytes / 2 ** 20),
      parentsSeconds,
      startResidentMiB: Math.round(startBytes / 2 ** 20),
      peakResidentMiB: Math.round(peakBytes / 2 ** 20),
      serving: await server.serving(),
    }),
  );
} finally {
  await sdk.close();
  await server.stop();
  await ownSchema?.drop();
}
