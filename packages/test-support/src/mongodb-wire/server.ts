import { createServer, type Socket } from 'node:net';
import type { Document } from 'bson';
import { helloReply, MAX_MESSAGE_SIZE_BYTES, WIRE_VERSIONS } from './commands-admin.ts';
import type { CommandContext } from './context.ts';
import { Cursors } from './cursors.ts';
import { failBefore, runCommand } from './dispatch.ts';
import { wireError } from './errors.ts';
import { type FailCommandData, FailPoints } from './fail-points.ts';
import {
  EXHAUST_ALLOWED,
  encodeMsg,
  encodeReply,
  MessageReader,
  MORE_TO_COME,
  OP_QUERY,
  parseRequest,
  type WireRequest,
} from './op-msg.ts';
import { MAX_BSON_OBJECT_SIZE, PrimaryState, type RecordedCommand } from './primary.ts';
import { Sessions } from './sessions.ts';
import { runTtlPass } from './ttl-monitor.ts';

/** The largest command body the server parses: a document at the limit plus room for the command around it. */
const MAX_COMMAND_BYTES = MAX_BSON_OBJECT_SIZE + 16 * 1024;
const HELLO = new Set(['hello', 'isMaster', 'ismaster']);
/** How often the TTL monitor runs here: often enough for tests that wait on it, rarely enough to cost little. */
const TTL_MONITOR_INTERVAL_MS = 1000;

export interface MongoWireDoubleOptions {
  /**
   * Answer as a one-member replica set `rs0`'s primary, as a mongos (`msg:
   * 'isdbgrid'`), or as a standalone server (no transactions, retryable
   * writes or change streams). @defaultValue 'replicaSet'
   */
  topology?: 'replicaSet' | 'mongos' | 'standalone';
  /** The server version `hello` announces through its wire version. @defaultValue '8.0' */
  serverVersion?: keyof typeof WIRE_VERSIONS;
  /** The database the URL names. @defaultValue 'test' */
  database?: string;
  /**
   * Run the TTL monitor by the primary's clock: before a command, when it
   * last ran a second or more ago (the server's runs every 60 s). Without it,
   * only `runTtlMonitor` runs a pass. @defaultValue false
   */
  ttlMonitor?: boolean;
  /** How old a transaction may grow before it is aborted (the server's `transactionLifetimeLimitSeconds`). @defaultValue 60_000 */
  transactionLifetimeMs?: number;
}

/** A running fake primary; see `startMongoWireDouble`. */
export interface MongoWireDouble {
  /** `mongodb://127.0.0.1:<port>/<database>?replicaSet=rs0` (no `replicaSet` for a mongos or a standalone). */
  url: string;
  port: number;
  /** Every command received, in order. */
  commands: RecordedCommand[];
  /** The data, oplog, locks and replica-set state. */
  state: PrimaryState;
  /** Whether a majority acknowledges writes; when `false`, majority writes wait, then fail with 64 after their `wtimeout`. */
  majorityAvailable: boolean;
  /**
   * Arms a fail point as the server's `configureFailPoint` command does (the
   * driver can send that command too): `failCommand`, or
   * `onPrimaryTransactionalWrite` with `{ closeConnection: true }`; `mode`:
   * `'alwaysOn'`, `'off'`, `{ times }`, `{ skip }` (given both, `times` alone,
   * as the server reads them: to let the first commands through and fail the
   * next, arm it from `state.afterCommand`).
   */
  configureFailPoint(
    name: 'failCommand' | 'onPrimaryTransactionalWrite',
    mode: unknown,
    data?: FailCommandData | { closeConnection: boolean },
  ): void;
  /**
   * Steps down: writes fail with NotWritablePrimary (10107), reads needing
   * the primary with 13435, transactions in progress are aborted, and
   * `hello` reports no primary until the election ends, `electionMs` later.
   * Resolves when the primary is back.
   */
  stepDown(electionMs?: number): Promise<void>;
  /** Invalidates the change streams on one collection, as renaming it would. */
  invalidate(db: string, coll: string): void;
  /** Drops the oplog so far: change streams that must resume before now fail with ChangeStreamHistoryLost (286). */
  forgetHistory(): void;
  /** Drops every open connection, as a network blip does. */
  dropConnections(): void;
  /**
   * Runs one pass of the TTL monitor now, at `at` (the primary's clock, `state.now()`, unless given): deletes
   * what the server's pass would (see `CollectionData.expired`). Returns how many documents it deleted.
   */
  runTtlMonitor(at?: Date): number;
  /**
   * Announces `hostPort` as this member's address in `hello` (`me`, `hosts`,
   * `primary`) from the next answer on, as a replica set reached through a
   * proxy or NAT must be configured to: the driver connects to the members
   * `hello` names, so it would otherwise go around the proxy.
   */
  announce(hostPort: string): void;
  close(): Promise<void>;
}

