import type { QueueServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient, PermanentError } from '@workq/sdk';
import { until } from '@workq/test-support';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumMissing, launchChromium } from '../support/chromium.ts';
import { openSignedIn, startDashboardServer } from '../support/dashboard-page.ts';
import { rawClient } from '../support/raw-client.ts';

/**
 * What producers and workers send is shown to operators: payloads, results, errors, groups, keys, worker names
 * and schedules. Text that is markup, or a script URL, must show as the text it is in the dashboard, in
 * Chromium: no element it describes is made, no handler in it runs, no link goes to it.
 */
const ADMIN_TOKEN = 'dashboard-hostile-admin-token';
const MARKUP = {
  img: `<img src=x onerror="window.__pwned='img'">`,
  svg: `"><svg onload="window.__pwned='svg'">`,
  script: `</pre></script><script>window.__pwned='script'</script>`,
  href: `javascript:window.__pwned='href'`,
};

const missingBrowser = chromiumMissing('dashboard (hostile text)');

describe.skipIf(missingBrowser)('the dashboard shows hostile text as text, in Chromium', () => {
  let queue: QueueServer;
  let browser: Browser;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    queue = await startDashboardServer(ADMIN_TOKEN);
    const sdk = createClient({ url: queue.url, jobs, token: ADMIN_TOKEN });
    const options = { group: MARKUP.script, idempotencyKey: MARKUP.img, maxAttempts: 1 };
    ids.payload = (await sdk.enqueue.imageConvert({ source: MARKUP.img, output: MARKUP.svg }, options)).id;
    ids.failed = (await sdk.enqueue.imageConvert({ source: 'broken.png', output: MARKUP.href })).id;
    const worker = sdk.consume(
      'imageConvert',
      (job) => {
        if (job.payload.source === 'broken.png') throw new PermanentError(`${MARKUP.img} ${MARKUP.script}`);
        return { bytes: 1 };
      },
      { onError: () => {} },
    );
    await until(async () => (await sdk.admin.stats()).counts.every((row) => row.state !== 'ready'), 15_000);
    await worker.close();
    // A worker named in markup, whose results hold markup and a script URL where a URL is expected.
    ids.report = (
      await sdk.enqueue.generateReport({ accountId: MARKUP.svg, kind: 'usage', from: '2026-01-01', to: '2026-01-31' })
    ).id;
    const consumer = rawClient(queue.url, ADMIN_TOKEN).consumer;
    const claimed = await consumer.claim.mutate({
      name: 'generateReport',
      maxVersion: 1,
      limit: 1,
      workerId: MARKUP.svg.slice(0, 64),
      host: MARKUP.img,
    });
    const [report] = claimed.jobs;
    if (!report) throw new Error('no report to complete');
    await consumer.complete.mutate({ items: [{ ...report, result: { url: MARKUP.href, rows: 1 } }] });
    await sdk.admin.upsertSchedule({
      key: MARKUP.script,
      cron: '0 9 * * 1',
      name: 'sendEmail',
      payload: { to: 'ops@example.com', subject: MARKUP.img, body: MARKUP.svg },
    });
    // A worker still waiting, so the workers page lists one by its hostile name and host.
    void rawClient(queue.url, ADMIN_TOKEN)
      .consumer.claim.mutate({
        name: 'sendEmail',
        maxVersion: 1,
        limit: 1,
        workerId: MARKUP.img,
        host: MARKUP.svg,
        waitMs: 1,
      })
      .catch(() => undefined);
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await queue?.close();
  });

  /** Opens `path` signed in, waits for `ready` and for `shown` in its text, and answers what hostile text did there. */
  async function visit(path: string, ready: string, shown: string[] = []) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page: Page = await context.newPage();
    const dialogs: string[] = [];
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    try {
      await openSignedIn(page, queue, ADMIN_TOKEN, path);
      await page.waitForSelector(ready);
      await page.waitForFunction(
        (texts) => texts.every((text) => document.querySelector('main')?.textContent?.includes(text)),
        shown,
      );
      return {
        text: (await page.textContent('main')) ?? '',
        pwned: await page.evaluate(() => (window as { __pwned?: string }).__pwned),
        made: await page.evaluate(() => document.querySelectorAll('main img, main svg, main script').length),
        scriptLinks: await page.$$eval('a', (links) =>
          links.map((link) => link.getAttribute('href') ?? '').filter((href) => /^\s*javascript:/i.test(href)),
        ),
        dialogs,
      };
    } finally {
      await context.close();
    }
  }

  /** Opens `path` as `visit` does and expects every hostile text there inert, and each of `shown` as text. */
  const expectInert = async (path: string, ready: string, shown: string[] = []) => {
    const seen = await visit(path, ready, shown);
    expect(seen.pwned).toBeUndefined();
    expect(seen.made).toBe(0);
    expect(seen.scriptLinks).toEqual([]);
    expect(seen.dialogs).toEqual([]);
    for (const text of shown) expect(seen.text).toContain(text);
  };

  it('in a job’s payload, group and key, and in a worker’s error', async () => {
    await expectInert(`/jobs/${ids.payload}`, '.job[data-state="completed"]', ['onerror=', 'onload=']);
    await expectInert(`/jobs/${ids.failed}`, '.job[data-state="dead"]', [MARKUP.img, '</script><script>']);
  });

  it('in the job list, a result where a URL is expected, the workers and the schedules', async () => {
    await expectInert('/jobs?name=imageConvert', 'tr[data-job]', []);
    await expectInert(`/jobs/${ids.report}`, '.job[data-state="completed"]', ['javascript:']);
    await expectInert('/workers', 'table', [MARKUP.img]);
    await expectInert('/schedules', 'table', ['</script><script>']);
  });
});
