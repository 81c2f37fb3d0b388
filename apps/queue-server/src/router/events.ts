import { TRPCError, tracked } from '@trpc/server';
import { encodeEventBatch, WorkqError } from '@workq/core';
import { z } from 'zod';
import { hasScope, type Principal } from '../auth.ts';
import { STATUS_OF_ERROR } from '../errors.ts';
import { jobName, storableText } from './inputs.ts';
import { authedProcedure, router } from './trpc.ts';

/** Whether a token may see the events of job type `name`: it may produce, consume or administer it. */
function mayWatch(principal: Principal, name: string): boolean {
  return hasScope(principal, 'produce', name) || hasScope(principal, 'consume', name) || hasScope(principal, 'admin');
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
    .subscription(async ({ ctx, input, signal }) => {
      const { principal } = ctx;
      // Checked before the stream starts, so a refusal reaches the client as its own code, not a retryable one.
      if (input.name !== undefined && !mayWatch(principal, input.name)) {
        throw new WorkqError(
          'FORBIDDEN',
          `This token may not watch "${input.name}" events: it needs produce:${input.name}, consume:${input.name} or admin.`,
        );
      }
      const batches = ctx.services.events.subscribe({
        wants: watchFilter(principal, input.name),
        lastEventId: input.lastEventId,
        signal: signal ?? new AbortController().signal,
      });
      return (async function* () {
        try {
          // Compact (`encodeEventBatch`), and plain JSON, which the wire transformer passes through as it is.
          for await (const batch of batches) yield tracked(batch.id, encodeEventBatch(batch.runs));
        } catch (error) {
          // A server closing ends streams with UNAVAILABLE: a code on which clients reconnect.
          if (error instanceof WorkqError) {
            throw new TRPCError({ code: STATUS_OF_ERROR[error.code].trpc, message: error.message, cause: error });
          }
          throw error;
        }
      })();
    }),
});
