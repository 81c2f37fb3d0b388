import { MongoClient, ReadConcern, ReadPreference } from 'mongodb';
import { DEFAULT_HISTORY_RETENTION_MS } from '../../engine/options.ts';
import type { Store } from '../../engine/store.ts';
import { WorkqError } from '../../errors.ts';
import { toWorkqError } from './errors.ts';
import { collectionNames, ensureIndexes, MAX_HISTORY_RETENTION_MS } from './indexes.ts';
import { durableWrites, MongoStore } from './mongo-store.ts';
import { ChangeStreamNotifier, describeServer } from './notifier.ts';

/** How to reach MongoDB and how the store lays out its data. */
export interface MongoStoreOptions {
  /**
   * A `mongodb://` or `mongodb+srv://` connection string. Required unless `client` is given.
   * @defaultValue none
   */
  url?: string | undefined;
  /**
   * A connected (or connectable) client to use instead of `url`. The store does not close it.
   * @defaultValue none: the store creates and owns a client for `url`
   */
  client?: MongoClient | undefined;
  /**
   * The database to keep jobs in.
   * @defaultValue the database named in `url`, else `'workq'`
   */
  dbName?: string | undefined;
  /**
   * Prefix of the store's collections (`jobs`, `schemas`, `workers`, `wakeups`).
   * @defaultValue 'workq_'
   */
  collectionPrefix?: string | undefined;
  /**
   * How long finished jobs are kept; applied as the TTL of the history index,
   * so at most 2_147_483_647_000 (about 68 years, the largest TTL MongoDB takes).
   * @defaultValue 604_800_000 (7 days)
   */
  historyRetentionMs?: number | undefined;
  /**
   * Cross-process wake-ups through change streams. Needs a replica set or
   * mongos; on a standalone server the store has no `notifier`.
   * @defaultValue true
   */
  notify?: boolean | undefined;
  /**
   * How long to wait for a reachable server before an operation fails (for a client the store creates).
   * Longer than an unplanned election (about 10–12 s: the members' 10 s election timeout, then the vote),
   * so the calls a failover catches wait for the new primary instead of failing.
   * @defaultValue the connection string's `serverSelectionTimeoutMS`, else 15_000
   */
  serverSelectionTimeoutMS?: number | undefined;
  /**
   * How long a write waits for a majority of the replica set to acknowledge
   * it (`wtimeoutMS` of the majority write concern). Past it the call fails
   * with `TIMEOUT`; the write may still be applied.
   * @defaultValue the connection string's `wtimeoutMS`, else 10_000
   */
  writeTimeoutMS?: number | undefined;
  /**
   * How long opening the store waits for an index build it starts, which a
   * majority of the replica set must commit (`maxTimeMS`). Past it opening
   * fails with `TIMEOUT`; the build goes on in the server.
   * @defaultValue 120_000
   */
  indexBuildTimeoutMS?: number | undefined;
}

const DEFAULTS = {
  dbName: 'workq',
  collectionPrefix: 'workq_',
  historyRetentionMs: DEFAULT_HISTORY_RETENTION_MS,
  notify: true,
  serverSelectionTimeoutMS: 15_000,
  writeTimeoutMS: 10_000,
  indexBuildTimeoutMS: 120_000,
} as const;

const invalidUrlMessage =
  'The MongoDB connection string is not valid: expected mongodb://[user:password@]host[:port][,host…]/[database][?options].';

/** The database named in a connection string's path, if any. */
function databaseOfUrl(url: string): string | undefined {
  const path = /^mongodb(?:\+srv)?:\/\/[^/?]*\/([^?]*)/i.exec(url)?.[1];
  return path ? decodeURIComponent(path) : undefined;
}

/** The number of milliseconds a connection string sets for `option`, if it sets a number. */
function msOfUrl(url: string | undefined, option: 'serverSelectionTimeoutMS' | 'wtimeoutMS'): number | undefined {
  const value = url === undefined ? undefined : new RegExp(`[?&]${option}=(\\d+)(?:&|$)`, 'i').exec(url)?.[1];
  return value === undefined ? undefined : Number(value);
}

/** The host list of a connection string, without credentials. */
function hostsOfUrl(url: string): string {
  const authority = /^[a-z+]+:\/\/([^/?]*)/i.exec(url)?.[1] ?? '';
  return authority.slice(authority.lastIndexOf('@') + 1) || 'the configured address';
}

function hostsOfClient(client: MongoClient): string {
  const hosts = client.options?.hosts?.map((host) => String(host)) ?? [];
  return hosts.length > 0 ? hosts.join(',') : 'the given client';
}

