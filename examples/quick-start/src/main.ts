/**
 * The quick-start demo: a queue server on its embedded default store, two producers and a worker. One
 * producer runs the current catalog (`imageConvert` v2); the other still runs the catalog from before v2
 * (v1: no format, no quality), as a service not yet redeployed would. The worker reads v2 only and receives
 * the v1 jobs upgraded on the way in. Prints each job as it completes, then the dashboard's URL; exits when
 * all are done, unless `--keep-running` is given.
 */

import { defineCatalog, defineJob } from '@workq/core';
import { startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient } from '@workq/sdk';

const CURRENT_JOBS = 8;
const OLDER_JOBS = 4;
const keepRunning = process.argv.includes('--keep-running');

/** The catalog as a producer deployed before v2 still has it: the v1 payload, as v2 declares it in `previous`. */
const jobsBeforeV2 = defineCatalog({
  imageConvert: defineJob({
    version: 1,
    payload: jobs.imageConvert.previous[1].payload,
    result: jobs.imageConvert.result,
  }),
});

const server = await startServer({ port: Number(process.env.WORKQ_PORT ?? 4000) });
const sdk = createClient({ url: server.url, jobs });
const olderProducer = createClient({ url: server.url, jobs: jobsBeforeV2 });

const worker = sdk.consume(
  'imageConvert',
  async (job, ctx) => {
    await ctx.progress(50);
    await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 150));
    const bytes = job.payload.source.length * 1024 + job.payload.quality;
    const { source, output, format, quality } = job.payload;
    const upgraded = job.version < jobs.imageConvert.version ? `  (enqueued as v${job.version}, upgraded)` : '';
    console.log(`  ✓ ${job.id.slice(-8)} ${source} → ${output} (${format}, q${quality})${upgraded}`);
    return { bytes };
  },
  { concurrency: 4 },
);

console.log(`\nworkq demo: server at ${server.url} on ${server.storeUrl}`);
console.log(
  `enqueuing ${CURRENT_JOBS} imageConvert jobs as v2, and ${OLDER_JOBS} as v1 from a producer not yet redeployed…\n`,
);
const started = Date.now();
const handles = await Promise.all([
  ...Array.from({ length: CURRENT_JOBS }, (_, i) =>
    sdk.enqueue.imageConvert(
      { source: `photos/img-${i + 1}.png`, output: `thumbs/img-${i + 1}.avif`, format: 'avif', quality: 60 + i },
      { priority: i % 3 === 0 ? 10 : 0 },
    ),
  ),
  ...Array.from({ length: OLDER_JOBS }, (_, i) =>
    olderProducer.enqueue.imageConvert({ source: `scans/page-${i + 1}.png`, output: `thumbs/page-${i + 1}.webp` }),
  ),
]);
const results = await Promise.all(handles.map((handle) => handle.result({ timeoutMs: 60_000 })));
const totalBytes = results.reduce((sum, r) => sum + r.bytes, 0);
console.log(`\n${results.length} jobs completed in ${Date.now() - started} ms (${totalBytes} bytes written).`);

if (keepRunning) {
  console.log(`The dashboard: ${server.url}/ui/ (Ctrl-C stops the server).`);
  process.once(
    'SIGINT',
    () =>
      void worker
        .close()
        .then(() => server.close())
        .then(() => process.exit(0)),
  );
} else {
  await worker.close();
  await server.close();
  console.log(`The dashboard is served at ${server.url}/ui/ while a server runs: npm run demo -- --keep-running`);
}