/**
 * Arms `failCommand` for `times` of the commands `data` names once `skip` of them have run: what a mode
 * `{ skip, times }` might seem to say, which the server does not take (it reads `times` alone). It arms
 * from `state.afterCommand`, which it holds until then.
 */
export function failCommandAfter(double: MongoWireDouble, skip: number, times: number, data: FailCommandData): void {
  let seen = 0;
  const arm = () => double.configureFailPoint('failCommand', { times }, data);
  if (skip === 0) {
    arm();
    return;
  }
  double.state.afterCommand = (command) => {
    if (!data.failCommands.includes(command.name) || ++seen < skip) return;
    double.state.afterCommand = undefined;
    arm();
  };
}

/** How long an election takes unless `stepDown` is told otherwise: about what an unplanned one takes. */
export const DEFAULT_ELECTION_MS = 10_000;

/**
 * Starts a fake MongoDB primary on 127.0.0.1 (a free port) that speaks the
 * wire protocol (OP_MSG; OP_QUERY for the driver's first handshake) to the
 * real driver, keeps its data in `CollectionData` (mingo), records every
 * command, and answers with the server's own codes, messages and labels
 * where it refuses something. Reads never see uncommitted writes, a
 * transaction reads at its snapshot, and one older than 60 s is aborted (the
 * server's default lifetime). Not a database: nothing is durable, and
 * queries are not costed (a hint is only checked).
 */
