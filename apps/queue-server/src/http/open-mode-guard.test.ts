import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { createOpenModeGuard } from './open-mode-guard.ts';

const request = (path: string, headers: Record<string, string>) =>
  ({ url: path, headers }) as unknown as IncomingMessage;

describe('createOpenModeGuard', () => {
  const guard = createOpenModeGuard({
    allowedHosts: ['Workq.Test', '[fd00::1]'],
    corsLists: (origin) => origin === 'https://app.example.com',
  });
  const reasonFor = (headers: Record<string, string>, path = '/trpc/admin.queues') =>
    guard(request(path, headers))?.reason;

  it('lets loopback names through, with or without a port, and the listed hosts (case and trailing dot aside)', () => {
    for (const host of ['localhost', 'localhost:4000', '127.0.0.1', '127.255.0.9:80', '[::1]', '[::1]:4000']) {
      expect(reasonFor({ host }), host).toBeUndefined();
    }
    for (const host of ['workq.test', 'WORKQ.TEST:8080', 'workq.test.', '[fd00::1]:4000']) {
      expect(reasonFor({ host }), host).toBeUndefined();
    }
    expect(reasonFor({})).toBeUndefined();
  });

  it('refuses other names, look-alikes and malformed Host values', () => {
    for (const host of [
      'evil.example:4000',
      'localhost.evil.example',
      '127.0.0.1.nip.io',
      '0.0.0.0',
      '[::2]',
      'workq.test@evil',
      '[::1',
      '',
    ]) {
      expect(reasonFor({ host }), host).toBe('host-not-allowed');
    }
  });

  it("refuses an Origin other than the server's own or a listed one; the probes answer anyone", () => {
    expect(reasonFor({ host: '127.0.0.1:4000', origin: 'http://127.0.0.1:4000' })).toBeUndefined();
    expect(reasonFor({ host: '127.0.0.1:4000', origin: 'https://app.example.com' })).toBeUndefined();
    expect(reasonFor({ host: '127.0.0.1:4000', origin: 'http://localhost:4000' })).toBe('origin-not-allowed');
    expect(reasonFor({ host: '127.0.0.1:4000', origin: 'null' })).toBe('origin-not-allowed');
    expect(reasonFor({ host: 'evil.example', origin: 'http://evil.example' }, '/healthz')).toBeUndefined();
    expect(reasonFor({ host: 'evil.example' }, '/readyz?x=1')).toBeUndefined();
  });

  it('refuses, at start, an allowed host written with a scheme, a port or a path (VALIDATION)', () => {
    for (const text of ['http://workq.test', 'workq.test:4000', 'workq.test/ui', '*.workq.test', '']) {
      expect(() => createOpenModeGuard({ allowedHosts: [text], corsLists: () => false }), text).toThrow(
        expect.objectContaining({ code: 'VALIDATION' }),
      );
    }
  });
});
