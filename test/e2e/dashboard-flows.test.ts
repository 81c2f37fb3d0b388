import type { QueueServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient } from '@workq/sdk';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumMissing, launchChromium } from '../support/chromium.ts';
import { openSignedIn, startDashboardServer } from '../support/dashboard-page.ts';

const ADMIN_TOKEN = 'dashboard-flows-admin-token';
const missingBrowser = chromiumMissing('dashboard flows');

describe.skipIf(missingBrowser)('a flow on the dashboard, in Chromium', () => {
  let queue: QueueServer;
  let browser: Browser;

  beforeAll(async () => {
    queue = await startDashboardServer(ADMIN_TOKEN);
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await queue?.close();
  });

  it('draws a parent’s flow as a tree, each node with its state, and names a child’s parent', async () => {
    const sdk = createClient({ url: queue.url, jobs, token: ADMIN_TOKEN, logger: false });
    const email = { to: 'ops@example.com', subject: 'report ready', body: '' };
    const report = { accountId: 'acct-1', kind: 'usage', from: '2026-03-01', to: '2026-03-31' } as const;
    const root = await sdk.enqueue.generateReport(report, {
      children: [
        sdk.child.imageConvert({ source: 'chart.png', output: 'chart.webp' }),
        sdk.child.generateReport(report, { children: [sdk.child.sendEmail(email, { onFailure: 'ignore' })] }),
      ],
    });
    const [chart, section] = (await root.status()).children ?? [];
    const [mail] = (await sdk.job('generateReport', section?.id as string).status()).children ?? [];

    const errors: string[] = [];
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const page = await context.newPage();
      page.on('pageerror', (error) => errors.push(String(error)));
      await openSignedIn(page, queue, ADMIN_TOKEN, `/jobs/${encodeURIComponent(root.id)}`);
      await page.waitForSelector('.job[data-state="waiting-children"]');
      await page.waitForSelector(`.flow-tree .flow-tree a[href$="${mail?.id}"]`);
      const tree = await page.$$eval('.flow > .flow-tree > li', (items) =>
        items.map((item) => ({
          state: item.getAttribute('data-state'),
          text: item.querySelector('.flow-node')?.textContent,
          below: Array.from(item.querySelectorAll(':scope > .flow-tree > li'), (li) => li.getAttribute('data-state')),
        })),
      );
      expect(tree).toEqual([
        { state: 'ready', text: `imageConvert ${chart?.id} ready`, below: [] },
        { state: 'waiting-children', text: `generateReport ${section?.id} waiting-children`, below: ['ready'] },
      ]);
      expect(await page.textContent('.flow h2')).toContain('2 in all, 2 not ended');

      await page.click(`.flow-tree .flow-tree a[href$="${mail?.id}"]`);
      await page.waitForSelector('.job[data-state="ready"]');
      expect(await page.textContent('h1')).toBe(mail?.id);
      expect(await page.getAttribute(`.facts a[href$="${section?.id}"]`, 'href')).toContain(section?.id);
      expect(await page.textContent('.facts')).toContain('ignore');
    } finally {
      await context.close();
    }
    expect(errors).toEqual([]);
  });
});
