import { FLOW_LIMITS } from '@workq/core';
import { type ClaimedJob, type LeaseRef, valueBytes } from '@workq/core/engine';
import { readInRoom } from './answer-budget.ts';
import { childEntry } from './jobs.ts';
import type { ServerServices } from './services.ts';

/**
 * Pages of a job's children, each read with room in the server's `AnswerBudget`: room for a whole page
 * (`limits.maxChildrenPageBytes`) is taken first, the page is cut to the room granted, and what its children do
 * not carry goes back once it is read; the rest is held until the answer is sent.
 */

/** Where a page starts and how many children it holds at most. */
export interface PagePlace {
  afterId?: string | undefined;
  limit: number;
}

/**
 * A page of a job's children for `jobs.children`, each as `childEntry` sends it: its state, and its result or
 * last error. A child brings its result and errors to the page's bytes; its payload is left unread.
 */
export function childrenPage(services: ServerServices, id: string, place: PagePlace, signal: AbortSignal) {
  const { maxChildrenPageBytes, maxResultBytes } = services.options.limits;
  return readInRoom(
    services.answerBudget,
    signal,
    { wantBytes: maxChildrenPageBytes, unitBytes: maxResultBytes },
    async (maxBytes) => (await services.engine.flows.children(id, { ...place, maxBytes })).map(childEntry),
    valueBytes,
  );
}

/** A page of a held job's children for its handler (`consumer.children`), and whether more follow. */
export function heldChildrenPage(services: ServerServices, lease: LeaseRef, place: PagePlace, signal: AbortSignal) {
  const { maxChildrenPageBytes, maxResultBytes } = services.options.limits;
  return readInRoom(
    services.answerBudget,
    signal,
    { wantBytes: maxChildrenPageBytes, unitBytes: maxResultBytes },
    (maxBytes) => services.engine.flows.heldChildren(lease, { ...place, maxBytes }),
    (page) => valueBytes(page.children),
  );
}

/**
 * `jobs`, each resumed one with the first page of its children (`ClaimedJob.children`), read under the lease its
 * claim just granted, as `consumer.children` would answer it: a worker then starts a parent's handler without a
 * round trip of its own. One answer carries at most `FLOW_LIMITS.statusChildren` children and the bytes of one
 * page, as one page does, shared evenly among its resumed jobs; a page cut short says more follow, and the worker
 * reads the rest. A page that cannot be read, or finds no room in the answer budget, is left out, and the worker
 * reads it itself.
 */
export async function withFirstChildren(
  services: ServerServices,
  jobs: ClaimedJob[],
  signal: AbortSignal,
): Promise<ClaimedJob[]> {
  const resumed = jobs.filter((job) => job.resumed);
  if (resumed.length === 0) return jobs;
  const limit = Math.max(1, Math.floor(FLOW_LIMITS.statusChildren / resumed.length));
  const { maxChildrenPageBytes, maxResultBytes } = services.options.limits;
  // Without room for them (the claim's own jobs hold what is left), the pages are left out.
  await readInRoom(
    services.answerBudget,
    signal,
    { wantBytes: maxChildrenPageBytes, unitBytes: maxResultBytes },
    (bytes) => {
      const maxBytes = Math.max(1, Math.floor(bytes / resumed.length));
      return Promise.all(
        resumed.map(async (job) => {
          const lease = { id: job.id, leaseToken: job.leaseToken };
          const page = await services.engine.flows.heldChildren(lease, { limit, maxBytes }).catch(() => undefined);
          if (page) job.children = page;
        }),
      );
    },
    () => valueBytes(resumed.map((job) => job.children?.children)),
  ).catch(() => undefined);
  return jobs;
}
