import { describe, expect, it } from 'vitest';
import { createTransport, type TokenSource } from './transport.ts';

/** Sends two requests through a transport with `token`; resolves to the `Authorization` header of each. */
async function authorizationSent(token: TokenSource | undefined, between?: () => void): Promise<(string | null)[]> {
  const sent: (string | null)[] = [];
  const recording = (async (_input: RequestInfo | URL, init?: RequestInit) => {
    sent.push(new Headers(init?.headers).get('authorization'));
    return new Response(JSON.stringify({ result: { data: { json: null } } }), {
      headers: { 'content-type': 'application/json' },
    });
  }) as typeof fetch;
  const { call } = createTransport({ url: 'http://queue.invalid', token, fetch: recording });
  await call((api) => api.schemas.list.query());
  between?.();
  await call((api) => api.schemas.list.query());
  return sent;
}

describe('createTransport token', () => {
  it('sends a string token on every request, and no header without one', async () => {
    expect(await authorizationSent('s3cret')).toEqual(['Bearer s3cret', 'Bearer s3cret']);
    expect(await authorizationSent(undefined)).toEqual([null, null]);
    expect(await authorizationSent('')).toEqual([null, null]);
  });

  it('asks a token function once per request, when the request goes out', async () => {
    let current = 'first';
    let calls = 0;
    const sync = () => {
      calls++;
      return current;
    };
    const sent = await authorizationSent(sync, () => {
      expect(calls).toBe(1);
      current = 'second';
    });
    expect(sent).toEqual(['Bearer first', 'Bearer second']);
    expect(calls).toBe(2);

    current = 'third';
    const asynchronous = async () => current;
    expect(await authorizationSent(asynchronous, () => (current = ''))).toEqual(['Bearer third', null]);
  });

  it('fails a request with UNAUTHORIZED (retryable) when the token function rejects', async () => {
    const failing = () => Promise.reject(new Error('no session'));
    await expect(authorizationSent(failing)).rejects.toMatchObject({
      code: 'UNAUTHORIZED',
      retryable: true,
      message: expect.stringContaining('no session'),
    });
  });
});
