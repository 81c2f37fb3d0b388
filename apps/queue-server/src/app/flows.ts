import { type EnqueueOptions, FLOW_LIMITS, WorkqError } from '@workq/core';
import type { ChildInput, EnqueueResult, LeaseRef } from '@workq/core/engine';
import { checkPayloads } from './payloads.ts';
import type { ServerServices } from './services.ts';

/**
 * The flow use cases: a parent enqueued with its children, and a running job parked on children it makes
 * (`ctx.waitForChildren`). Every child is checked as an enqueue is (its registered schema, the size limits)
 * before anything is stored; the engine then stores the whole flow in one atomic step.
 */

/** A child as the router parsed it: a job, its policy, and its own children. */
export interface ChildRequest {
  name: string;
  version: number;
  payload: unknown;
  options?: EnqueueOptions | undefined;
  onFailure?: ChildInput['onFailure'] | undefined;
  children?: readonly ChildRequest[] | undefined;
}

/** A child with where it sits in its flow (`children[2].children[0]`), for errors that name it. */
interface PlacedChild {
  child: ChildRequest;
  path: string;
}

/**
 * Every child below `children`, parents before their children, each with its place; refused with `VALIDATION`
 * past `FLOW_LIMITS` (the engine's own limits, checked here first so an oversized flow costs no payload checks).
 */
function placedChildren(children: readonly ChildRequest[]): PlacedChild[] {
  const placed: PlacedChild[] = [];
  const visit = (list: readonly ChildRequest[], prefix: string, depth: number) => {
    if (depth > FLOW_LIMITS.depth) {
      throw new WorkqError(
        'VALIDATION',
        `${prefix} nests children more than ${FLOW_LIMITS.depth} levels below the parent; flatten the flow, or fan out deeper levels at run time with ctx.waitForChildren.`,
      );
    }
    for (const [i, child] of list.entries()) {
      const path = `${prefix}children[${i}]`;
      placed.push({ child, path });
      if (placed.length > FLOW_LIMITS.children) {
        throw new WorkqError(
          'VALIDATION',
          `The flow has more than ${FLOW_LIMITS.children} children at every depth together, the most one enqueue or one waitForChildren makes. Enqueue fewer here and fan out the rest at run time with ctx.waitForChildren (each round may make as many again), or split the work into several flows.`,
        );
      }
      if (child.children) visit(child.children, `${path}.`, depth + 1);
    }
  };
  visit(children, '', 1);
  return placed;
}

/** The job types of a flow's children, each once: each needs the caller's `produce:` scope. */
export function childTypes(children: readonly ChildRequest[] | undefined): string[] {
  return children ? [...new Set(placedChildren(children).map(({ child }) => child.name))] : [];
}

/** Checks each child's payload as an enqueue's is; a refusal names the child by its place in the flow. */
async function checkChildPayloads(services: ServerServices, placed: readonly PlacedChild[]): Promise<void> {
  for (const { child, path } of placed) {
    try {
      await checkPayloads(services, child.name, child.version, [child.payload]);
    } catch (error) {
      if (!(error instanceof WorkqError)) throw error;
      throw new WorkqError(error.code, `Child ${path} ("${child.name}") of the flow: ${error.message}`, {
        details: error.details,
        cause: error,
      });
    }
  }
}

/** The engine's inputs for `children`, field by field, so nothing a client adds reaches a store. */
function toChildInputs(children: readonly ChildRequest[]): ChildInput[] {
  return children.map(({ name, version, payload, options, onFailure, children: below }) => ({
    name,
    version,
    payload,
    ...(options ? { options } : {}),
    ...(onFailure ? { onFailure } : {}),
    ...(below && below.length > 0 ? { children: toChildInputs(below) } : {}),
  }));
}

/** Counts the jobs a flow made, by type, in `workq_jobs_enqueued_total`. */
function countEnqueued(services: ServerServices, names: readonly string[]): void {
  const byName = new Map<string, number>();
  for (const name of names) byName.set(name, (byName.get(name) ?? 0) + 1);
  for (const [name, count] of byName) services.metrics.enqueued.inc({ name }, count);
}

/**
 * Enqueues `parent` (already checked as an enqueue, its options built) with `children`, all or nothing.
 * Under a key a retained job holds, that job is returned and nothing is stored.
 */
export async function enqueueFlow(
  services: ServerServices,
  parent: { name: string; version: number; payload: unknown; options?: EnqueueOptions | undefined },
  children: readonly ChildRequest[],
): Promise<EnqueueResult> {
  const placed = placedChildren(children);
  await checkPayloads(services, parent.name, parent.version, [parent.payload]);
  await checkChildPayloads(services, placed);
  const result = await services.engine.flows.enqueue({ ...parent, children: toChildInputs(children) });
  if (result.created) countEnqueued(services, [parent.name, ...placed.map(({ child }) => child.name)]);
  return result;
}

/**
 * Parks the job `lease` holds on `children`, enqueued in the same atomic step; its attempt ends uncounted.
 * `LEASE_LOST` when the lease does not hold, and then nothing is stored.
 */
export async function waitForChildren(
  services: ServerServices,
  lease: LeaseRef,
  children: readonly ChildRequest[],
): Promise<void> {
  const placed = placedChildren(children);
  await checkChildPayloads(services, placed);
  await services.engine.flows.waitForChildren(lease, toChildInputs(children));
  countEnqueued(
    services,
    placed.map(({ child }) => child.name),
  );
}
