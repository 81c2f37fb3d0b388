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
  let empty: QueueServer;
  let browser: Browser;
  let worker: Worker;
  let sdk: ReturnType<typeof createClient<typeof jobs>>;
  let failing = true;
  let releaseSlow: () => void = () => {};
  const slow = new Promise<void>((resolve) => (releaseSlow = resolve));
  let releaseGate: () => void = () => {};
  const gate = new Promise<void>((resolve) => (releaseGate = resolve));
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
  const convert = (source: string, options = {}) =>
    sdk.enqueue.imageConvert({ source, output: `${source}.webp` }, options);

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    queue = await startServer({
      store: 'pglite://memory',
      port: 0,
      tokens: [{ token: ADMIN_TOKEN, scopes: ['admin'] }],
      logger: collectingLogger(),
    });
    empty = await startServer({ store: 'pglite://memory', port: 0, logger: collectingLogger() });
    sdk = createClient({ url: queue.url, jobs, token: ADMIN_TOKEN });
    worker = sdk.consume(
      'imageConvert',
      async (job, ctx) => {
        if (job.payload.source === 'slow.png') await slow;
        if (job.payload.source === 'gate.png') await gate;
        if (job.payload.source === 'relay.png') {
          await ctx.moveTo('sendEmail', { to: 'ops@example.com', subject: 'converted', body: job.payload.output });
          return { bytes: 0 };
        }
        if (failing && job.payload.source.startsWith('broken')) {
          throw new PermanentError(`printer on fire while reading ${job.payload.source}`);
        }
        return { bytes: 1000 + job.payload.quality };
      },
      { concurrency: 4, onError: () => {} },
    );
    // Jobs in every state: completed, dead, active, scheduled, cancelled, and ready (sendEmail has no worker).
    ids.invoice = (await convert('invoice.png', { idempotencyKey: 'invoice-42' })).id;
    for (const n of [1, 2]) await convert(`photo-${n}.png`);
    ids.grouped = (await convert('grouped.png', { group: 'acme' })).id;
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
      return counts.completed === 4 && counts.dead === 3 && counts.active === 1;
    }, 20_000);
    browser = await launchChromium();
  });

  afterAll(async () => {
    releaseSlow();
    releaseGate();
    await browser?.close();
    await worker?.close();
    await queue?.close();
    await empty?.close();
  });

  /** A signed-in tab at `width` pixels; any console error or uncaught exception is recorded. */
  async function signedIn(
    width: number,
    height: number,
    server = queue,
    token = ADMIN_TOKEN,
  ): Promise<{ context: BrowserContext; page: Page; calls: string[] }> {
    const context = await browser.newContext({ viewport: { width, height } });
    const page = await context.newPage();
    const calls: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error' && !outageText(message.text())) consoleErrors.push(message.text());
    });
    page.on('pageerror', (error) => consoleErrors.push(String(error)));
    page.on('request', (request) => {
      const path = new URL(request.url()).pathname;
      if (path.startsWith('/trpc/')) calls.push(path.slice('/trpc/'.length));
    });
    await page.goto(`${server.url}/ui/`);
    await page.fill('#token', token);
    await page.click('form button[type="submit"]');
    await page.waitForSelector(server === queue ? '[data-type="imageConvert"]' : '[data-testid="empty-state"]');
    return { context, page, calls };
  }

  /** Failed requests the outage test causes on purpose. */
  const outageText = (text: string) => text.includes('net::ERR_FAILED');

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

  /** How far the page is wider than the window, in pixels (0 or less: no horizontal scrolling). */
  const overflow = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);

  it('overview: counts, throughput, what needs attention, page titles, the current section and legible badges', async () => {
    const { context, page } = await signedIn(1280, 900);
    try {
      const expected = await countsOf('imageConvert');
      expect(expected).toMatchObject({ completed: 4, dead: 3, active: 1, scheduled: 2, cancelled: 1 });
      for (const [state, count] of Object.entries(expected)) {
        await waitForText(page, `[data-type="imageConvert"] [data-count="${state}"]`, String(count));
      }
      await waitForText(page, '[data-type="sendEmail"] [data-count="ready"]', '2');
      // The last hour's throughput, from the store's history: four completed, three dead.
      await waitForText(page, '[data-type="imageConvert"] [data-throughput]', '4 completed, 3 failed');
      expect(await page.textContent('[data-type="sendEmail"] header')).toContain('no worker');
      expect(await page.textContent('[data-type="imageConvert"] header')).not.toContain('no worker');
      const attention = await page.textContent('[data-testid="attention"]');
      expect(attention).toContain('3 dead jobs of imageConvert');
      expect(attention).toContain('2 ready sendEmail jobs wait: no worker reads the type');
      expect(await page.title()).toBe('Overview · workq');
      expect(await page.textContent('nav a[aria-current="page"]')).toBe('Overview');
      // Every state badge and warning reads at 4.5:1 or more against its own background (WCAG AA).
      const contrasts = await page.evaluate(() => {
        const luminance = (color: string) => {
          const [r, g, b] = (color.match(/\d+(\.\d+)?/g) ?? []).slice(0, 3).map((part) => {
            const c = Number(part) / 255;
            return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
          });
          return 0.2126 * (r ?? 0) + 0.7152 * (g ?? 0) + 0.0722 * (b ?? 0);
        };
        return Array.from(document.querySelectorAll<HTMLElement>('.state, .badge')).map((badge) => {
          const style = getComputedStyle(badge);
          const [light, dark] = [luminance(style.color), luminance(style.backgroundColor)].sort((a, b) => b - a);
          return { badge: badge.className, ratio: ((light ?? 0) + 0.05) / ((dark ?? 0) + 0.05) };
        });
      });
      expect(contrasts.length).toBeGreaterThan(6);
      for (const { badge, ratio } of contrasts) expect(ratio, badge).toBeGreaterThanOrEqual(4.5);
      await page.screenshot({ path: join(SCREENSHOTS, 'overview-1280.png'), fullPage: true });
      await page.click('nav >> text=Jobs');
      await page.waitForSelector('tr[data-job]');
      expect(await page.title()).toBe('Jobs · workq');
      expect(await page.textContent('nav a[aria-current="page"]')).toBe('Jobs');
    } finally {
      await context.close();
    }
    expect(consoleErrors).toEqual([]);
  });

  it('jobs: one call a page, errors and groups in rows, search, and bulk actions only on a filtered view', async () => {
    const { context, page, calls } = await signedIn(1280, 900);
    try {
      await page.goto(`${queue.url}/ui/jobs`);
      await page.waitForSelector(`tr[data-job="${ids.grouped}"]`);
      calls.length = 0;
      await page.reload();
      await page.waitForSelector(`tr[data-job="${ids.grouped}"]`);
      // Opening the list: the sign-in check, the counts and one page of rows, nothing more.
      expect(calls.filter((call) => call.startsWith('admin.jobs'))).toHaveLength(1);
      expect(calls.filter((call) => !call.startsWith('events.'))).toHaveLength(3);
      expect(await page.textContent(`tr[data-job="${ids.grouped}"]`)).toContain('acme');
      const deadRow = page.locator('tr[data-job]:has(.state-dead)').first();
      expect(await deadRow.locator('.row-error').textContent()).toMatch(
        /^printer on fire while reading broken-\d\.png$/,
      );
      // Every job of every type: no action on them all, only a way to narrow the list.
      expect(await page.locator('.toolbar button').count()).toBe(0);
      expect(await page.textContent('section')).toContain('Filter by type or state to act on many jobs at once.');
      await page.screenshot({ path: join(SCREENSHOTS, 'jobs-1280.png'), fullPage: true });

      await page.fill('input[name="q"]', 'invoice-42');
      await page.press('input[name="q"]', 'Enter');
      await page.waitForSelector('[data-testid="match-count"][data-count="1"]');
      expect(await page.getAttribute('tr[data-job]', 'data-job')).toBe(ids.invoice);
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
      await page.fill('input[name="group"]', 'acme');
      await page.fill('input[name="q"]', '');
      await page.fill('input[name="from"]', '');
      await page.fill('input[name="to"]', '');
      await page.click('form.filters button[type="submit"]');
      await page.waitForSelector(`tr[data-job="${ids.grouped}"]`);
      expect(await page.locator('tr[data-job]').count()).toBe(1);

      // The dead jobs of one type: an action on all of them, whose question says how many and which.
      await page.goto(`${queue.url}/ui/jobs?name=imageConvert&state=dead`);
      await page.waitForSelector('[data-testid="match-count"][data-count="3"]');
      await page.click('button:text-is("Retry all 3 jobs")');
      await waitForText(page, '[role="dialog"]', 'Retry all 3 jobs: dead jobs of imageConvert?');
      // The dialog holds the focus, and Escape closes it without doing anything.
      // (It takes the focus in an effect after it renders: wait for it rather than read it once.)
      await page.waitForFunction(() => document.activeElement?.closest('[role="dialog"]') !== null);
      await page.keyboard.press('Escape');
      await page.waitForSelector('[role="dialog"]', { state: 'detached' });
      expect((await countsOf('imageConvert')).dead).toBe(3);
      // Rows chosen one by one.
      failing = false;
      await page.locator('tr[data-job] input[type="checkbox"]').nth(0).check();
      await page.locator('tr[data-job] input[type="checkbox"]').nth(1).check();
      await page.click('button:text-is("Retry 2 jobs")');
      await confirm(page, 'Retry 2 jobs (2 selected jobs)?', '2 jobs retried.');
      await page.waitForSelector('[data-testid="match-count"][data-count="1"]');
      await until(async () => (await countsOf('imageConvert')).completed === 6, 15_000);
    } finally {
      await context.close();
    }
    expect(consoleErrors).toEqual([]);
  });

  it('jobs: rows change with the event stream, and new jobs are announced, without reading the list again', async () => {
    ids.gate = (await convert('gate.png')).id;
    await until(
      async () => (await sdk.admin.queues()).length > 0 && (await countsOf('imageConvert')).active === 2,
      15_000,
    );
    const { context, page, calls } = await signedIn(1280, 900);
    try {
      await page.goto(`${queue.url}/ui/jobs?name=imageConvert`);
      await page.waitForSelector(`tr[data-job="${ids.gate}"] .state-active`);
      await page.waitForSelector('.live.on');
      calls.length = 0;
      releaseGate();
      await page.waitForSelector(`tr[data-job="${ids.gate}"] .state-completed`, { timeout: 15_000 });
      const later = await convert('later-3.png', { delayMs: HOUR_MS });
      await waitForText(page, '[data-testid="arrived"]', '1 new job');
      expect(calls.filter((call) => call.startsWith('admin.jobs'))).toEqual([]);
      await page.click('[data-testid="arrived"]');
      await page.waitForSelector(`tr[data-job="${later.id}"] .state-scheduled`);
      expect(calls.filter((call) => call.startsWith('admin.jobs'))).toHaveLength(1);
    } finally {
      await context.close();
    }
    expect(consoleErrors).toEqual([]);
  });

  it('a dead job’s page shows its error first, each attempt with its stack, its group, and completes live after a retry', async () => {
    const { context, page } = await signedIn(1280, 900);
    try {
      await page.goto(`${queue.url}/ui/jobs/${encodeURIComponent(ids.grouped!)}`);
      await page.waitForSelector('.job[data-state="completed"]');
      expect(await page.textContent('.facts')).toContain('acme');
      await page.goto(`${queue.url}/ui/jobs?name=imageConvert&state=dead`);
      await page.waitForSelector('[data-testid="match-count"][data-count="1"]');
      const deadId = await page.getAttribute('tr[data-job]', 'data-job');
      await page.click(`tr[data-job="${deadId}"] a`);
      await page.waitForSelector('.job[data-state="dead"]');
      expect(await page.title()).toBe(`Job …${deadId?.slice(-12)} · workq`);
      expect(await page.textContent('.worker-message')).toMatch(/^printer on fire while reading broken-\d\.png$/);
      const errorFirst = await page.evaluate(
        () =>
          (document.querySelector('.error-box')?.compareDocumentPosition(document.querySelector('.facts')!) ?? 0) &
          Node.DOCUMENT_POSITION_FOLLOWING,
      );
      expect(errorFirst).toBeTruthy();
      // Each failed attempt in a timeline: its class, message and the handler's stack, folded.
      const attempt = await page.textContent('.attempts li[data-attempt="1"]');
      expect(attempt).toContain('PermanentError');
      expect(attempt).toMatch(/printer on fire while reading broken-\d\.png/);
      await page.click('.attempts li[data-attempt="1"] summary');
      expect(await page.textContent('.attempts li[data-attempt="1"] pre')).toContain('dashboard.test.ts');
      await page.screenshot({ path: join(SCREENSHOTS, 'dead-job-1280.png'), fullPage: true });
      await page.click('.job-head button:text-is("Retry")');
      await confirm(page, 'Retry 1 job (job', '1 job retried.');
      // The page learns of the completion from the server's event stream.
      await page.waitForSelector('.job[data-state="completed"]', { timeout: 15_000 });
      expect(await page.textContent('.job')).toContain('"bytes": 1080');
      expect((await countsOf('imageConvert')).dead).toBeUndefined();
    } finally {
      await context.close();
    }
    expect(consoleErrors).toEqual([]);
  });

  it('enqueues from the form at the newest version a worker reads, with defaults and errors in words', async () => {
    const jsonSchema = { type: 'object', properties: { url: { type: 'string' } }, required: ['url'] };
    await rawClient(queue.url, ADMIN_TOKEN).schemas.register.mutate({
      schemas: [
        { name: 'imageConvert', version: 3, jsonSchema },
        { name: 'sendEmail', version: 9, jsonSchema },
      ],
    });
    const { context, page } = await signedIn(1280, 900);
    try {
      await page.click('nav >> text=Schemas');
      await page.click('.tabs >> text=imageConvert');
      await page.waitForSelector('.versions-side .card >> nth=2');
      // v3 is registered, but the worker reads up to v2: the form starts there.
      expect(await page.inputValue('form.enqueue header select')).toBe('2');
      expect(await page.textContent('form.enqueue header select')).toContain('v2 (a worker reads it)');
      expect(await page.textContent('.field:has(#field-format) label')).toContain('default: "webp"');
      expect(await page.inputValue('#field-format')).toBe('"webp"');
      expect(await page.textContent('.field:has(#field-quality) label')).toContain('default: 80');
      await page.fill('#field-source', 'form.png');
      await page.fill('#field-output', 'form.webp');
      await page.fill('#field-quality', '500');
      await page.click('form.enqueue button[type="submit"]');
      await waitForText(page, '.field:has(#field-quality) .field-error', 'must be at most 100');
      expect(await page.locator('.field-error').count()).toBe(1);
      await page.screenshot({ path: join(SCREENSHOTS, 'enqueue-1280.png'), fullPage: true });
      await page.fill('#field-quality', '90');
      await page.click('form.enqueue button[type="submit"]');
      await waitForText(page, '.enqueue [role="status"]', 'Enqueued');
      expect(await page.locator('.field-error').count()).toBe(0);
      await page.click('.enqueue [role="status"] a');
      await page.waitForSelector('.job[data-state="completed"]', { timeout: 15_000 });
      expect(await page.textContent('.job')).toContain('"source": "form.png"');

      // No worker reads sendEmail: the form says so, and an address is checked in words, not as a regex.
      await page.click('nav >> text=Schemas');
      await page.click('.tabs >> text=sendEmail');
      await page.selectOption('form.enqueue header select', '1');
      await page.waitForSelector('[data-testid="unread-version"]');
      await page.fill('#field-to', 'not-an-address');
      await page.fill('#field-subject', 'Hi');
      await page.fill('#field-body', 'Hello');
      await page.click('form.enqueue button[type="submit"]');
      await waitForText(page, '.field:has(#field-to) .field-error', 'must be an email address');
      expect(await page.textContent('form.enqueue')).not.toMatch(/\^|\$"/);

      // A version removed after a confirmation that names it.
      await page.click('button[data-remove-version="9"]');
      await confirm(page, 'Remove the schema of sendEmail v9 on every server?', 'Schema removed.');
      await page.waitForSelector('button[data-remove-version="9"]', { state: 'detached' });
      const left = await rawClient(queue.url, ADMIN_TOKEN).schemas.list.query({ name: 'sendEmail' });
      expect(left.map((entry) => entry.version)).toEqual([1]);
    } finally {
      await context.close();
    }
    expect(consoleErrors).toEqual([]);
  });

  it('pauses and resumes a type, lifts a hold, lists the workers with their jobs, and adds and removes a schedule', async () => {
    // sendEmail held as a handler's ctx.rateLimited holds it (an upstream said 429); its job goes back to ready.
    const consumer = rawClient(queue.url, ADMIN_TOKEN).consumer;
    const claimed = await consumer.claim.mutate({ name: 'sendEmail', maxVersion: 1, limit: 1, workerId: 'held' });
    const [held] = claimed.jobs;
    if (!held) throw new Error('no sendEmail job to hold the type with');
    const { heldUntil } = await consumer.rateLimited.mutate({ ...held, holdMs: HOUR_MS });
    const { context, page } = await signedIn(1280, 900);
    try {
      const holdBadge = '[data-type="sendEmail"] .badge.held';
      await waitForText(page, holdBadge, `held until ${await page.evaluate(formatInPage, heldUntil.getTime())}`);
      await page.click('[data-type="sendEmail"] button:text-is("Resume")');
      await page.waitForSelector(holdBadge, { state: 'detached' });
      expect((await sdk.admin.queues()).find((q) => q.name === 'sendEmail')).not.toHaveProperty('heldUntil');
      expect(await page.isVisible('[data-type="sendEmail"] button:text-is("Pause")')).toBe(true);

      await page.click('[data-type="imageConvert"] button:text-is("Pause")');
      await page.waitForSelector('[data-type="imageConvert"] .badge.paused');
      expect((await sdk.admin.queues()).find((q) => q.name === 'imageConvert')?.paused).toBe(true);
      await page.click('[data-type="imageConvert"] button:text-is("Resume")');
      await page.waitForSelector('[data-type="imageConvert"] .badge.paused', { state: 'detached' });
      expect((await sdk.admin.queues()).find((q) => q.name === 'imageConvert')?.paused).toBe(false);
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

  it('says an outage is an outage, not "0 jobs", and recovers by itself', async () => {
    const { context, page } = await signedIn(1280, 900);
    try {
      await context.route('**/trpc/**', (route) => route.abort());
      await page.click('nav >> text=Jobs');
      await waitForText(page, '[data-outage]', 'cannot be reached');
      expect(await page.textContent('[data-testid="match-count"]')).not.toMatch(/\d+ jobs?/);
      expect(await page.textContent('section')).not.toContain('Failed to fetch');
      await page.screenshot({ path: join(SCREENSHOTS, 'outage-1280.png'), fullPage: true });
      await context.unroute('**/trpc/**');
      await page.waitForSelector('tr[data-job]', { timeout: 15_000 });
      await page.waitForSelector('[data-outage]', { state: 'detached' });
    } finally {
      await context.close();
    }
    expect(consoleErrors).toEqual([]);
  });

  it('closes a dialog on an Escape pressed the moment it shows, before the page paints again', async () => {
    const scheduled = await convert('escape-at-once.png', { delayMs: HOUR_MS });
    const { context, page } = await signedIn(1280, 800);
    try {
      // No frames: whatever the dashboard leaves for after the next paint waits for its fallback timer instead.
      await page.addInitScript(() => {
        window.requestAnimationFrame = () => 0;
      });
      await page.goto(`${queue.url}/ui/jobs/${encodeURIComponent(scheduled.id)}`);
      await page.waitForSelector('.job[data-state="scheduled"]');
      await page.click('.job-head button:text-is("Cancel")');
      await page.waitForSelector('[role="dialog"]');
      await page.keyboard.press('Escape');
      await page.waitForSelector('[role="dialog"]', { state: 'detached', timeout: 5_000 });
      expect((await scheduled.status()).state).toBe('scheduled');
    } finally {
      await context.close();
    }
  });

  it('reads at a phone’s width, with nothing wider than the screen; dialogs close on Escape; a delayed job runs now', async () => {
    const wide = await convert(`wide-${'x'.repeat(400)}.png`, { delayMs: HOUR_MS });
    const { context, page } = await signedIn(390, 844);
    try {
      expect(await overflow(page)).toBeLessThanOrEqual(0);
      await page.screenshot({ path: join(SCREENSHOTS, 'overview-390.png'), fullPage: true });
      await page.goto(`${queue.url}/ui/jobs/${encodeURIComponent(wide.id)}`);
      await page.waitForSelector('.job[data-state="scheduled"]');
      expect(await overflow(page)).toBeLessThanOrEqual(0);
      await page.click('.job-head button:text-is("Cancel")');
      await page.waitForSelector('[role="dialog"]');
      await page.keyboard.press('Escape');
      await page.waitForSelector('[role="dialog"]', { state: 'detached' });
      expect((await wide.status()).state).toBe('scheduled');
      await page.screenshot({ path: join(SCREENSHOTS, 'job-390.png'), fullPage: true });
      // Run now: the delayed job becomes ready and the worker completes it, an hour early.
      await page.click('.job-head button:text-is("Run now")');
      await confirm(page, `Run job ${wide.id} now instead of in `, 'The job is ready');
      await page.waitForSelector('.job[data-state="completed"]', { timeout: 15_000 });
      expect(await overflow(page)).toBeLessThanOrEqual(0);
      await page.goto(`${queue.url}/ui/jobs?name=imageConvert`);
      await page.waitForSelector('tr[data-job]');
      expect(await overflow(page)).toBeLessThanOrEqual(0);
      await page.screenshot({ path: join(SCREENSHOTS, 'jobs-390.png'), fullPage: true });
      await page.goto(`${queue.url}/ui/schemas/imageConvert`);
      await page.waitForSelector('form.enqueue');
      expect(await overflow(page)).toBeLessThanOrEqual(0);
    } finally {
      await context.close();
    }
    expect(consoleErrors).toEqual([]);
  });

  it('shows an empty store how to enqueue its first job, with the SDK and with curl', async () => {
    const { context, page } = await signedIn(390, 844, empty, '');
    try {
      const shown = await page.textContent('[data-testid="empty-state"]');
      expect(shown).toContain(`createClient({ url: '${empty.url}'`);
      expect(shown).toContain(`curl -sS -X POST ${empty.url}/v1/jobs/`);
      expect(await overflow(page)).toBeLessThanOrEqual(0);
      await page.screenshot({ path: join(SCREENSHOTS, 'empty-390.png'), fullPage: true });
      await page.click('nav >> text=Jobs');
      await page.waitForSelector('[data-testid="empty-state"]');
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

  it('a job page reruns a completed job in place, restores a cancelled one and removes a waiting one by its key', async () => {
    const done = await convert('rerun.png');
    await until(async () => (await done.status()).state === 'completed', 15_000);
    const firstFinish = (await done.status()).finishedAt as Date;
    const later = await convert('restore.png', { delayMs: HOUR_MS });
    await later.cancel();
    // sendEmail has no worker: the job waits until it is removed.
    const keyed = await sdk.enqueue.sendEmail(
      { to: 'linus@example.com', subject: 'Welcome', body: 'Hello!' },
      { idempotencyKey: 'welcome-linus' },
    );
    const { context, page } = await signedIn(1280, 900);
    try {
      await page.goto(`${queue.url}/ui/jobs/${encodeURIComponent(done.id)}`);
      await page.waitForSelector('.job[data-state="completed"]');
      await page.click('.job-head button:text-is("Retry")');
      await confirm(page, `Run job ${done.id} again?`, 'The job is ready again');
      await until(async () => ((await done.status()).finishedAt ?? firstFinish) > firstFinish, 15_000);
      expect(await done.status()).toMatchObject({ id: done.id, state: 'completed', attempts: 1 });
      await page.waitForSelector('.job[data-state="completed"]');

      await page.goto(`${queue.url}/ui/jobs/${encodeURIComponent(later.id)}`);
      await page.waitForSelector('.job[data-state="cancelled"]');
      await page.click('.job-head button:text-is("Restore")');
      await confirm(page, `Put job ${later.id} back?`, 'The job is waiting again.');
      await page.waitForSelector('.job[data-state="scheduled"]');
      expect((await later.status()).state).toBe('scheduled');

      await page.goto(`${queue.url}/ui/jobs/${encodeURIComponent(keyed.id)}`);
      await page.waitForSelector('.job[data-state="ready"]');
      await page.click('.job-head button:text-is("Remove")');
      await confirm(page, `Remove job ${keyed.id} for good?`, 'Job removed; the key "welcome-linus" is free.');
      // The job is gone: the page goes to its type's list.
      await page.waitForURL(/\/ui\/jobs\?name=sendEmail$/);
      await expect(sdk.admin.job(keyed.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    } finally {
      await context.close();
    }
    expect(consoleErrors).toEqual([]);
  });
});

/** A time as the dashboard shows it (`formatTime`), run in the page: its locale and zone. */
function formatInPage(ms: number): string {
  return new Date(ms).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

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
