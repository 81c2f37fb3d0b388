import { mkdirSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient, PermanentError, type Worker } from '@workq/sdk';
import { until } from '@workq/test-support';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumMissing, launchChromium } from '../support/chromium.ts';
import { REPO_ROOT } from '../support/processes.ts';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawClient } from '../support/raw-client.ts';

const ADMIN_TOKEN = 'dashboard-admin-token';
/** Where the screenshots go (git-ignored): one set per window width. */
const SCREENSHOTS = join(REPO_ROOT, 'test', '.screenshots', 'dashboard');
const HOUR_MS = 3_600_000;

/** A time as a `datetime-local` field takes it: local time, to the second (the browser runs in this process's zone). */
const localTime = (ms: number) => new Date(ms - new Date(ms).getTimezoneOffset() * 60_000).toISOString().slice(0, 19);

const missingBrowser = chromiumMissing('dashboard');

describe.skipIf(missingBrowser)('the dashboard at /ui, in Chromium', () => {
  let queue: QueueServer;
  let browser: Browser;
  let worker: Worker;
  let sdk: ReturnType<typeof createClient<typeof jobs>>;
  let failing = true;
  let releaseSlow: () => void = () => {};
  const slow = new Promise<void>((resolve) => (releaseSlow = resolve));
  const consoleErrors: string[] = [];
  const ids: Record<string, string> = {};

  /** Counts of one job type by state, as the store has them. */
  const countsOf = async (name: string): Promise<Record<string, number>> => {
    const counts: Record<string, number> = {};
    for (const row of (await sdk.admin.stats()).counts) {
      if (row.name === name) counts[row.state] = (counts[row.state] ?? 0) + row.count;
    }
    return counts;
  };

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    queue = await startServer({
      store: 'pglite://memory',
      port: 0,
      tokens: [{ token: ADMIN_TOKEN, scopes: ['admin'] }],
      logger: collectingLogger(),
    });
    sdk = createClient({ url: queue.url, jobs, token: ADMIN_TOKEN });
    worker = sdk.consume(
      'imageConvert',
      async (job, ctx) => {
        if (job.payload.source === 'slow.png') await slow;
        if (job.payload.source === 'relay.png') {
          await ctx.moveTo('sendEmail', { to: 'ops@example.com', subject: 'converted', body: job.payload.output });
          return { bytes: 0 };
        }
        if (failing && job.payload.source.startsWith('broken')) {
          throw new PermanentError(`printer on fire while reading ${job.payload.source}`);
        }
        return { bytes: 1000 + job.payload.quality };
      },
      { concurrency: 4 },
    );
    // Jobs in every state: completed, dead, active, scheduled, cancelled, and ready (sendEmail has no worker).
    const convert = (source: string, options = {}) =>
      sdk.enqueue.imageConvert({ source, output: `${source}.webp` }, options);
    ids.invoice = (await convert('invoice.png', { idempotencyKey: 'invoice-42' })).id;
    for (const n of [1, 2]) await convert(`photo-${n}.png`);
    for (const n of [1, 2, 3]) await convert(`broken-${n}.png`, { maxAttempts: 1 });
    ids.slow = (await convert('slow.png')).id;
    for (const n of [1, 2]) await convert(`later-${n}.png`, { delayMs: HOUR_MS });
    const cancelled = await convert('cancelled.png', { delayMs: HOUR_MS });
    await cancelled.cancel();
    for (const to of ['ada@example.com', 'grace@example.com']) {
      await sdk.enqueue.sendEmail({ to, subject: 'Welcome', body: 'Hello!' }, { idempotencyKey: `welcome-${to}` });
    }
    await until(async () => {
      const counts = await countsOf('imageConvert');
      return counts.completed === 3 && counts.dead === 3 && counts.active === 1;
    }, 20_000);
    browser = await launchChromium();
  });

  afterAll(async () => {
    releaseSlow();
    await browser?.close();
    await worker?.close();
    await queue?.close();
  });

  /** A signed-in tab at `width` pixels; any console error or uncaught exception is recorded. */
  async function signedIn(width: number, height: number): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: { width, height } });
    const page = await context.newPage();
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('pageerror', (error) => consoleErrors.push(String(error)));
    await page.goto(`${queue.url}/ui/`);
    await page.fill('#token', ADMIN_TOKEN);
    await page.click('form button[type="submit"]');
    await page.waitForSelector('[data-type="imageConvert"]');
    return { context, page };
  }

  /** Waits until the element at `selector` shows `text` (a substring). */
  const waitForText = (page: Page, selector: string, text: string, timeoutMs = 15_000) =>
    page.waitForFunction(
      ([s, t]) => document.querySelector(s as string)?.textContent?.includes(t as string) === true,
      [selector, text],
      { timeout: timeoutMs },
    );

  /** Confirms the open dialog after checking what it says it will do; then closes its outcome. */
  async function confirm(page: Page, question: string, outcome: string): Promise<void> {
    await waitForText(page, '[role="dialog"]', question);
    await page.click('[role="dialog"] button.primary');
    await waitForText(page, '[role="dialog"]', outcome);
    await page.click('[role="dialog"] button.primary');
  }

  it('shows every job type with its counts by state, and where no worker reads', async () => {
    const { context, page } = await signedIn(1280, 900);
    try {
      const expected = await countsOf('imageConvert');
      expect(expected).toMatchObject({ completed: 3, dead: 3, active: 1, scheduled: 2, cancelled: 1 });
      for (const [state, count] of Object.entries(expected)) {
        await waitForText(page, `[data-type="imageConvert"] [data-count="${state}"]`, String(count));
      }
      await waitForText(page, '[data-type="sendEmail"] [data-count="ready"]', '2');
      // The last hour's throughput, from the store's history: three completed, three dead.
      await waitForText(page, '[data-type="imageConvert"] [data-throughput]', '3 completed, 3 failed');
      expect(await page.textContent('[data-type="sendEmail"] header')).toContain('no worker');
      expect(await page.textContent('[data-type="imageConvert"] header')).not.toContain('no worker');
      await page.screenshot({ path: join(SCREENSHOTS, 'overview-1280.png'), fullPage: true });
    } finally {
      await context.close();
    }
    expect(consoleErrors).toEqual([]);
  });

  it('finds a job by its idempotency key', async () => {
    const { context, page } = await signedIn(1280, 900);
    try {
      await page.click('nav >> text=Jobs');
      await page.waitForSelector('input[name="q"]');
      await page.fill('input[name="q"]', 'invoice-42');
      await page.press('input[name="q"]', 'Enter');
      await page.waitForSelector('[data-testid="match-count"][data-count="1"]');
      expect(await page.locator('tr[data-job]').count()).toBe(1);
      expect(await page.getAttribute('tr[data-job]', 'data-job')).toBe(ids.invoice);
      await page.screenshot({ path: join(SCREENSHOTS, 'search-1280.png'), fullPage: true });
      // A whole id finds its job in any state.
      await page.fill('input[name="q"]', ids.slow!);
      await page.press('input[name="q"]', 'Enter');
      await page.waitForSelector(`tr[data-job="${ids.slow}"]`);
      expect(await page.locator('tr[data-job]').count()).toBe(1);
      await page.fill('input[name="q"]', 'invoice-42');
      // A creation time range around it keeps it; one that starts after it leaves nothing.
      await page.fill('input[name="from"]', localTime(Date.now() - HOUR_MS));
      await page.fill('input[name="to"]', localTime(Date.now() + HOUR_MS));
      await page.click('form.filters button[type="submit"]');
      await page.waitForFunction(() => new URL(location.href).searchParams.has('to'));
      await page.waitForSelector('[data-testid="match-count"][data-count="1"]');
      await page.fill('input[name="from"]', localTime(Date.now() + 60_000));
      await page.click('form.filters button[type="submit"]');
      await page.waitForSelector('[data-testid="match-count"][data-count="0"]');
    } finally {
      await context.close();
    }
    expect(consoleErrors).toEqual([]);
  });

  it('opens a dead job, shows the worker’s error, retries it and sees it complete live', async () => {
    const { context, page } = await signedIn(1280, 900);
    try {
      await page.click('[data-type="imageConvert"] a[href$="state=dead"]');
      await page.waitForSelector('[data-testid="match-count"][data-count="3"]');
      const deadId = await page.getAttribute('tr[data-job]', 'data-job');
      await page.click(`tr[data-job="${deadId}"] a`);
      await page.waitForSelector('.job[data-state="dead"]');
      expect(await page.textContent('.worker-message')).toMatch(/^printer on fire while reading broken-\d\.png$/);
      await page.screenshot({ path: join(SCREENSHOTS, 'dead-job-1280.png'), fullPage: true });
      failing = false;
      await page.click('.job-head button:text-is("Retry")');
      await confirm(page, 'Retry 1 dead job', '1 job retried.');
      // The page learns of the completion from the server's event stream (or its polling fallback).
      await page.waitForSelector('.job[data-state="completed"]', { timeout: 15_000 });
      expect(await page.textContent('.job')).toContain('"bytes": 1080');
      expect((await sdk.admin.stats()).counts.find((c) => c.state === 'dead')?.count).toBe(2);
    } finally {
      await context.close();
    }
    expect(consoleErrors).toEqual([]);
  });

  it('retries every dead job of a type after a confirmation that says how many', async () => {
    const { context, page } = await signedIn(1280, 900);
    try {
      // The store's last hour as the page opened: four completed (one of them retried), two dead.
      await waitForText(page, '[data-type="imageConvert"] [data-throughput]', '4 completed, 2 failed');
      await page.click('[data-type="imageConvert"] a[href$="state=dead"]');
      await page.waitForSelector('[data-testid="match-count"][data-count="2"]');
      await page.click('button:text-is("Retry all 2 dead jobs")');
      await confirm(page, 'Retry 2 dead jobs', '2 jobs retried.');
      await page.waitForSelector('[data-testid="match-count"][data-count="0"]');
      await until(async () => (await countsOf('imageConvert')).completed === 6, 15_000);
      expect((await countsOf('imageConvert')).dead).toBeUndefined();
      // The overview's last hour: what the store held when it opened, and the completions the stream reported since.
      await page.click('nav >> text=Overview');
      await waitForText(page, '[data-type="imageConvert"] [data-throughput]', '6 completed, 2 failed');
      await waitForText(page, '[data-type="imageConvert"] [data-count="completed"]', '6');
      await page.screenshot({ path: join(SCREENSHOTS, 'overview-live-1280.png') });
    } finally {
      await context.close();
    }
    expect(consoleErrors).toEqual([]);
  });

  it('enqueues from the form generated from the registered schema, showing the server’s field errors', async () => {
    const { context, page } = await signedIn(1280, 900);
    try {
      await page.click('nav >> text=Schemas');
      await page.click('.tabs >> text=imageConvert');
      // Both registered versions side by side; the form is for the newest.
      await page.waitForSelector('.versions-side .card >> nth=1');
      expect(await page.textContent('.versions-side')).toContain('"quality"');
      await page.fill('#field-source', 'form.png');
      await page.fill('#field-output', 'form.webp');
      await page.fill('#field-quality', '500');
      await page.click('form.enqueue button[type="submit"]');
      await waitForText(page, '.field:has(#field-quality) .field-error', '100');
      expect(await page.locator('.field-error').count()).toBe(1);
      await page.screenshot({ path: join(SCREENSHOTS, 'enqueue-1280.png'), fullPage: true });
      await page.fill('#field-quality', '90');
      await page.click('form.enqueue button[type="submit"]');
      await waitForText(page, '.enqueue [role="status"]', 'Enqueued');
      expect(await page.locator('.field-error').count()).toBe(0);
      await page.click('.enqueue [role="status"] a');
      await page.waitForSelector('.job[data-state="completed"]', { timeout: 15_000 });
      expect(await page.textContent('.job')).toContain('"source": "form.png"');
    } finally {
      await context.close();
    }
    expect(consoleErrors).toEqual([]);
  });

  it('removes a registered schema version after a confirmation that names it', async () => {
    const jsonSchema = { type: 'object', properties: { url: { type: 'string' } }, required: ['url'] };
    await rawClient(queue.url, ADMIN_TOKEN).schemas.register.mutate({
      schemas: [{ name: 'sendEmail', version: 9, jsonSchema }],
    });
    const { context, page } = await signedIn(1280, 900);
    try {
      await page.click('nav >> text=Schemas');
      await page.click('.tabs >> text=sendEmail');
      await page.waitForSelector('button[data-remove-version="9"]');
      await page.click('button[data-remove-version="9"]');
      await confirm(page, 'Remove the schema of sendEmail v9 on every server?', 'Schema removed.');
      await page.waitForSelector('button[data-remove-version="9"]', { state: 'detached' });
      expect(await page.locator('button[data-remove-version="1"]').count()).toBe(1);
      const left = await rawClient(queue.url, ADMIN_TOKEN).schemas.list.query({ name: 'sendEmail' });
      expect(left.map((entry) => entry.version)).toEqual([1]);
    } finally {
      await context.close();
    }
    expect(consoleErrors).toEqual([]);
  });

  it('pauses and resumes a job type', async () => {
    const { context, page } = await signedIn(1280, 900);
    try {
      await page.click('[data-type="imageConvert"] button:text-is("Pause")');
      await page.waitForSelector('[data-type="imageConvert"] .badge.paused');
      expect((await sdk.admin.queues()).find((q) => q.name === 'imageConvert')?.paused).toBe(true);
      await page.click('[data-type="imageConvert"] button:text-is("Resume")');
      await page.waitForSelector('[data-type="imageConvert"] .badge.paused', { state: 'detached' });
      expect((await sdk.admin.queues()).find((q) => q.name === 'imageConvert')?.paused).toBe(false);
    } finally {
      await context.close();
    }
    expect(consoleErrors).toEqual([]);
  });

  it('lists the workers with the jobs they hold, and adds and removes a schedule', async () => {
    const { context, page } = await signedIn(1280, 900);
    try {
      await page.click('nav >> text=Workers');
      await page.waitForSelector(`a[href$="/jobs/${ids.slow}"]`);
      expect(await page.textContent('table')).toContain('imageConvert');
      await page.screenshot({ path: join(SCREENSHOTS, 'workers-1280.png'), fullPage: true });
      await page.click('nav >> text=Schedules');
      await page.fill('input[name="key"]', 'weekly-digest');
      await page.fill('input[name="cron"]', '0 9 * * 1');
      await page.fill('input[name="name"]', 'sendEmail');
      await page.fill('textarea[name="payload"]', '{"to": "ops@example.com", "subject": "Digest", "body": "Hi"}');
      await page.click('form button[type="submit"]');
      await waitForText(page, 'table', 'weekly-digest');
      expect((await sdk.admin.schedules()).map((schedule) => schedule.key)).toContain('weekly-digest');
      await page.screenshot({ path: join(SCREENSHOTS, 'schedules-1280.png'), fullPage: true });
      await page.click('tr:has-text("weekly-digest") button:text-is("Remove")');
      await confirm(page, 'Remove the schedule "weekly-digest"?', 'Schedule removed.');
      await page.waitForFunction(() => !document.querySelector('table')?.textContent?.includes('weekly-digest'));
      expect((await sdk.admin.schedules()).map((schedule) => schedule.key)).not.toContain('weekly-digest');
    } finally {
      await context.close();
    }
    expect(consoleErrors).toEqual([]);
  });

  it('reads at a phone’s width, with nothing wider than the screen', async () => {
    const { context, page } = await signedIn(390, 844);
    try {
      const overflow = () => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(await overflow()).toBeLessThanOrEqual(0);
      await page.screenshot({ path: join(SCREENSHOTS, 'overview-390.png'), fullPage: true });
      await page.goto(`${queue.url}/ui/jobs/${encodeURIComponent(ids.invoice!)}`);
      await page.waitForSelector('.job[data-state="completed"]');
      expect(await overflow()).toBeLessThanOrEqual(0);
      await page.screenshot({ path: join(SCREENSHOTS, 'job-390.png'), fullPage: true });
      await page.goto(`${queue.url}/ui/jobs?name=imageConvert`);
      await page.waitForSelector('tr[data-job]');
      expect(await overflow()).toBeLessThanOrEqual(0);
      await page.screenshot({ path: join(SCREENSHOTS, 'jobs-390.png'), fullPage: true });
    } finally {
      await context.close();
    }
    expect(consoleErrors).toEqual([]);
  });

  it('links a job made by moveTo back to the job it was moved from, and that job forward to it', async () => {
    const relay = await sdk.enqueue.imageConvert({ source: 'relay.png', output: 'relay.webp' });
    await until(async () => (await relay.status()).state === 'completed', 15_000);
    const movedTo = (await relay.status()).movedTo as string;
    const { context, page } = await signedIn(1280, 900);
    try {
      await page.goto(`${queue.url}/ui/jobs/${encodeURIComponent(movedTo)}`);
      await page.waitForSelector('.job[data-state="ready"]');
      await page.click(`.facts a[href$="${relay.id}"]`);
      await page.waitForSelector('.job[data-state="completed"]');
      expect(await page.textContent('h1')).toBe(relay.id);
      expect(await page.getAttribute(`.facts a[href$="${movedTo}"]`, 'href')).toContain(movedTo);
    } finally {
      await context.close();
    }
    expect(consoleErrors).toEqual([]);
  });
});

