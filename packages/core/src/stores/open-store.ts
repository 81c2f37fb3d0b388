import type { Store } from '../engine/store.ts';
import { WorkqError } from '../errors.ts';

export interface OpenStoreOptions {
  /** How long finished jobs are kept (MongoDB applies it as a TTL index). @defaultValue 7 days */
  historyRetentionMs?: number | undefined;
}

/**
 * Opens the store a URL names, loading only that store's driver:
 * `postgres://` / `postgresql://`, `pglite://memory` / `pglite://<dir>`,
 * `mongodb://` / `mongodb+srv://`, `mysql://` / `mariadb://`.
 * A PostgreSQL URL may name the schema to use with `?schema=<name>` (default `workq`); a MySQL URL may set
 * how often the store polls for other servers' wake-ups with `?wakeupPollMs=<n>` (default 100, 0 for never).
 * Fails with `VALIDATION` on an unknown scheme and `UNAVAILABLE` when the server cannot be reached.
 */
export async function openStore(url: string, options: OpenStoreOptions = {}): Promise<Store> {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  switch (scheme) {
    case 'postgres':
    case 'postgresql': {
      const { createPostgresStore } = await import('./postgres/index.ts');
      const { rest, value: schema } = takeParam(url, 'schema');
      return createPostgresStore({ connectionString: rest, ...(schema ? { schema } : {}) });
    }
    case 'pglite': {
      const { createPgliteStore } = await import('./postgres/index.ts');
      const location = url.slice('pglite://'.length);
      return createPgliteStore({ dataDir: location === '' || location === 'memory' ? undefined : location });
    }
    case 'mongodb':
    case 'mongodb+srv': {
      const { createMongoStore } = await import('./mongodb/index.ts');
      return createMongoStore({ url, ...options });
    }
    case 'mysql':
    case 'mariadb': {
      const { createMysqlStore } = await import('./mysql/index.ts');
      const { rest, value: pollMs } = takeParam(url.replace(/^mariadb:/i, 'mysql:'), 'wakeupPollMs');
      return createMysqlStore({ url: rest, ...(pollMs === undefined ? {} : { wakeupPollMs: Number(pollMs) }) });
    }
    default:
      throw new WorkqError(
        'VALIDATION',
        `Unknown store URL "${redactUrl(url)}": use postgres://, mongodb://, mysql://, pglite://memory or pglite://<dir>.`,
      );
  }
}

/** Splits one of workq's own query parameters off a store URL, so the driver never sees it. */
function takeParam(url: string, name: string): { rest: string; value: string | undefined } {
  const match = new RegExp(`[?&]${name}=([^&]*)`).exec(url);
  if (!match) return { rest: url, value: undefined };
  const rest = url
    .replace(match[0], match[0].startsWith('?') ? '?' : '')
    .replace(/\?&/, '?')
    .replace(/[?&]$/, '');
  return { rest, value: decodeURIComponent(match[1] ?? '') };
}

/** The URL with any password replaced, safe for messages and logs. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@');
}
