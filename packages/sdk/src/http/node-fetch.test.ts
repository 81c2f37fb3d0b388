import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultFetch } from '#default-fetch';

describe('the SDK fetch on Node', () => {
  let server: Server;
  let base: string;
  const connections: unknown[] = [];

  beforeAll(async () => {
    server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => {
        body += chunk;
      });
      request.on('end', () => {
        if (request.url === '/hang') return;
        response.writeHead(request.url === '/missing' ? 404 : 200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ method: request.method, auth: request.headers.authorization ?? null, body }));
      });
    });
    server.on('connection', (socket) => connections.push(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('is the node:http client, not the global fetch', () => {
    expect(defaultFetch).toBeDefined();
    expect(defaultFetch).not.toBe(globalThis.fetch);
  });

  it('sends method, headers and body, and reads status and JSON; connections are kept alive', async () => {
    const fetch = defaultFetch as typeof globalThis.fetch;
    const before = connections.length;
    for (const text of ['one', 'two', 'three']) {
      const response = await fetch(`${base}/ok`, {
        method: 'POST',
        headers: { authorization: 'Bearer t' },
        body: text,
      });
      expect(response.ok).toBe(true);
      expect(await response.json()).toEqual({ method: 'POST', auth: 'Bearer t', body: text });
    }
    expect(connections.length - before).toBe(1);
    const missing = await fetch(`${base}/missing`, { method: 'GET' });
    expect([missing.ok, missing.status, missing.headers.get('content-type')]).toEqual([false, 404, 'application/json']);
  });

  it('rejects with an AbortError when the signal aborts, and on a refused connection', async () => {
    const fetch = defaultFetch as typeof globalThis.fetch;
    const controller = new AbortController();
    const pending = fetch(`${base}/hang`, { method: 'POST', body: 'x', signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    await expect(fetch('http://127.0.0.1:1/', { method: 'GET' })).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });
});
