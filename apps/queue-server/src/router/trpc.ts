import { initTRPC, TRPCError } from '@trpc/server';
import { WorkqError, wireTransformer } from '@workq/core';
import type { ServerServices } from '../app/services.ts';
import { logAdminAction, logAuthFailure, refusalDetail, targetOf } from '../audit-log.ts';
import type { Principal } from '../auth.ts';
import { requestKindOf, STATUS_OF_ERROR, toClientError } from '../errors.ts';
import { currentRequest, notePrincipal } from '../request-context.ts';

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
  /**
   * Tells the server that the call has let go of the large part of its input (a claim, of the acks it carried,
   * once they are stored) and holds only what is left: the server drops its own copies of the input, and the
   * body's bytes stop counting against `limits.maxBodyBytesInFlight`. Does nothing for a call in a batch, whose
   * body its other calls share.
   */
  letGoOfBody: () => void;
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
        // A 5xx names the request, so its one log line can be found (the cause stays in the log).
        ...(shape.data.httpStatus >= 500 ? { requestId: currentRequest()?.id } : {}),
      },
    };
  },
});

/** Hands procedures the server's services (built into every context by the server) and the caller's principal. */
const authenticate = t.middleware(async ({ ctx, next }) => {
  const { services, letGoOfBody } = ctx as ServerContext;
  const principal: Principal = await services.authority.authenticate(ctx.authorization);
  notePrincipal(principal);
  return next({ ctx: { ...ctx, services, letGoOfBody, principal } });
});

/** Admin mutations that change nothing, left out of the audit trail. */
const READ_ONLY_ADMIN_MUTATIONS: ReadonlySet<string> = new Set(['admin.checkPayload']);

/**
 * Every call's outcome, seen once, in one middleware rather than two (each costs every request a copy of its
 * options): first the audit trail (audit-log.ts), written once for every procedure and every path to it
 * (tRPC, the dashboard, the CLI): a call refused for who made it (`UNAUTHORIZED`, `FORBIDDEN`), and each admin
 * action with its target and outcome; then a thrown `WorkqError` turned into the tRPC error of its code, so
 * the HTTP status matches.
 */
const auditAndMapErrors = t.middleware(async ({ ctx, path, type, getRawInput, next }) => {
  const result = await next();
  const logger = (ctx as Partial<ServerContext>).services?.options.logger;
  const error = result.ok ? undefined : result.error;
  const cause = error?.cause instanceof WorkqError ? error.cause : undefined;
  if (logger) {
    const refusal = cause?.code ?? error?.code;
    if (refusal === 'UNAUTHORIZED' || refusal === 'FORBIDDEN') {
      const detail = refusalDetail(error?.message ?? '', ctx.authorization);
      logAuthFailure(logger, currentRequest(), { action: path, reason: refusal, detail });
    } else if (type === 'mutation' && path.startsWith('admin.') && !READ_ONLY_ADMIN_MUTATIONS.has(path)) {
      const target = targetOf(await getRawInput().catch(() => undefined));
      const outcome = result.ok ? 'ok' : (cause?.code ?? result.error.code);
      logAdminAction(logger, currentRequest(), { action: path, target, outcome });
    }
  }
  if (cause && error?.code === 'INTERNAL_SERVER_ERROR') {
    throw new TRPCError({ code: STATUS_OF_ERROR[cause.code].trpc, message: cause.message, cause });
  }
  return result;
});

export const router = t.router;
export const publicProcedure = t.procedure.use(auditAndMapErrors);
export const authedProcedure = publicProcedure.use(authenticate);

/**
 * A call's abort signal. A call made without one (a server-side caller) gets a signal of its own that never
 * aborts: its own, so that what a long call adds to it (abort listeners) goes when the call does.
 */
export function callSignal(signal: AbortSignal | undefined): AbortSignal {
  return signal ?? new AbortController().signal;
}