/** `value` when it is a number of milliseconds in [min, max]; else a `VALIDATION` error naming `option`. */
function checkedMs(option: string, value: number, min: number, max: number): number {
  if (Number.isFinite(value) && value >= min && value <= max) return value;
  throw new WorkqError('VALIDATION', `${option} must be a number of milliseconds from ${min} to ${max}; got ${value}.`);
}

/**
 * What the store has to tell the operator outside any call (a wake-up stream
 * that failed, a publish that was lost) goes to Node's warnings, which a
 * process prints to stderr unless it listens for them: the store has no
 * logger of its own.
 */
function warnThroughNode(warning: WorkqError): void {
  process.emitWarning(warning.message, { type: 'WorkqWarning', code: 'WORKQ_MONGODB_WAKEUPS' });
}

/**
 * Opens the MongoDB store: connects (failing fast with `UNAVAILABLE` when no
 * server answers), creates the indexes, and, with `notify`, the wake-up
 * collection. Writes use majority, journaled write concern, bounded by
 * `writeTimeoutMS`; reads go to the primary with read concern `local`, so
 * every read sees the writes before it, whatever read preference the URL or
 * client sets. Change streams, which take no read concern but `majority`,
 * set their own (see `ChangeStreamNotifier.watch`).
 */
export async function createMongoStore(options: MongoStoreOptions): Promise<Store> {
  const url = options.url;
  if (!options.client && typeof url !== 'string') {
    throw new WorkqError('VALIDATION', 'createMongoStore needs a `url` (mongodb://…) or a `client`.');
  }
  const hosts = options.client ? hostsOfClient(options.client) : hostsOfUrl(url as string);
  const dbName = options.dbName ?? (url === undefined ? undefined : databaseOfUrl(url)) ?? DEFAULTS.dbName;
  const names = collectionNames(options.collectionPrefix ?? DEFAULTS.collectionPrefix);
  const historyRetentionMs = checkedMs(
    'historyRetentionMs (the TTL of finished jobs, which MongoDB takes up to about 68 years)',
    options.historyRetentionMs ?? DEFAULTS.historyRetentionMs,
    1,
    MAX_HISTORY_RETENTION_MS,
  );
  const notify = options.notify ?? DEFAULTS.notify;
  // A timeout the connection string sets holds unless the options set one: the driver's default selection
  // timeout, and the store's own write concern, would override it.
  const serverSelectionTimeoutMS =
    options.serverSelectionTimeoutMS ?? msOfUrl(url, 'serverSelectionTimeoutMS') ?? DEFAULTS.serverSelectionTimeoutMS;
  const writeTimeoutMS = checkedMs(
    'writeTimeoutMS',
    options.writeTimeoutMS ?? msOfUrl(url, 'wtimeoutMS') ?? DEFAULTS.writeTimeoutMS,
    1,
    2 ** 31 - 1,
  );
  const indexBuildTimeoutMS = checkedMs(
    'indexBuildTimeoutMS',
    options.indexBuildTimeoutMS ?? DEFAULTS.indexBuildTimeoutMS,
    1,
    2 ** 31 - 1,
  );

  let client: MongoClient;
  try {
    client = options.client ?? new MongoClient(url as string, { serverSelectionTimeoutMS });
  } catch (error) {
    // Constructing a client only parses its options: whatever fails here is the caller's URL.
    throw new WorkqError('VALIDATION', invalidUrlMessage, { cause: error });
  }
  const ownsClient = options.client === undefined;
  try {
    if (ownsClient) await client.connect();
    const writeConcern = durableWrites(writeTimeoutMS);
    const db = client.db(dbName, {
      writeConcern,
      readPreference: ReadPreference.primary,
      readConcern: new ReadConcern('local'),
    });
    const server = await describeServer(db);
    await ensureIndexes(db, names, historyRetentionMs, {
      timeoutMS: indexBuildTimeoutMS,
      replicaSet: server.replicaSet,
    });
    const callLimitMs = (client.options?.serverSelectionTimeoutMS ?? serverSelectionTimeoutMS) + writeTimeoutMS;
    let notifier: ChangeStreamNotifier | undefined;
    if (notify && server.changeStreams) {
      notifier = new ChangeStreamNotifier(
        db,
        names.wakeups,
        serverSelectionTimeoutMS,
        hosts,
        warnThroughNode,
        callLimitMs,
      );
      await notifier.ensureCollection();
    }
    return new MongoStore({ client, db, names, hosts, ownsClient, notifier, writeConcern, callLimitMs });
  } catch (error) {
    if (ownsClient) await client.close().catch(() => undefined);
    throw toWorkqError(error, hosts, 'connect');
  }
}