/** A raw request, path sent as written (fetch would resolve `..` before sending). */
function rawGet(
  url: string,
  path: string,
  method = 'GET',
): Promise<{ status: number; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
    });
    req.path = path;
    req.on('error', reject);
    req.end();
  });
}

describe('the dashboard’s files', () => {
  let queue: QueueServer;

  beforeAll(async () => {
    queue = await startServer({ store: 'pglite://memory', port: 0, logger: collectingLogger() });
  });

  afterAll(async () => {
    await queue?.close();
  });

  it('serves the page for /ui/ and its client routes, uncached, and the hashed assets cached for good', async () => {
    const page = await fetch(`${queue.url}/ui/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('cache-control')).toBe('no-cache');
    expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
    const html = await page.text();
    for (const route of ['/ui/jobs', '/ui/jobs/0190b7a2-aaaa', '/ui/schemas/imageConvert']) {
      expect(await (await fetch(`${queue.url}${route}?name=x`)).text()).toBe(html);
    }
    const script = /src="(\/ui\/assets\/[\w.-]+\.js)"/.exec(html)?.[1];
    const style = /href="(\/ui\/assets\/[\w.-]+\.css)"/.exec(html)?.[1];
    const js = await fetch(`${queue.url}${script}`);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect((await fetch(`${queue.url}${style}`)).headers.get('content-type')).toBe('text/css; charset=utf-8');
    const head = await rawGet(queue.url, script!, 'HEAD');
    expect(head.status).toBe(200);
  });

  it('redirects /ui to /ui/, answers 404 for a missing file and 405 for other methods', async () => {
    const bare = await rawGet(queue.url, '/ui');
    expect(bare.status).toBe(308);
    expect(bare.headers.location).toBe('/ui/');
    expect((await rawGet(queue.url, '/ui/assets/missing-0000.js')).status).toBe(404);
    expect((await rawGet(queue.url, '/ui/', 'POST')).status).toBe(405);
  });

  it('never serves a file outside its folder, however the path is written', async () => {
    for (const path of [
      '/ui/../package.json',
      '/ui/../../package.json',
      '/ui/%2e%2e/%2e%2e/package.json',
      '/ui/..%2f..%2fpackage.json',
      '/ui/assets/..%2f..%2f..%2fsrc%2fstart-server.ts',
      '/ui/%00',
    ]) {
      const { status } = await rawGet(queue.url, path);
      expect([400, 404], path).toContain(status);
    }
    expect((await rawGet(queue.url, '/ui/%E0%A4%A')).status).toBe(400);
  });
});
