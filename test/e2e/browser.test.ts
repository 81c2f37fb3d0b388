import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { mintToken, type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient, type Worker } from '@workq/sdk';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleForBrowser } from '../support/browser-bundle.ts';
import { chromiumMissing, launchChromium } from '../support/chromium.ts';
import { REPO_ROOT } from '../support/processes.ts';
import { collectingLogger } from '../support/quiet-logger.ts';

const SECRET = 'browser-test-secret-of-at-least-32-bytes!';
const WORKER_TOKEN = 'browser-e2e-worker-token';

/**
 * A web app's own server on its own origin: it serves the page and, as the
 * app's backend would, mints each visitor a short-lived, produce-only token.
 */
async function startPageServer(
  script: string,
): Promise<{ server: Server; origin: string; tokensMinted: () => number }> {
  let minted = 0;
  const server = createServer((req, res) => {
    if (req.url === '/token' && req.method === 'POST') {
      minted++;
      void mintToken({
        secret: SECRET,
        scopes: ['produce:imageConvert'],
        expiresInMs: 60_000,
        subject: 'visitor-1',
      }).then((token) => res.writeHead(200, { 'content-type': 'text/plain' }).end(token));
      return;
    }
    if (req.url === '/favicon.ico') return void res.writeHead(204).end();
    if (req.url === '/page.js') return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
    if (req.url?.startsWith('/?')) {
      const html =
        '<!doctype html><title>workq page</title><pre id="output"></pre><script type="module" src="/page.js"></script>';
      return void res.writeHead(200, { 'content-type': 'text/html' }).end(html);
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, tokensMinted: () => minted };
}

const closeServer = (server: Server | undefined) =>
  new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));

const missingBrowser = chromiumMissing('browser');

describe.skipIf(missingBrowser)('a page on another origin, in Chromium', () => {
  let queue: QueueServer;
  let app: Awaited<ReturnType<typeof startPageServer>>;
  let stranger: Awaited<ReturnType<typeof startPageServer>>;
  let browser: Browser;
  let worker: Worker;
  const consoleErrors: string[] = [];

  beforeAll(async () => {
    // The page's script: the fixture entry, bundled for the browser with the SDK and the shared catalog.
    const { text: script } = await bundleForBrowser(join(REPO_ROOT, 'test', 'fixtures', 'browser-page', 'main.ts'));
    app = await startPageServer(script);
    stranger = await startPageServer(script);
    queue = await startServer({
      store: 'pglite://memory',
      port: 0,
      tokens: [{ token: WORKER_TOKEN, scopes: ['consume:*', 'admin'] }],
      tokenSecret: SECRET,
      cors: { origins: [app.origin] },
      logger: collectingLogger(),
    });
    const sdk = createClient({ url: queue.url, jobs, token: WORKER_TOKEN });
    worker = sdk.consume('imageConvert', async (job) => ({
      bytes: job.payload.source.length * 100 + job.payload.quality,
    }));
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await worker?.close();
    await queue?.close();
    await closeServer(app?.server);
    await closeServer(stranger?.server);
  });

  /** Opens the page and returns what it printed once its script finished. */
  async function visit(
    origin: string,
    query: string,
  ): Promise<{ ok: boolean; bytes?: number[]; eventBytes?: number; code?: string }> {
    const page: Page = await browser.newPage();
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    try {
      await page.goto(`${origin}/?queue=${encodeURIComponent(queue.url)}${query}`);
      await page.waitForSelector('#output[data-done="true"]', { timeout: 30_000 });
      return JSON.parse((await page.textContent('#output')) ?? '');
    } finally {
      await page.close();
    }
  }

  const jobCount = async () => {
    const sdk = createClient({ url: queue.url, jobs, token: WORKER_TOKEN });
    const { counts } = await sdk.admin.stats();
    return counts.reduce((sum, row) => sum + row.count, 0);
  };

  it('enqueues with a minted, produce-only token and shows the typed results', async () => {
    const before = app.tokensMinted();
    expect(await visit(app.origin, '')).toEqual({ ok: true, bytes: [770, 770, 770] });
    // The token function is called per request that needs it (enqueue, then each result wait).
    expect(app.tokensMinted() - before).toBeGreaterThanOrEqual(2);
    expect(consoleErrors).toEqual([]);
  });

  it('watches live events over server-sent events, with the minted token, and reads the typed result', async () => {
    consoleErrors.length = 0;
    expect(await visit(app.origin, '&events=1')).toEqual({ ok: true, eventBytes: 770 });
    expect(consoleErrors).toEqual([]);
  });

  it('a page without a token is refused with UNAUTHORIZED, and nothing is stored', async () => {
    const before = await jobCount();
    expect(await visit(app.origin, '&token=none')).toEqual({ ok: false, code: 'UNAUTHORIZED' });
    expect(await jobCount()).toBe(before);
  });

  it('a page on an origin the server does not list is blocked by the browser, and nothing is stored', async () => {
    const before = await jobCount();
    consoleErrors.length = 0;
    expect(await visit(stranger.origin, '')).toEqual({ ok: false, code: 'UNAVAILABLE' });
    expect(await jobCount()).toBe(before);
    expect(consoleErrors.join('\n')).toMatch(/CORS/);
  });
});
