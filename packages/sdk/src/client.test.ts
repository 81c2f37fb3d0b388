import { createServer } from 'node:net';
import { defineCatalog, defineJob } from '@workq/core';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defaultFetch } from '#default-fetch';
import { createClient } from './client.ts';

const jobs = defineCatalog({ probe: defineJob({ version: 1, payload: z.object({ n: z.number() }) }) });

/** A loopback URL nothing listens on: a port just taken and let go. */
async function closedUrl(): Promise<string> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return `http://127.0.0.1:${port}`;
}

describe('createClient().ready()', () => {
  it('fails fast with UNAVAILABLE when no server answers, and sends again on the next call', async () => {
    let requests = 0;
    const counting = ((input: RequestInfo | URL, init?: RequestInit) => {
      requests++;
      return defaultFetch(input, init);
    }) as typeof fetch;
    const client = createClient({ url: await closedUrl(), jobs, fetch: counting });
    await expect(client.ready()).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(requests).toBe(1);
    await expect(client.ready()).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(requests).toBe(2);
  });
});
