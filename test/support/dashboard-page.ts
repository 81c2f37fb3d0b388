import { type QueueServer, startServer } from '@workq/queue-server';
import type { Page } from 'playwright-core';
import { collectingLogger } from './quiet-logger.ts';

/** A queue server on an in-memory store, for a dashboard test that signs in with `token`, an admin's. */
export function startDashboardServer(token: string): Promise<QueueServer> {
  return startServer({
    store: 'pglite://memory',
    port: 0,
    tokens: [{ token, scopes: ['admin'] }],
    logger: collectingLogger(),
  });
}

/** Signs `page` in to the dashboard of `server` with `token`, then opens `path` (under `/ui`). */
export async function openSignedIn(page: Page, server: QueueServer, token: string, path: string): Promise<void> {
  await page.goto(`${server.url}/ui/`);
  await page.fill('#token', token);
  await page.click('form button[type="submit"]');
  await page.waitForSelector('nav');
  await page.goto(`${server.url}/ui${path}`);
}
