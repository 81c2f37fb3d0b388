import { describe, expect, it } from 'vitest';
import { noMongoMessage } from './embedded-store.ts';

describe('the embedded store’s fallback line', () => {
  // The error mongodb-memory-server gives offline: its cause comes after "Details:", on the next line.
  const offline = new Error(
    'Download failed for url "https://fastdl.mongodb.org/linux/mongodb-linux-x86_64-debian12-8.2.6.tgz", Details:\ngetaddrinfo ENOTFOUND fastdl.mongodb.org',
  );

  it('says what happened, with the whole reason on one line, where the data is, and what to do', () => {
    const line = noMongoMessage(offline, '/srv/app/.workq/pglite');
    expect(line).not.toContain('\n');
    expect(line).toContain('Details: getaddrinfo ENOTFOUND fastdl.mongodb.org)');
    expect(line).toContain('so the embedded store is PostgreSQL (PGlite), its data under /srv/app/.workq/pglite.');
    expect(line).toContain('set MONGOMS_SYSTEM_BINARY to a mongod or pass --store mongodb://…');
    expect(line).toContain('pass --store pglite:///srv/app/.workq/pglite.');
  });

  it('keeps a long reason to a line a person reads', () => {
    expect(noMongoMessage(new Error('x'.repeat(5000)), '/d').length).toBeLessThan(600);
  });
});
