import { describe, expect, it } from 'vitest';
import { parseServerArgs } from '../cli-args.ts';
import { DEFAULT_LIMITS } from '../options.ts';
import { httpServerOptions } from './server-limits.ts';

describe('httpServerOptions', () => {
  it("gives Node the limits, checked at least once a second (Node's own default is every 30 s)", () => {
    expect(httpServerOptions(DEFAULT_LIMITS)).toEqual({
      headersTimeout: 10_000,
      requestTimeout: 30_000,
      keepAliveTimeout: 65_000,
      connectionsCheckingInterval: 1_000,
    });
    expect(httpServerOptions({ ...DEFAULT_LIMITS, headersTimeoutMs: 300 }).connectionsCheckingInterval).toBe(150);
  });

  it('refuses a limit below 1, and headers allowed longer than the whole request (VALIDATION)', () => {
    for (const change of [{ maxConnections: 0 }, { keepAliveTimeoutMs: 0 }, { headersTimeoutMs: 40_000 }]) {
      expect(() => httpServerOptions({ ...DEFAULT_LIMITS, ...change }), JSON.stringify(change)).toThrow(
        expect.objectContaining({ code: 'VALIDATION' }),
      );
    }
  });
});

describe('the HTTP edge flags', () => {
  it('reads the limits and allowed hosts from flags, then WORKQ_* variables', () => {
    const fromFlags = parseServerArgs(
      [
        '--headers-timeout-ms=5000',
        '--request-timeout-ms=20000',
        '--keep-alive-timeout-ms=70000',
        '--max-connections=500',
        '--allowed-host=workq.test',
        '--allowed-host=queue.local',
      ],
      {},
    );
    expect(fromFlags).toMatchObject({
      limits: { headersTimeoutMs: 5_000, requestTimeoutMs: 20_000, keepAliveTimeoutMs: 70_000, maxConnections: 500 },
      allowedHosts: ['workq.test', 'queue.local'],
    });
    const fromEnv = parseServerArgs([], { WORKQ_ALLOWED_HOSTS: 'a.test, b.test', WORKQ_MAX_CONNECTIONS: '9' });
    expect(fromEnv).toMatchObject({ limits: { maxConnections: 9 }, allowedHosts: ['a.test', 'b.test'] });
  });
});
