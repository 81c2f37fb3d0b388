import { request } from 'node:http';
import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectingLogger } from '../support/quiet-logger.ts';

/**
 * The longest the event loop (the server's: it runs in this process) was held while `work` ran, in
 * ms, as the widest gap between ticks of a 5 ms timer; the least of `runs` runs, since other
 * processes crowding the machine's cores widen gaps at random, while a decode that blocks does so
 * on every run.
 */
async function longestStall(work: () => Promise<void>, runs = 3): Promise<number> {
  let least = Number.POSITIVE_INFINITY;
  for (let run = 0; run < runs; run++) {
    let longestMs = 0;
    let lastTickAt = performance.now();
    const ticker = setInterval(() => {
      const now = performance.now();
      longestMs = Math.max(longestMs, now - lastTickAt);
      lastTickAt = now;
    }, 5);
    try {
      await work();
      await new Promise((resolve) => setTimeout(resolve, 20));
    } finally {
      clearInterval(ticker);
    }
    least = Math.min(least, longestMs);
  }
  return least;
}

/** POSTs `body` (already bytes, so the client does little) and resolves with the status and text. */
function post(url: string, body: Buffer): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const headers = { 'content-type': 'application/json', 'content-length': body.length };
    const req = request(url, { method: 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const deep = (levels: number, leaf: string) => `${'['.repeat(levels)}${leaf}${']'.repeat(levels)}`;

/** Messages built to make a decode step slow, each with the path it is sent to. */
const CASES = [
  {
    label: 'a 4 M-digit superjson bigint on jobs.enqueue',
    path: '/trpc/jobs.enqueue',
    body: JSON.stringify({
      json: { name: 'imageConvert', version: 1, payload: { source: 'a', output: 'b', n: '9'.repeat(4_000_000) } },
      meta: { values: { 'payload.n': ['bigint'] }, v: 1 },
    }),
  },
  {
    label: 'a 4 M-digit superjson bigint on jobs.enqueueMany',
    path: '/trpc/jobs.enqueueMany',
    body: JSON.stringify({
      json: { name: 'imageConvert', version: 1, payloads: [{ n: '9'.repeat(4_000_000) }] },
      meta: { values: { 'payloads.0.n': ['bigint'] }, v: 1 },
    }),
  },
  {
    label: 'a 4 MB Date string on jobs.enqueueMany',
    path: '/trpc/jobs.enqueueMany',
    body: JSON.stringify({
      json: { name: 'imageConvert', version: 1, payloads: [{ at: `2020-01-01${' '.repeat(4_000_000)}` }] },
      meta: { values: { 'payloads.0.at': ['Date'] }, v: 1 },
    }),
  },
  {
    label: 'a 500 k-digit superjson bigint in a tRPC batch',
    path: '/trpc/jobs.enqueue?batch=1',
    body: JSON.stringify({
      0: {
        json: { name: 'imageConvert', version: 1, payload: { source: 'a', output: 'b', n: '9'.repeat(500_000) } },
        meta: { values: { 'payload.n': ['bigint'] }, v: 1 },
      },
    }),
  },
  {
    label: 'superjson meta nested 300,000 levels deep, in a tRPC batch',
    path: '/trpc/jobs.enqueue?batch=1',
    body: `{"0":{"json":null,"meta":{"v":1,"values":${'{"a":'.repeat(300_000)}["undefined"]${'}'.repeat(300_000)}}}}`,
  },
  {
    label: 'a body nested 300,000 levels deep, on jobs.enqueueMany',
    path: '/trpc/jobs.enqueueMany',
    body: `{"json":{"name":"imageConvert","version":1,"payloads":${deep(300_000, '1')}}}`,
  },
  {
    label: 'a body nested 300,000 levels deep, in a tRPC batch',
    path: '/trpc/jobs.enqueueMany?batch=1',
    body: `{"0":{"json":{"name":"imageConvert","version":1,"payloads":${deep(300_000, '1')}}}}`,
  },
  {
    label: 'a body nested 300,000 levels deep, on plain HTTP',
    path: '/v1/jobs/imageConvert',
    body: `{"version":1,"payload":${deep(300_000, '1')}}`,
  },
] as const;

describe('request bodies are bounded before they are decoded', () => {
  let server: QueueServer;

  beforeAll(async () => {
    server = await startServer({ store: 'pglite://memory', port: 0, jobs, logger: collectingLogger() });
  });

  afterAll(async () => {
    await server?.close();
  });

  it.each(CASES)('answers $label with a client error, never holding the loop > 100 ms', async ({ path, body }) => {
    const bytes = Buffer.from(body);
    let answer = { status: 0, text: '' };
    const stallMs = await longestStall(async () => {
      answer = await post(`${server.url}${path}`, bytes);
    });
    expect(answer.text).toMatch(/PAYLOAD_TOO_LARGE|VALIDATION|BAD_REQUEST/);
    if (!path.includes('batch=1')) expect([400, 413]).toContain(answer.status);
    expect(stallMs).toBeLessThan(100);
  });

  it('holds a single enqueue to what one payload may take, before parsing it (413)', async () => {
    const response = await fetch(`${server.url}/trpc/jobs.enqueue`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ json: { name: 'imageConvert', version: 1, payload: { source: 'x'.repeat(2_000_000) } } }),
    });
    expect(response.status).toBe(413);
    expect(await response.text()).toContain('exceeds');
  });
});
