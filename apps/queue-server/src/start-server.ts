import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TRPCError } from '@trpc/server';
import { getHTTPStatusCodeFromError } from '@trpc/server/http';
import { catalogJsonSchemas, isWorkqError, WorkqError } from '@workq/core';
import {
  CronScheduler,
  createQueueRuntime,
  openStore,
  parseCrontab,
  redactUrl,
  SchemaRegistry,
  type Store,
} from '@workq/core/engine';
import { AnswerBudget } from './app/answer-budget.ts';
import { checkMaxClaimBytes } from './app/consume.ts';
import { checkMaxChildrenPageBytes } from './app/flows.ts';
import { enqueueOccurrence, loadStoredSchedules } from './app/schedules.ts';
import type { ServerServices } from './app/services.ts';
import { logAuthFailure } from './audit-log.ts';
import { isLoopbackHost, TokenAuthority } from './auth.ts';
import { type EmbeddedStore, openEmbeddedStore } from './embedded-store.ts';
import { BodyBudget, dropBodyBytes } from './http/body-budget.ts';
import { createCors } from './http/cors.ts';
import { DASHBOARD_PATH, serveDashboard } from './http/dashboard.ts';
import { LimitRefusalLog } from './http/limit-refusals.ts';
import { answerMalformedRequests } from './http/malformed-requests.ts';
import { createOpenModeGuard, sendRefusal } from './http/open-mode-guard.ts';
import { serveInRequest } from './http/request-log.ts';
import { handleRest, sendJson, serveMetrics } from './http/rest.ts';
import { capConnections, httpServerOptions } from './http/server-limits.ts';
import { createTrpcHandler } from './http/trpc.ts';
import { ServerMetrics } from './metrics.ts';
import { resolveServerOptions, type ServerOptions } from './options.ts';
import { guardProcess } from './process-guard.ts';
import { currentRequest, noteServerFailure, type RequestRecord } from './request-context.ts';
import { appRouter } from './router/index.ts';
import type { ServerContext } from './router/trpc.ts';
import { StoreHealth } from './store-health.ts';
import { StoreTurns } from './store-turns.ts';

export interface QueueServer {
  /** Base URL clients connect to, e.g. `http://127.0.0.1:4000`. */
  url: string;
  port: number;
  /** The store URL in use (password redacted). */
  storeUrl: string;
  /** Stops accepting, lets in-flight requests finish (waiting claims return at once), then closes the store. */
  close(): Promise<void>;
}

/** Where tRPC's procedures are served: `/trpc/<path>`. */
const TRPC_PATH = '/trpc/';
/** The job-event subscription's path (`events.watch`, over server-sent events). */
const EVENTS_PATH = `${TRPC_PATH}events.watch`;
/** How long the maintenance roles' leader holds its lease; another server takes over this long after it dies. */
const LEADERSHIP_LEASE_MS = 15_000;
/** On taking over, the new leader enqueues the crontab occurrences of this last stretch, in case they were missed. */
const CRON_CATCH_UP_MS = 2 * LEADERSHIP_LEASE_MS;
/** How often an unreachable store is probed, and how long a probe may take. */
const STORE_PROBE_EVERY_MS = 1_000;
const STORE_PROBE_TIMEOUT_MS = 5_000;