export async function startMongoWireDouble(options: MongoWireDoubleOptions = {}): Promise<MongoWireDouble> {
  const primary = new PrimaryState();
  const cursors = new Cursors();
  const sessions = new Sessions(primary, options.transactionLifetimeMs);
  const failPoints = new FailPoints();
  const commands: RecordedCommand[] = [];
  const sockets = new Set<Socket>();
  const replicaSet = (options.topology ?? 'replicaSet') === 'replicaSet';
  const standalone = options.topology === 'standalone';
  const maxWireVersion = WIRE_VERSIONS[options.serverVersion ?? '8.0'];
  let address = '127.0.0.1:0';
  let connections = 0;
  let nextRequestId = 1;
  let ttlRanAt = 0;

  const serve = (socket: Socket) => {
    sockets.add(socket);
    const connectionId = ++connections;
    let appName: string | undefined;
    let queue = Promise.resolve();
    const abandoned = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    const reader = new MessageReader(MAX_MESSAGE_SIZE_BYTES);
    const send = (buffer: Buffer) => {
      if (!socket.destroyed) socket.write(buffer);
    };

    const handle = async (request: WireRequest) => {
      const { body } = request;
      const name = Object.keys(body)[0] ?? '';
      const db = request.opCode === OP_QUERY ? 'admin' : String(body.$db ?? 'admin');
      appName ??= (body.client as { application?: { name?: string } } | undefined)?.application?.name;
      const record: RecordedCommand = { db, name, body, connectionId, queries: [], refusedHints: [] };
      commands.push(record);
      const context: CommandContext = {
        primary,
        cursors,
        sessions,
        db,
        body,
        record,
        transaction: undefined,
        abandoned,
        replicaSet,
        standalone,
        address,
      };
      const reply = (doc: Document, responseTo = request.requestId, flags = 0) => {
        const requestId = nextRequestId++;
        send(
          request.opCode === OP_QUERY
            ? encodeReply(doc, requestId, responseTo)
            : encodeMsg(doc, requestId, responseTo, flags),
        );
        return requestId;
      };
      if (request.bodyBytes > MAX_COMMAND_BYTES) {
        const error = wireError(
          10334,
          `BSONObj size: ${request.bodyBytes} (0x${request.bodyBytes.toString(16).toUpperCase()}) is invalid. Size must be between 0 and ${MAX_COMMAND_BYTES}(16MB) First element: ${name}: ${JSON.stringify(Object.values(body)[0])}`,
        );
        record.outcome = error.code;
        reply({ ok: 0, ...error.toReply() });
        return;
      }
      if (options.ttlMonitor && Date.now() - ttlRanAt >= TTL_MONITOR_INTERVAL_MS) {
        ttlRanAt = Date.now();
        runTtlPass(primary);
      }
      if (HELLO.has(name)) {
        // `failCommand` takes `hello` too, as the server's does: a monitor or a handshake can be failed.
        const failedFirst = await failBefore(context, failPoints.take(name, appName));
        if (failedFirst === 'close') socket.destroy();
        else if (failedFirst) reply(failedFirst);
        else await hello(context, request, reply);
        return;
      }
      const outcome = await runCommand(context, failPoints, appName);
      if (outcome === 'close') socket.destroy();
      else reply(outcome);
    };

    /** `hello`, streamed to a monitor that allows it: one answer now, then one at each change or `maxAwaitTimeMS`. */
    const hello = async (
      context: CommandContext,
      request: WireRequest,
      reply: (doc: Document, responseTo?: number, flags?: number) => number,
    ) => {
      const { body } = request;
      const legacy = context.record.name !== 'hello';
      const answer = () => ({ ...helloReply(context, maxWireVersion, legacy), ok: 1 });
      const awaited = body.topologyVersion as { counter?: unknown } | undefined;
      const maxAwaitTimeMS = Number(body.maxAwaitTimeMS ?? 0);
      context.record.outcome = 'ok';
      if (!awaited || !maxAwaitTimeMS) {
        reply(answer());
        return;
      }
      if (Number(awaited.counter) === primary.topologyCounter)
        await primary.awaitTopologyChange(maxAwaitTimeMS, abandoned);
      const exhaust = (request.flags & EXHAUST_ALLOWED) !== 0;
      let responseTo = reply(answer(), request.requestId, exhaust ? MORE_TO_COME : 0);
      while (exhaust && !socket.destroyed) {
        await primary.awaitTopologyChange(maxAwaitTimeMS, abandoned);
        if (socket.destroyed) return;
        responseTo = reply(answer(), responseTo, MORE_TO_COME);
      }
    };

    socket.on('data', (chunk: Buffer) => {
      const messages = reader.push(chunk);
      if (messages === 'too large') {
        socket.destroy();
        return;
      }
      for (const message of messages) {
        let request: WireRequest;
        try {
          request = parseRequest(message);
        } catch {
          socket.destroy();
          return;
        }
        // Exhaust hellos stream on their own; every other command waits its turn on the connection.
        if (request.flags & EXHAUST_ALLOWED) void handle(request);
        else
          queue = queue
            .then(() => handle(request))
            .catch(() => {
              socket.destroy();
            });
      }
    });
  };

  const server = createServer(serve);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  address = `127.0.0.1:${port}`;
  const database = options.database ?? 'test';
  let electionTimer: NodeJS.Timeout | undefined;
  const reaper = setInterval(() => sessions.reap(Date.now()), Math.min(1000, options.transactionLifetimeMs ?? 1000));
  reaper.unref();

  return {
    url: `mongodb://${address}/${database}${replicaSet ? '?replicaSet=rs0' : ''}`,
    port,
    commands,
    state: primary,
    get majorityAvailable() {
      return primary.majorityAvailable;
    },
    set majorityAvailable(available: boolean) {
      primary.majorityAvailable = available;
    },
    configureFailPoint(name, mode, data) {
      failPoints.configure({ configureFailPoint: name, mode, data });
    },
    stepDown(electionMs = DEFAULT_ELECTION_MS) {
      primary.writablePrimary = false;
      sessions.abortAll();
      primary.topologyChanged();
      return new Promise<void>((resolve) => {
        clearTimeout(electionTimer);
        electionTimer = setTimeout(() => {
          primary.writablePrimary = true;
          primary.electionTerm += 1;
          primary.topologyChanged();
          resolve();
        }, electionMs);
      });
    },
    invalidate(db, coll) {
      primary.append({ db, coll, operationType: 'invalidate' });
    },
    forgetHistory() {
      primary.oplog.splice(0);
      primary.oplogStart = primary.lastSeq + 1;
    },
    dropConnections() {
      for (const socket of sockets) socket.destroy();
    },
    runTtlMonitor(at) {
      return runTtlPass(primary, at);
    },
    announce(hostPort) {
      address = hostPort;
    },
    async close() {
      clearTimeout(electionTimer);
      clearInterval(reaper);
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
