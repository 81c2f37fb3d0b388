import { TRPCError, tracked } from '@trpc/server';
import { encodeEventBatch, eventBatchWireParts, WorkqError } from '@workq/core';
import { z } from 'zod';
import type { ServerServices } from '../app/services.ts';
import { hasAnyScope, type Principal } from '../auth.ts';
import { STATUS_OF_ERROR, serverAtLimit } from '../errors.ts';
import { withWireParts } from '../http/server-sent-events.ts';
import { jobName, storableText } from './inputs.ts';
import { scoped } from './scoped.ts';
import { authedProcedure, callSignal, router } from './trpc.ts';

/** Whether a token may see the events of job type `name`: it may produce or consume it (`admin` may all). */
function mayWatch(principal: Principal, name: string): boolean {
  return hasAnyScope(principal, ['produce', 'consume'], name);
}

/** The longest `setTimeout` takes; a later expiry is waited for in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A signal that aborts at `atMs` (epoch milliseconds), and a function that stops waiting for it. */
function abortAt(atMs: number): { signal: AbortSignal; stop: () => void } {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const wait = () => {
    const leftMs = atMs - Date.now();
    if (leftMs <= 0) return controller.abort();
    timer = setTimeout(wait, Math.min(leftMs, MAX_TIMER_MS));
  };
  wait();
  return { signal: controller.signal, stop: () => clearTimeout(timer) };
}

/**
 * Refuses a stream past the server's caps: `UNAVAILABLE` (retryable) when the
 * server holds `maxEventStreams`, `FORBIDDEN` when the token holds
 * `maxEventStreamsPerToken`. Checked in the same turn as the subscription is
 * made, so no two streams pass on one free place.
 */
function checkStreamCaps(ctx: { services: ServerServices; principal: Principal }): void {
  const { events, options } = ctx.services;
  const { maxEventStreams, maxEventStreamsPerToken } = options.limits;
  if (events.subscriberCount() >= maxEventStreams) {
    throw serverAtLimit(
      'maxEventStreams',
      `This server already serves ${maxEventStreams} event streams (limits.maxEventStreams, --max-event-streams); try again later or another server.`,
    );
  }
  const owner = ctx.principal.callerKey;
  if (owner !== undefined && events.subscriberCount(owner) >= maxEventStreamsPerToken) {
    throw new WorkqError(
      'FORBIDDEN',
      `This token already holds ${maxEventStreamsPerToken} open event streams (limits.maxEventStreamsPerToken, --max-event-streams-per-token): close one (end its loop or abort its signal) before opening another.`,
    );
  }
}

/** The job names a subscriber sees: its own filter within its token's scopes, decided once per name. */
function watchFilter(principal: Principal, only: string | undefined): (name: string) => boolean {
  const decided = new Map<string, boolean>();
  return (name) => {
    let wanted = decided.get(name);
    if (wanted === undefined) {
      wanted = (only === undefined || name === only) && mayWatch(principal, name);
      decided.set(name, wanted);
    }
    return wanted;
  };
}

export const eventsRouter = router({
  /**
   * Live job events, over server-sent events: batches of events, each batch
   * tracked by the id to resume after it (tRPC sends it back as
   * `lastEventId` when it reconnects). A batch may begin with a `resync`
   * event: events were missed (the subscriber fell too far behind, or
   * reconnected where its last id cannot be resumed). Only events of job
   * types the token may produce, consume or administer are sent.
   */
  watch: authedProcedure
    .input(z.object({ name: jobName.optional(), lastEventId: storableText(1, 200).optional() }))
    // Checked before the stream starts, so a refusal reaches the client as its own code, not a retryable one.
    .use(
      scoped(
        ['produce', 'consume'],
        (input) => input.name,
        (name) => `This token may not watch "${name}" events: it needs produce:${name}, consume:${name} or admin.`,
      ),
    )
    .subscription(async ({ ctx, input, signal }) => {
      const { principal } = ctx;
      if (principal.expiresAtMs !== undefined && principal.expiresAtMs <= Date.now()) throw expired(principal);
      checkStreamCaps(ctx);
      // A signed token's stream ends when the token does: what it grants ends then.
      const expiry = principal.expiresAtMs === undefined ? undefined : abortAt(principal.expiresAtMs);
      const ended = callSignal(signal);
      const batches = ctx.services.events.subscribe({
        wants: watchFilter(principal, input.name),
        lastEventId: input.lastEventId,
        signal: expiry ? AbortSignal.any([ended, expiry.signal]) : ended,
        ...(principal.callerKey === undefined ? {} : { owner: principal.callerKey }),
      });
      return (async function* () {
        try {
          // Compact (`encodeEventBatch`); its bytes are made once per run and shared by every stream (`eventBatchWireParts`).
          for await (const batch of batches) {
            yield tracked(
              batch.id,
              withWireParts(encodeEventBatch(batch.runs), () => eventBatchWireParts(batch.runs)),
            );
          }
          if (expiry?.signal.aborted && !ended.aborted) throw expired(principal);
        } catch (error) {
          // A server closing ends streams with UNAVAILABLE: a code on which clients reconnect.
          if (error instanceof WorkqError) {
            throw new TRPCError({ code: STATUS_OF_ERROR[error.code].trpc, message: error.message, cause: error });
          }
          throw error;
        } finally {
          expiry?.stop();
        }
      })();
    }),
});

/** The refusal of a stream whose signed token has expired: the client reconnects with a new token. */
function expired(principal: Principal): WorkqError {
  const at = new Date(principal.expiresAtMs ?? Date.now()).toISOString();
  return new WorkqError(
    'UNAUTHORIZED',
    `The bearer token expired at ${at}, and the event stream with it. Reconnect with a new token (the SDK does, when its token is a function).`,
  );
}