/** Starts a queue server; resolves once it listens and its store is ready. */
export async function startServer(options: ServerOptions = {}): Promise<QueueServer> {
  const resolved = resolveServerOptions(options);
  const { logger, host } = resolved;
  const authority = new TokenAuthority(resolved.tokens, resolved.tokenSecret, {
    maxLifetimeMs: resolved.maxTokenLifetimeMs,
    audience: resolved.tokenAudience,
    issuer: resolved.tokenIssuer,
  });
  if (authority.open && !isLoopbackHost(host)) {
    throw new WorkqError(
      'VALIDATION',
      `Refusing to serve ${host} without tokens: anyone who can reach it could enqueue and consume jobs. Configure tokens (WORKQ_TOKENS / --token, or WORKQ_TOKEN_SECRET / --token-secret) or bind a loopback address such as 127.0.0.1.`,
    );
  }
  const cors = createCors(resolved.cors.origins);
  const openModeGuard = authority.open
    ? createOpenModeGuard({ allowedHosts: resolved.allowedHosts, corsLists: cors.lists })
    : undefined;
  const serverOptions = httpServerOptions(resolved.limits);
  const bodyBudget = new BodyBudget(resolved.limits.maxBodyBytesInFlight, resolved.limits.maxRequestBytes);
  checkMaxClaimBytes(resolved.limits);
  checkMaxChildrenPageBytes(resolved.limits);
  const { maxAnswerBytesInFlight, maxClaimBytes, maxChildrenPageBytes } = resolved.limits;
  const answerBudget = new AnswerBudget(maxAnswerBytesInFlight, Math.max(maxClaimBytes, maxChildrenPageBytes));
  const crontab = parseCrontab(resolved.crontab);
  const opened = await openConfiguredStore(resolved.store, resolved.dataDir, logger, resolved.historyRetentionMs);
  const storeUrl = redactUrl(opened.url);
  const metrics = new ServerMetrics((scope) => engine.counts(scope));
  metrics.observeRequestBodies(bodyBudget);
  metrics.observeAnswers(answerBudget);
  const turns = new StoreTurns(resolved.limits.maxStoreCallsInFlight);
  metrics.observeStoreTurns(turns);
  const health = new StoreHealth(opened.store, {
    storeUrl,
    logger,
    metrics,
    probeEveryMs: STORE_PROBE_EVERY_MS,
    probeTimeoutMs: STORE_PROBE_TIMEOUT_MS,
    turns,
  });
  const store = health.store;
  // The cron role reaches the services through closures: it enqueues as a producer would, and reads the store.
  const scheduler = new CronScheduler(crontab, {
    now: () => engine.clock.now(),
    enqueue: (...occurrence) => enqueueOccurrence(services)(...occurrence),
    loadStored: () => loadStoredSchedules(services),
    reloadEveryMs: resolved.scheduleReloadMs,
    logger,
    catchUpMs: CRON_CATCH_UP_MS,
  });
  // A store that cannot be reached is logged once, as an outage; other failures each time.
  const warnUnlessOutage = (message: string) => (error: unknown) => {
    if (!(isWorkqError(error, 'UNAVAILABLE') && error.retryable)) logger.warn(message, { error: String(error) });
  };
  // The queue: engine, wake-up bus, event hub, claim dispatcher, and the maintenance roles with the cron scheduler.
  const runtime = await createQueueRuntime({
    store,
    engine: { historyRetentionMs: resolved.historyRetentionMs },
    events: { maxBufferedEvents: resolved.limits.maxBufferedEvents },
    dispatcher: {
      pollIntervalMs: resolved.pollIntervalMs,
      maxWaitMs: resolved.limits.maxLongPollMs,
      maxBatchSize: resolved.limits.maxBatchSize,
      // A consumer's presence is written often enough that it never drops out of the registry's window between writes.
      presenceReportEveryMs: Math.min(5_000, Math.floor(resolved.presenceWindowMs / 4)),
      observer: {
        claimAttempt: (name, queried) => metrics.claimQueries.inc({ name, query: queried ? 'ran' : 'skipped' }),
        delivered: (name, count, handedOver) => {
          metrics.claimed.inc({ name }, count);
          if (handedOver) metrics.handedOver.inc({ name }, count);
        },
        completed: (count) => metrics.completed.inc(count),
        releaseFailed: (error) =>
          logger.warn('could not release the jobs of a claim whose client went away', { error: String(error) }),
        presenceFailed: warnUnlessOutage('could not record a worker in the registry'),
      },
    },
    roles: [scheduler],
    leadershipLeaseMs: LEADERSHIP_LEASE_MS,
    onRoleError: (what, error) => warnUnlessOutage(`${what} failed`)(error),
  });
  const { engine, bus, events, dispatcher, cancellations } = runtime;
  // A schedule written through another server: the leader reads them at once instead of at its next reload.
  bus.onSchedulesChanged(() => void scheduler.reload());
  // A schema removed through another server: its entry and validator are dropped here too.
  bus.onSchemasChanged((name) => services.registry.forget(name));
  const services: ServerServices = {
    engine,
    registry: new SchemaRegistry(store, engine.clock, resolved.jobs, {
      limits: resolved.limits.schemas,
      warn: (message, fields) => logger.warn(message, fields),
    }),
    bus,
    dispatcher,
    cancellations,
    events,
    authority,
    metrics,
    answerBudget,
    crontab,
    scheduler,
    options: resolved,
  };

  if (resolved.jobs) {
    // The catalog's schemas are registered as a client's would be, so plain HTTP producers and other servers see them.
    await services.registry.register(catalogJsonSchemas(resolved.jobs)).catch(async (error: unknown) => {
      health.close();
      await runtime.close();
      await opened.stop();
      throw error;
    });
  }

  const createContext = (req: IncomingMessage, letGoOfInput: (() => void) | undefined): ServerContext => ({
    services,
    authorization: req.headers.authorization,
    remoteAddress: req.socket.remoteAddress ?? 'unknown',
    letGoOfBody: letGoOfInput
      ? () => {
          letGoOfInput();
          dropBodyBytes(req);
        }
      : () => undefined,
  });
  // A 5xx is logged once, with its request, when the answer is over (http/request-log.ts); not the retryable
  // end each open event stream gets when the server closes, which is the shutdown working as meant.
  const onError = ({ error }: { error: TRPCError }) => {
    if (closing && isWorkqError(error.cause, 'UNAVAILABLE') && error.cause.retryable) return;
    if (getHTTPStatusCodeFromError(error) >= 500) noteServerFailure(error.cause ?? error);
  };
  // A single enqueue carries one payload: its body is held to what one payload may take, as superjson's
  // `{ json, meta }` (twice each), plus 64 KiB of options, before anything in it is decoded.
  const singleEnqueueBytes = Math.min(resolved.limits.maxRequestBytes, 4 * resolved.limits.maxPayloadBytes + 65_536);
  const trpc = createTrpcHandler({
    router: appRouter,
    basePath: TRPC_PATH,
    maxBodySize: resolved.limits.maxRequestBytes,
    maxBodySizeOf: (path) => (path === 'jobs.enqueue' ? singleEnqueueBytes : resolved.limits.maxRequestBytes),
    maxBatchSize: resolved.limits.maxTrpcBatchSize,
    createContext,
    onError,
  });

  let inFlight = 0;
  let closing = false;
  let drained: (() => void) | undefined;
  /** Open job-event streams: on close, one its client no longer reads is cut, so it cannot hold the shutdown. */
  const eventStreams = new Set<ServerResponse>();
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const refusal = openModeGuard?.(req);
    if (refusal) {
      req.resume();
      const action = `${req.method} ${(req.url ?? '/').split('?')[0]}`;
      logAuthFailure(logger, currentRequest(), { action, reason: refusal.reason, detail: refusal.message });
      return sendRefusal(res, refusal);
    }
    if (cors.handle(req, res)) return;
    const path = (req.url ?? '/').split('?')[0];
    // The root has no API of its own: a person who opens the server's address meets the dashboard.
    if (path === '/' && (req.method === 'GET' || req.method === 'HEAD')) {
      return void res.writeHead(302, { location: `${DASHBOARD_PATH}/` }).end();
    }
    if (path === '/healthz') return sendJson(res, 200, { ok: true });
    if (path === '/readyz') {
      const ready = !closing && (await health.check());
      return sendJson(res, ready ? 200 : 503, { ready });
    }
    if (path === '/metrics') return serveMetrics(req, res, services);
    if (path === DASHBOARD_PATH || path?.startsWith(`${DASHBOARD_PATH}/`)) return serveDashboard(req, res, path);
    if (closing) {
      const requestId = noteServerFailure('the server is shutting down');
      return sendJson(res, 503, { error: { code: 'UNAVAILABLE', message: 'The server is shutting down.', requestId } });
    }
    if (path?.startsWith('/v1/')) return handleRest(req, res, services);
    if (path === EVENTS_PATH) {
      eventStreams.add(res);
      res.once('close', () => eventStreams.delete(res));
    }
    if (path?.startsWith(TRPC_PATH)) return trpc(req, res);
    return sendJson(res, 404, { error: { code: 'NOT_FOUND', message: `Nothing is served at ${path}.` } });
  };
  const logs = { logger, refusals: new LimitRefusalLog(logger) };
  const server = createServer(serverOptions, (req, res) =>
    serveInRequest(req, res, logs, (record) => serveRequest(req, res, record)),
  );
  const serveRequest = (req: IncomingMessage, res: ServerResponse, record: RequestRecord) => {
    inFlight++;
    bodyBudget.admit(req);
    res.on('close', () => {
      bodyBudget.release(req);
      answerBudget.release(record);
      if (res.statusCode >= 500 && req.url !== '/readyz') health.requestFailed();
      inFlight--;
      if (inFlight === 0) drained?.();
    });
    handle(req, res).catch((error: unknown) => {
      const requestId = noteServerFailure(error);
      if (!res.headersSent) {
        sendJson(res, 500, { error: { code: 'UNAVAILABLE', message: 'Internal error.', requestId } });
      } else {
        res.destroy();
      }
    });
  };
  capConnections(server, resolved.limits);
  answerMalformedRequests(server);

  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(resolved.port, host, () => resolveListen());
  });
  const port = (server.address() as AddressInfo).port;
  // No request takes the process down: a rejection nobody awaited is logged with its request (process-guard.ts).
  const releaseProcessGuard = guardProcess(logger);
  runtime.start();
  const urlHost = host.includes(':') ? `[${host}]` : host;
  const url = `http://${urlHost}:${port}`;
  logger.info('workq queue server listening', {
    url,
    dashboard: `${url}${DASHBOARD_PATH}/`,
    store: storeUrl,
    auth: authority.summary,
  });

  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closed ??= (async () => {
      closing = true;
      const stopped = new Promise<void>((r) => server.close(() => r()));
      // The runtime resigns the roles, ends event streams with a retryable error, on which clients reconnect, and
      // answers waiting claims; requests in flight finish before it closes the store. Streams that cannot be
      // written to are cut.
      await runtime.close(async () => {
        setImmediate(() => {
          for (const res of eventStreams) res.destroy();
        });
        server.closeIdleConnections();
        if (inFlight > 0) await new Promise<void>((r) => (drained = r));
        server.closeAllConnections();
        await stopped;
        health.close();
        logs.refusals.close();
      });
      await opened.stop();
      releaseProcessGuard();
      logger.info('workq queue server stopped');
    })();
    return closed;
  };
  return { url, port, storeUrl, close };
}

async function openConfiguredStore(
  url: string | Store | undefined,
  dataDir: string,
  logger: ServerOptions['logger'] & object,
  historyRetentionMs: number,
): Promise<EmbeddedStore> {
  if (typeof url === 'object') return { store: url, url: `${url.kind} (given to startServer)`, stop: async () => {} };
  if (url === undefined || url === '') return openEmbeddedStore(dataDir, logger, historyRetentionMs);
  const store: Store = await openStore(url, { historyRetentionMs });
  return { store, url, stop: async () => undefined };
}
