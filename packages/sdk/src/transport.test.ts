import { describe, expect, it, vi } from 'vitest';
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
  const { call } = createTransport({ url: 'http://queue.invalid', token, fetch: recording, timeoutMs: 1_000 });
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

/** A fetch that never answers: its promise settles only when the request's signal aborts. */
const silent = ((_input: RequestInfo | URL, init?: RequestInit) =>
  new Promise((_, reject) => {
    const signal = init?.signal;
    if (signal?.aborted) reject(signal.reason);
    signal?.addEventListener('abort', () => reject(signal.reason));
  })) as typeof fetch;

describe('createTransport time limits', () => {
  it('fails a request the server does not answer with TIMEOUT (retryable) once the time limit passes', async () => {
    const { call } = createTransport({ url: 'http://queue.invalid', fetch: silent, timeoutMs: 100 });
    const startedAt = Date.now();
    const outcome = call((api, signal) => api.schemas.list.query(undefined, { signal }));
    await expect(outcome).rejects.toMatchObject({
      code: 'TIMEOUT',
      retryable: true,
      message: expect.stringContaining('within 100 ms'),
    });
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(95);
    expect(Date.now() - startedAt).toBeLessThan(1_000);
  });

  it('gives a request the server holds on purpose its wait on top, and lets one ask for less time', async () => {
    const { call } = createTransport({ url: 'http://queue.invalid', fetch: silent, timeoutMs: 100 });
    const held = call((api, signal) => api.schemas.list.query(undefined, { signal }), { waitMs: 200 });
    await expect(held).rejects.toMatchObject({ message: expect.stringContaining('within 300 ms') });
    const shorter = call((api, signal) => api.schemas.list.query(undefined, { signal }), { timeoutMs: 20 });
    await expect(shorter).rejects.toMatchObject({ message: expect.stringContaining('within 20 ms') });
    const longer = call((api, signal) => api.schemas.list.query(undefined, { signal }), { timeoutMs: 5_000 });
    await expect(longer).rejects.toMatchObject({ message: expect.stringContaining('within 100 ms') });
  });

  it('ends a request early when the caller’s signal aborts, without calling that a timeout', async () => {
    const { call } = createTransport({ url: 'http://queue.invalid', fetch: silent, timeoutMs: 10_000 });
    const stop = new AbortController();
    const outcome = call((api, signal) => api.schemas.list.query(undefined, { signal }), { signal: stop.signal });
    stop.abort();
    await expect(outcome).rejects.toMatchObject({ code: 'UNAVAILABLE' });
  });
});

/** A fetch that answers every request with `answer`, recording each request's method, URL and body. */
function answering(answer: unknown, sent: { method: string | undefined; url: string; body: unknown }[]): typeof fetch {
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    sent.push({ method: init?.method, url: String(input), body: JSON.parse(String(init?.body)) });
    return new Response(JSON.stringify(answer), { headers: { 'content-type': 'application/json' } });
  }) as typeof fetch;
}

describe('createTransport mutations', () => {
  it('sends a mutation as one POST of its serialized input, and a successful one aborts no signal', async () => {
    const sent: { method: string | undefined; url: string; body: unknown }[] = [];
    const answer = { result: { data: { json: { claims: 2 } } } };
    const { call } = createTransport({
      url: 'http://queue.invalid/',
      fetch: answering(answer, sent),
      timeoutMs: 1_000,
    });
    const abort = vi.spyOn(AbortController.prototype, 'abort');
    try {
      const outcome = await call((api, signal) => api.consumer.stopWaiting.mutate({ workerId: 'w1' }, { signal }));
      expect(outcome).toEqual({ claims: 2 });
      expect(abort).not.toHaveBeenCalled();
    } finally {
      abort.mockRestore();
    }
    expect(sent).toEqual([
      { method: 'POST', url: 'http://queue.invalid/trpc/consumer.stopWaiting', body: { json: { workerId: 'w1' } } },
    ]);
  });

  it('fails a mutation the server refuses with the code the server gave', async () => {
    const refusal = {
      error: {
        json: {
          code: -32004,
          message: 'No job abc.',
          data: { code: 'NOT_FOUND', httpStatus: 404, workqCode: 'NOT_FOUND', retryable: false },
        },
      },
    };
    const { call } = createTransport({ url: 'http://queue.invalid', fetch: answering(refusal, []), timeoutMs: 1_000 });
    const outcome = call((api, signal) =>
      api.jobs.cancel.mutate({ id: '01a2379f-2900-76d0-ae7d-768000000000' }, { signal }),
    );
    await expect(outcome).rejects.toMatchObject({ code: 'NOT_FOUND', retryable: false, message: 'No job abc.' });
  });

  it('fails a mutation the server does not answer with TIMEOUT, and one the caller ends early with UNAVAILABLE', async () => {
    const { call } = createTransport({ url: 'http://queue.invalid', fetch: silent, timeoutMs: 50 });
    const held = call((api, signal) => api.consumer.stopWaiting.mutate({ workerId: 'w1' }, { signal }));
    await expect(held).rejects.toMatchObject({ code: 'TIMEOUT', message: expect.stringContaining('within 50 ms') });
    const stop = new AbortController();
    const ended = call((api, signal) => api.consumer.stopWaiting.mutate({ workerId: 'w1' }, { signal }), {
      signal: stop.signal,
    });
    stop.abort();
    await expect(ended).rejects.toMatchObject({ code: 'UNAVAILABLE' });
  });
});
