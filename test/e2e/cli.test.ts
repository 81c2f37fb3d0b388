import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mintToken } from '@workq/queue-server';
import { freePort, until } from '@workq/test-support';
import { afterAll, describe, expect, it } from 'vitest';
import { parseServerArgs } from '../../apps/queue-server/src/cli-args.ts';
import { ChildProcesses, exited, listeningUrl, REPO_ROOT } from '../support/processes.ts';

const BIN = join(REPO_ROOT, 'apps', 'queue-server', 'bin', 'workq-server.js');

describe('parseServerArgs', () => {
  it('maps every flag', () => {
    const options = parseServerArgs(
      [
        '--store',
        'pglite://memory',
        '--host',
        '127.0.0.2',
        '--port',
        '4100',
        '--token',
        'producer-token-0001=produce:*,consume:*',
        '--token',
        'admin-token-000000001=admin',
        '--data-dir',
        '/tmp/workq-data',
        '--max-payload-bytes',
        '1024',
        '--max-claim-bytes',
        '4096',
        '--max-children-page-bytes',
        '8192',
        '--max-batch-size',
        '20',
        '--max-trpc-batch-size',
        '5',
        '--max-long-poll-ms',
        '3000',
      ],
      {},
    );
    expect(options).toEqual({
      store: 'pglite://memory',
      host: '127.0.0.2',
      port: 4100,
      tokens: [
        { token: 'producer-token-0001', scopes: ['produce:*', 'consume:*'] },
        { token: 'admin-token-000000001', scopes: ['admin'] },
      ],
      dataDir: '/tmp/workq-data',
      limits: {
        maxPayloadBytes: 1024,
        maxClaimBytes: 4096,
        maxChildrenPageBytes: 8192,
        maxBatchSize: 20,
        maxTrpcBatchSize: 5,
        maxLongPollMs: 3000,
      },
    });
  });

  it('reads WORKQ_* environment variables', () => {
    const options = parseServerArgs([], {
      WORKQ_STORE: 'postgres://db/x',
      WORKQ_HOST: '::1',
      WORKQ_PORT: '4200',
      WORKQ_TOKENS: 'admin-token-000000001=admin;worker-token-000001=consume:x',
      WORKQ_DATA_DIR: 'data',
      WORKQ_MAX_PAYLOAD_BYTES: '99',
      WORKQ_MAX_CLAIM_BYTES: '990',
      WORKQ_MAX_CHILDREN_PAGE_BYTES: '2048',
      WORKQ_MAX_BATCH_SIZE: '7',
      WORKQ_MAX_TRPC_BATCH_SIZE: '3',
      WORKQ_MAX_LONG_POLL_MS: '100',
    });
    expect(options).toEqual({
      store: 'postgres://db/x',
      host: '::1',
      port: 4200,
      tokens: [
        { token: 'admin-token-000000001', scopes: ['admin'] },
        { token: 'worker-token-000001', scopes: ['consume:x'] },
      ],
      dataDir: 'data',
      limits: {
        maxPayloadBytes: 99,
        maxClaimBytes: 990,
        maxChildrenPageBytes: 2048,
        maxBatchSize: 7,
        maxTrpcBatchSize: 3,
        maxLongPollMs: 100,
      },
    });
  });

  it('lets flags win over the environment', () => {
    const options = parseServerArgs(
      ['--port', '5000', '--token', 'flag-token-0000001=produce:x', '--max-batch-size', '2'],
      {
        WORKQ_PORT: '6000',
        WORKQ_TOKENS: 'env-token-00000001=admin',
        WORKQ_MAX_BATCH_SIZE: '9',
        WORKQ_STORE: 'pglite://memory',
      },
    );
    expect(options).toMatchObject({
      port: 5000,
      tokens: [{ token: 'flag-token-0000001', scopes: ['produce:x'] }],
      limits: { maxBatchSize: 2 },
      store: 'pglite://memory',
    });
  });

  it('leaves unset options to the server defaults and answers --help', () => {
    expect(parseServerArgs([], {})).toEqual({
      store: undefined,
      host: undefined,
      port: undefined,
      tokens: [],
      dataDir: undefined,
      limits: {},
    });
    expect(parseServerArgs(['--help'], {})).toBe('help');
  });

  it('rejects malformed values with a message naming the option', () => {
    expect(() => parseServerArgs(['--port', 'abc'], {})).toThrow(/port/);
    expect(() => parseServerArgs([], { WORKQ_MAX_BATCH_SIZE: '-1' })).toThrow(/max-batch-size/);
    expect(() => parseServerArgs(['--token', 'no-scopes-here'], {})).toThrow(/<token>=<scope>/);
    expect(() => parseServerArgs(['--no-such-flag'], {})).toThrow();
  });

  it('maps --token-secret and repeatable --cors-origin, and their WORKQ_* variables; flags win', () => {
    const secret = 'a-token-secret-of-at-least-32-bytes!';
    expect(
      parseServerArgs(
        [
          '--token-secret',
          secret,
          '--cors-origin',
          'https://app.example.com',
          '--cors-origin',
          'http://localhost:5173',
        ],
        {},
      ),
    ).toMatchObject({
      tokenSecret: secret,
      cors: { origins: ['https://app.example.com', 'http://localhost:5173'] },
    });
    const env = { WORKQ_TOKEN_SECRET: secret, WORKQ_CORS_ORIGINS: 'https://a.example.com, https://b.example.com' };
    expect(parseServerArgs([], env)).toMatchObject({
      tokenSecret: secret,
      cors: { origins: ['https://a.example.com', 'https://b.example.com'] },
    });
    expect(
      parseServerArgs(['--token-secret', `${secret}-flag`, '--cors-origin', 'https://c.example.com'], env),
    ).toMatchObject({ tokenSecret: `${secret}-flag`, cors: { origins: ['https://c.example.com'] } });
    const unset = parseServerArgs([], { WORKQ_TOKEN_SECRET: '', WORKQ_CORS_ORIGINS: '' });
    expect(unset).not.toHaveProperty('tokenSecret');
    expect(unset).not.toHaveProperty('cors');
  });

  it('reads a crontab file, checking its entries', () => {
    const dir = mkdtempSync(join(tmpdir(), 'workq-crontab-'));
    try {
      const file = (name: string, text: string) => {
        writeFileSync(join(dir, name), text);
        return join(dir, name);
      };
      const entry = { cron: '0 3 * * *', name: 'generateReport', timezone: 'Europe/Berlin', payload: { a: 1 } };
      const good = file('good.json', JSON.stringify([entry]));
      expect(parseServerArgs(['--crontab', good], {})).toMatchObject({ crontab: [entry] });
      expect(parseServerArgs([], { WORKQ_CRONTAB: good })).toMatchObject({ crontab: [entry] });
      expect(() =>
        parseServerArgs(['--crontab', file('bad.json', '[{"cron": "0 25 * * *", "name": "x"}]')], {}),
      ).toThrow(/Crontab entry 1 \("0 25 \* \* \*" for "x"\) cannot be read: .*hour/);
      expect(() => parseServerArgs(['--crontab', file('object.json', '{}')], {})).toThrow(/JSON array/);
      expect(() => parseServerArgs(['--crontab', file('broken.json', '[{')], {})).toThrow(/could not be read as JSON/);
      expect(() => parseServerArgs(['--crontab', join(dir, 'missing.json')], {})).toThrow(/missing\.json/);
      // The documented example crontab is one the server accepts.
      const operations = readFileSync(join(REPO_ROOT, 'docs', 'operations.md'), 'utf8');
      const example = operations.split('## Recurring jobs')[1]?.split('```json')[1]?.split('```')[0] ?? '';
      expect(parseServerArgs(['--crontab', file('example.json', example)], {})).toMatchObject({
        crontab: [
          { name: 'generateReport', timezone: 'Europe/Berlin' },
          { name: 'sendEmail', key: 'digest' },
        ],
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the workq-server command', () => {
  const children = new ChildProcesses();

  afterAll(async () => {
    await children.killAll();
  });

  it('serves /healthz, sends / to the dashboard, prints its URL, never prints its tokens, and exits 0 on SIGTERM', async () => {
    const secret = 'cli-secret-4e7a90';
    const server = children.spawnNode([BIN, '--store', 'pglite://memory', '--port', '0', '--token', `${secret}=admin`]);
    const url = await listeningUrl(server);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const refused = await fetch(`${url}/trpc/admin.stats`);
    expect(refused.status).toBe(401);
    const allowed = await fetch(`${url}/trpc/admin.stats`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    expect(allowed.status).toBe(200);
    const root = await fetch(`${url}/`, { redirect: 'manual' });
    expect([root.status, root.headers.get('location')]).toEqual([302, '/ui/']);

    children.signal(server, 'SIGTERM');
    expect(await exited(server)).toEqual({ code: 0, signal: null });
    // The launcher's own child (the server) has exited too: nothing is left in its process group.
    await until(() => !groupAlive(server.pid as number), 10_000, 50);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server.output()).toContain(`"dashboard":"${url}/ui/"`);
    expect(server.output()).not.toContain(secret);
  }, 90_000);

  it('shuts down cleanly on SIGTERM when its event loop is slow to take the signal, as on a loaded machine', async () => {
    const slow = join(REPO_ROOT, 'test', 'fixtures', 'slow-event-loop.mjs');
    const server = children.spawnNode([BIN, '--store', 'pglite://memory', '--port', '0'], {
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${slow}`.trim(),
    });
    const url = await listeningUrl(server);
    const healthy = () =>
      fetch(`${url}/healthz`).then(
        (response) => response.status === 200,
        () => false,
      );
    await until(healthy, 60_000, 100);
    children.signal(server, 'SIGTERM');
    // The launcher relays the signal and waits: nothing between it and the server kills it meanwhile.
    expect(await exited(server)).toEqual({ code: 0, signal: null });
  }, 90_000);

  it('accepts signed tokens and answers preflights from WORKQ_TOKEN_SECRET and WORKQ_CORS_ORIGINS', async () => {
    const secret = 'cli-token-secret-0123456789abcdef-7f3a';
    const server = children.spawnNode([BIN, '--store', 'pglite://memory', '--port', '0'], {
      WORKQ_TOKEN_SECRET: secret,
      WORKQ_CORS_ORIGINS: 'https://app.example.com',
    });
    const url = await listeningUrl(server);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect((await fetch(`${url}/metrics`)).status).toBe(401);
    const token = await mintToken({ secret, scopes: ['admin'], expiresInMs: 60_000 });
    expect((await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    const preflight = await fetch(`${url}/trpc/jobs.enqueue`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    children.signal(server, 'SIGTERM');
    expect(await exited(server)).toEqual({ code: 0, signal: null });
    expect(server.output()).toContain('signed tokens');
    expect(server.output()).not.toContain(secret);
  }, 90_000);

  it('refuses a short token secret and a "*" CORS origin, exiting non-zero without printing the secret', async () => {
    const secret = 'short-7c1d';
    const short = children.spawnNode([BIN, '--store', 'pglite://memory', '--port', '0'], {
      WORKQ_TOKEN_SECRET: secret,
    });
    expect((await exited(short)).code).not.toBe(0);
    expect(short.output()).toContain('at least 32 bytes');
    expect(short.output()).not.toContain(secret);
    const wildcard = children.spawnNode([BIN, '--store', 'pglite://memory', '--port', '0', '--cors-origin', '*']);
    expect((await exited(wildcard)).code).not.toBe(0);
    expect(wildcard.output()).toContain('"*" is not accepted');
  }, 60_000);

  it('refuses --host 0.0.0.0 without tokens, exiting non-zero with the reason', async () => {
    const port = await freePort();
    const server = children.spawnNode([BIN, '--store', 'pglite://memory', '--host', '0.0.0.0', '--port', String(port)]);
    const { code } = await exited(server);
    expect(code).not.toBe(0);
    expect(server.output()).toContain('Refusing to serve 0.0.0.0 without tokens');
    expect(server.output()).toMatch(/--token|WORKQ_TOKENS/);
  }, 60_000);
});

function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}
