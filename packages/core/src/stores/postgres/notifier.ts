import type pg from 'pg';
import type { ClosableNotifier } from '../../engine/store.ts';
import type { SqlClient } from './connection.ts';
import { toWorkqError } from './errors.ts';

export interface PgNotifierOptions {
  /** The node-postgres module, loaded by the factory. */
  driver: typeof pg;
  /** Settings for each subscriber's dedicated connection. */
  clientConfig: pg.ClientConfig;
  /** Publishes through the store's pool. */
  client: SqlClient;
  schema: string;
  /** `host:port`, for error messages. */
  target: string;
}

const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 5_000;

/** The LISTEN/NOTIFY channel of a schema: one per store schema, within PostgreSQL's 63-byte identifier limit. */
export function channelOf(schema: string): string {
  return `${schema}_ready`.slice(0, 63);
}

/**
 * Cross-process wake-ups over LISTEN/NOTIFY. `publish` notifies through the
 * pool; each `subscribe` holds one dedicated connection that LISTENs, and
 * reconnects with backoff when it drops. After a reconnect the listener
 * receives `'*'`: wake-ups may have been missed, so every job name may be ready.
 */
export function createPgNotifier(options: PgNotifierOptions): ClosableNotifier {
  const channel = channelOf(options.schema);
  const subscriptions = new Set<Subscription>();
  return {
    async publish(name) {
      await options.client.query('SELECT pg_notify($1, $2)', [channel, name]);
    },
    async subscribe(listener) {
      const subscription = new Subscription(options, channel, listener);
      await subscription.start();
      subscriptions.add(subscription);
      return async () => {
        subscriptions.delete(subscription);
        await subscription.close();
      };
    },
    async close() {
      const open = [...subscriptions];
      subscriptions.clear();
      await Promise.all(open.map((subscription) => subscription.close()));
    },
  };
}

class Subscription {
  private connection: pg.Client | null = null;
  private closed = false;
  private failures = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly options: PgNotifierOptions,
    private readonly channel: string,
    private readonly listener: (name: string) => void,
  ) {}

  async start(): Promise<void> {
    try {
      await this.connect();
    } catch (error) {
      throw toWorkqError(error, this.options.target);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    const connection = this.connection;
    this.connection = null;
    await connection?.end().catch(() => {});
  }

  private async connect(): Promise<void> {
    const connection = new this.options.driver.Client(this.options.clientConfig);
    connection.on('notification', (message) => {
      if (message.channel === this.channel && message.payload !== undefined) this.listener(message.payload);
    });
    connection.on('error', () => this.lost(connection));
    connection.on('end', () => this.lost(connection));
    try {
      await connection.connect();
      await connection.query(`LISTEN "${this.channel}"`);
    } catch (error) {
      await connection.end().catch(() => {});
      throw error;
    }
    if (this.closed) {
      await connection.end().catch(() => {});
      return;
    }
    this.connection = connection;
  }

  private lost(connection: pg.Client): void {
    if (this.connection !== connection || this.closed) return;
    this.connection = null;
    connection.end().catch(() => {});
    this.reconnectLater();
  }

  private reconnectLater(): void {
    const delayMs = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** this.failures);
    this.failures += 1;
    this.timer = setTimeout(() => {
      this.connect().then(
        () => {
          if (this.closed) return;
          this.failures = 0;
          this.listener('*');
        },
        () => {
          if (!this.closed) this.reconnectLater();
        },
      );
    }, delayMs);
  }
}
