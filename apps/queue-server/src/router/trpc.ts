import { initTRPC, TRPCError } from '@trpc/server';
import { WorkqError, wireTransformer } from '@workq/core';
import type {
  ClaimDispatcher,
  CronScheduler,
  Engine,
  EventHub,
  ScheduledEntry,
  SchemaRegistry,
  WakeupBus,
} from '@workq/core/engine';
import type { Principal, TokenAuthority } from '../auth.ts';
import { requestKindOf, STATUS_OF_ERROR, toClientError } from '../errors.ts';
import type { ServerMetrics } from '../metrics.ts';
import type { ResolvedServerOptions } from '../options.ts';

/** What every procedure can reach: built once per server. */
export interface ServerServices {
  engine: Engine;
  registry: SchemaRegistry;
  /** Wakes waiting requests, in this process and across servers. */
  bus: WakeupBus;
  /** What claims and enqueues do between store calls: waiting, handoffs, stop-waiting, merged writes. */
  dispatcher: ClaimDispatcher;
  /** Job events of every server on the store, for this server's subscribers. */
  events: EventHub;
  authority: TokenAuthority;
  metrics: ServerMetrics;
  /** This server's crontab, checked. */
  crontab: readonly ScheduledEntry[];
  /** The cron role: told to read the stored schedules again when one is written here (it reads them only while leading). */
  scheduler: Pick<CronScheduler, 'reload'>;
  options: ResolvedServerOptions;
}

/**
 * What the API's type says a request brings: its `Authorization` header and
 * the caller's address. Clients compile against that type, so it names
 * nothing of the server's internals.
 */
export interface RequestContext {
  authorization: string | undefined;
  /** The caller's address, for the worker registry. */
  remoteAddress: string;
}

/** The context the server builds for every request: the request, and this server's services. */
export interface ServerContext extends RequestContext {
  services: ServerServices;
}

const t = initTRPC.context<RequestContext>().create({
  transformer: wireTransformer,
  isDev: false,
  errorFormatter({ shape, error, type, path }) {
    const clientError = toClientError(error, requestKindOf(type, path));
    return {
      code: shape.code,
      message: clientError.message,
      data: {
        code: shape.data.code,
        httpStatus: shape.data.httpStatus,
        path: shape.data.path,
        workqCode: clientError.code,
        retryable: clientError.retryable,
        details: clientError.details,
      },
    };
  },
});

/** Turns a thrown `WorkqError` into the tRPC error of its code, so the HTTP status matches. */
const mapErrors = t.middleware(async ({ next }) => {
  const result = await next();
  if (!result.ok && result.error.cause instanceof WorkqError && result.error.code === 'INTERNAL_SERVER_ERROR') {
    const cause = result.error.cause;
    throw new TRPCError({ code: STATUS_OF_ERROR[cause.code].trpc, message: cause.message, cause });
  }
  return result;
});

/** Hands procedures the server's services (built into every context by the server) and the caller's principal. */
const authenticate = t.middleware(async ({ ctx, next }) => {
  const { services } = ctx as ServerContext;
  const principal: Principal = await services.authority.authenticate(ctx.authorization);
  return next({ ctx: { ...ctx, services, principal } });
});

export const router = t.router;
export const publicProcedure = t.procedure.use(mapErrors);
export const authedProcedure = publicProcedure.use(authenticate);
