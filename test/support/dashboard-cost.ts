/**
 * Measures what the dashboard's Jobs page costs a browser: the calls and bytes of opening it, and of
 * leaving it open 20 s while jobs flow (and, first, of signing in and the overview's first 3 s) (a producer enqueues 5 a second, a worker runs them, one in ten
 * fails for good). The store holds ~1,400 jobs first. Not a test: it prints figures, for the docs and
 * for comparing dashboard builds.
 *
 *   npx tsx test/support/dashboard-cost.ts [dashboard build dir, default: the server's own]
 *
 * With a directory, the browser is served that build's files instead of the server's (the API is the
 * server's either way), so an older build can be measured against the same server.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient, PermanentError } from '@workq/sdk';
import { until } from '@workq/test-support';
import { launchChromium } from './chromium.ts';
import { collectingLogger } from './quiet-logger.ts';

const TOKEN = 'dashboard-cost-admin-token';
const OPEN_FOR_MS = 20_000;

const build = process.argv[2];
const queue = await startServer({
  store: 'pglite://memory',
  port: 0,
  tokens: [{ token: TOKEN, scopes: ['admin', 'produce:*', 'consume:*', 'register:*'] }],
  logger: collectingLogger(),
});
const sdk = createClient({ url: queue.url, jobs, token: TOKEN });
const worker = sdk.consume(
  'imageConvert',
  (job) => {
    if (job.payload.source.endsWith('0.png')) throw new PermanentError(`cannot read ${job.payload.source}`);
    return { bytes: job.payload.quality };
  },
  { concurrency: 8, onError: () => {} },
);
for (let batch = 0; batch < 14; batch++) {
  await sdk.enqueueMany.imageConvert(
    Array.from({ length: 100 }, (_, n) => ({ source: `seed-${batch}-${n}.png`, output: 'out.webp' })),
  );
}
await until(async () => {
  const counts = (await sdk.admin.stats()).counts;
  return (
    counts.filter((row) => row.state === 'completed' || row.state === 'dead').reduce((a, b) => a + b.count, 0) >= 1400
  );
}, 120_000);

const browser = await launchChromium();
const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
if (build) {
  await page.route('**/ui/**', async (route) => {
    const path = new URL(route.request().url()).pathname.replace(/^\/ui\/?/, '');
    const file = path.startsWith('assets/') ? path : 'index.html';
    const type = file.endsWith('.js') ? 'text/javascript' : file.endsWith('.css') ? 'text/css' : 'text/html';
    await route.fulfill({ body: await readFile(join(build, file)), contentType: type });
  });
}
const cdp = await page.context().newCDPSession(page);
await cdp.send('Network.enable');
const api = new Set<string>();
const meter = { calls: 0, bytes: 0 };
cdp.on('Network.requestWillBeSent', (event) => {
  if (!new URL(event.request.url).pathname.startsWith('/trpc/')) return;
  api.add(event.requestId);
  meter.calls += 1;
});
cdp.on('Network.dataReceived', (event) => {
  if (api.has(event.requestId)) meter.bytes += event.dataLength;
});
const reading = () => ({ calls: meter.calls, mib: Number((meter.bytes / 1024 / 1024).toFixed(3)) });

await page.goto(`${queue.url}/ui/`);
await page.fill('#token', TOKEN);
await page.click('form button[type="submit"]');
await page.waitForSelector('[data-type="imageConvert"]');
await page.waitForTimeout(3_000);
const overview = reading();
meter.calls = 0;
meter.bytes = 0;
await page.click('nav >> text=Jobs');
await page.waitForSelector('tr[data-job]');
await page.waitForLoadState('networkidle').catch(() => undefined);
await page.waitForTimeout(1_000);
const opening = reading();
meter.calls = 0;
meter.bytes = 0;
let produced = 0;
const producer = setInterval(() => {
  produced += 1;
  void sdk.enqueue.imageConvert({ source: `live-${produced}.png`, output: 'out.webp' });
}, 200);
await page.waitForTimeout(OPEN_FOR_MS);
clearInterval(producer);
const open = reading();
console.log(
  JSON.stringify({
    build: build ?? 'server',
    signInAndOverview3s: overview,
    openingJobs: opening,
    jobsOpenFor20s: { ...open, enqueued: produced },
  }),
);
await browser.close();
await worker.close();
await queue.close();
