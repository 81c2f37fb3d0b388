import type { TRPCMiddlewareFunction } from '@trpc/server';
import { WorkqError } from '@workq/core';
import { jobType } from '../app/jobs.ts';
import type { ServerServices } from '../app/services.ts';
import { hasAnyScope, type Principal, requireReadScope, requireScope, requireSomeConsumeScope } from '../auth.ts';
import type { ScopeKind } from '../scopes.ts';
import { authedProcedure, type RequestContext } from './trpc.ts';

/**
 * Scope checks as procedure middleware: a procedure declares the scope its
 * caller needs, and its resolver runs only for a token that holds it. Every
 * refusal is `FORBIDDEN`, and goes to the audit trail as any refusal does.
 */

/** Procedures for operators: the token holds `admin`. */
export const adminProcedure = authedProcedure.use(({ ctx, next }) => {
  requireScope(ctx.principal, 'admin');
  return next();
});

/**
 * Lease operations (complete, fail, extend, …): the token holds some
 * `consume:` scope; which job each call touches is authorized by its lease
 * token.
 */
export const leaseProcedure = authedProcedure.use(({ ctx, next }) => {
  requireSomeConsumeScope(ctx.principal);
  return next();
});

/**
 * The token holds one of `kinds` for the job type `nameOf` reads from the
 * call's input (and its context so far); `admin` holds every kind. Placed
 * after `.input()`, so the name is parsed. Refused with `FORBIDDEN`: with
 * `refusal(name)` when given, else naming the scope (`requireScope`'s
 * message for the first kind). A name of `undefined` asks for nothing.
 */
export function scoped<TInput, TContext>(
  kinds: ScopeKind | readonly [ScopeKind, ...ScopeKind[]],
  nameOf: (input: TInput, ctx: TContext) => string | undefined,
  refusal?: (name: string) => string,
) {
  const anyOf: readonly ScopeKind[] = typeof kinds === 'string' ? [kinds] : kinds;
  return <TNext>({
    ctx,
    input,
    next,
  }: {
    ctx: TContext & { principal: Principal };
    input: TInput;
    next: () => TNext;
  }) => {
    const name = nameOf(input, ctx);
    if (name === undefined || hasAnyScope(ctx.principal, anyOf, name)) return next();
    if (refusal) throw new WorkqError('FORBIDDEN', refusal(name));
    requireScope(ctx.principal, anyOf[0] as ScopeKind, name);
    return next();
  };
}

/**
 * The token holds `produce:` for every job type `namesOf` reads from the input (a flow's child types), so no
 * token reaches a type beyond its scope through another's call. Refused with `FORBIDDEN`, naming the first
 * scope missing.
 */
export function producesEach<TInput>(namesOf: (input: TInput) => readonly string[]) {
  return <TNext>({ ctx, input, next }: { ctx: { principal: Principal }; input: TInput; next: () => TNext }) => {
    for (const name of namesOf(input)) requireScope(ctx.principal, 'produce', name);
    return next();
  };
}

/**
 * The type of the job a call names by `input.id`, as `ctx.jobName`: for a token that may produce or consume it,
 * else `FORBIDDEN`; `NOT_FOUND` when there is no such job.
 */
export const readsJob: TRPCMiddlewareFunction<
  RequestContext,
  object,
  { services: ServerServices; principal: Principal },
  { jobName: string },
  { id: string }
> = async ({ ctx, input, next }) => {
  const jobName = await jobType(ctx.services, input.id);
  requireReadScope(ctx.principal, jobName);
  return next({ ctx: { jobName } });
};
