/**
 * The quick-start demo: a queue server on its embedded default store, a
 * producer enqueuing `imageConvert` jobs (some as the older v1 shape), and a
 * worker printing each as it completes. Exits when all are done, unless
 * `--keep-running` is given.
 */

import { startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient } from '@workq/sdk';

const JOB_COUNT = 12;
const keepRunning = process.argv.includes('--keep-running');

const server = await startServer({ port: Number(process.env.WORKQ_PORT ?? 4000) });
const sdk = createClient({ url: server.url, jobs });

const worker = sdk.consume(
  'imageConvert',
  async (job, ctx) => {
    await ctx.progress(50);
    await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 150));
    const bytes = job.payload.source.length * 1024 + job.payload.quality;
    console.log(
      `  ✓ ${job.id.slice(-8)} ${job.payload.source} → ${job.payload.output} (${job.payload.format}, q${job.payload.quality}) attempt ${job.attempt}`,
    );
    return { bytes };
  },
  { concurrency: 4 },
);

console.log(`\nworkq demo: server at ${server.url} on ${server.storeUrl}\nenqueuing ${JOB_COUNT} imageConvert jobs…\n`);
const started = Date.now();
const handles = await Promise.all(
  Array.from({ length: JOB_COUNT }, (_, i) =>
    sdk.enqueue.imageConvert(
      { source: `photos/img-${i + 1}.png`, output: `thumbs/img-${i + 1}.webp`, quality: 60 + i },
      { priority: i % 3 === 0 ? 10 : 0 },
    ),
  ),
);
const results = await Promise.all(handles.map((handle) => handle.result({ timeoutMs: 60_000 })));
const totalBytes = results.reduce((sum, r) => sum + r.bytes, 0);
console.log(`\n${results.length} jobs completed in ${Date.now() - started} ms (${totalBytes} bytes written).`);

if (keepRunning) {
  console.log('Server keeps running (Ctrl-C to stop).');
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
}
