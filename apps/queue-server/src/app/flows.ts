import { type EnqueueOptions, FLOW_LIMITS, WorkqError } from '@workq/core';
import type { ChildInput, EnqueueInput, EnqueueResult, LeaseRef } from '@workq/core/engine';
import { enqueueJob, toEnqueueInputs } from './enqueue.ts';
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

/** A child as the engine takes it, with where it sits in its flow, for errors that name it. */
interface PlacedChild {
  input: ChildInput;
  /** Its place among its siblings, and the child it is a child of (none at the top). */
  index: number;
  parent: PlacedChild | undefined;
}

/** Where `placed` sits in its flow: `children[2].children[0]`. */
function pathOf(placed: PlacedChild): string {
  const prefix = placed.parent ? `${pathOf(placed.parent)}.` : '';
  return `${prefix}children[${placed.index}]`;
}

/**
 * Walks `children` and every child below them, parents before their children, calling `visit` with each and
 * its parent's result, and refuses the flow with `VALIDATION` past `FLOW_LIMITS` (the engine's own limits,
 * checked here first so an oversized flow costs no payload checks).
 */
function walkChildren<T>(
  children: readonly ChildRequest[],
  visit: (child: ChildRequest, index: number, parent: T | undefined) => T,
): void {
  let count = 0;
  const walk = (list: readonly ChildRequest[], parent: T | undefined, where: () => string, depth: number) => {
    if (depth > FLOW_LIMITS.depth) {
      throw new WorkqError(
        'VALIDATION',
        `${where()} nests children more than ${FLOW_LIMITS.depth} levels below the parent; flatten the flow, or fan out deeper levels at run time with ctx.waitForChildren.`,
      );
    }
    for (let index = 0; index < list.length; index++) {
      const child = list[index] as ChildRequest;
      if (++count > FLOW_LIMITS.children) {
        throw new WorkqError(
          'VALIDATION',
          `The flow has more than ${FLOW_LIMITS.children} children at every depth together, the most one enqueue or one waitForChildren makes. Enqueue fewer here and fan out the rest at run time with ctx.waitForChildren (each round may make as many again), or split the work into several flows.`,
        );
      }
      const visited = visit(child, index, parent);
      if (child.children && child.children.length > 0) {
        walk(child.children, visited, () => `${where()}children[${index}].`, depth + 1);
      }
    }
  };
  walk(children, undefined, () => '', 1);
}

/**
 * The engine's inputs for `children`, field by field (so nothing a client adds reaches a store), made in one walk
 * with each child's place: the one copy a flow's children get on the server.
 */
function placeChildren(children: readonly ChildRequest[]): { inputs: ChildInput[]; placed: PlacedChild[] } {
  const inputs: ChildInput[] = [];
  const placed: PlacedChild[] = [];
  walkChildren<PlacedChild & { below?: ChildInput[] }>(children, (child, index, parent) => {
    const { name, version, payload, options, onFailure } = child;
    const input: ChildInput = { name, version, payload };
    if (options) input.options = options;
    if (onFailure) input.onFailure = onFailure;
    if (parent) {
      parent.below ??= [];
      parent.below.push(input);
      parent.input.children = parent.below;
    } else inputs.push(input);
    const entry = { input, index, parent };
    placed.push(entry);
    return entry;
  });
  return { inputs, placed };
}

/** The job types of a flow's children, each once: each needs the caller's `produce:` scope. */
export function childTypes(children: readonly ChildRequest[] | undefined): string[] {
  const names = new Set<string>();
  if (children) walkChildren(children, (child) => names.add(child.name));
  return [...names];
}

/**
 * Checks the children's payloads as an enqueue checks its jobs': those of one type and version together, as
 * bulk enqueue does (one schema lookup, then a plain loop). When one is refused, the children are checked again
 * one by one, in order, so the refusal names the first refused child by its place in the flow.
 */
async function checkChildPayloads(services: ServerServices, placed: readonly PlacedChild[]): Promise<void> {
  const byType = new Map<string, { name: string; version: number; payloads: unknown[] }>();
  for (const { input } of placed) {
    const key = `${input.version} ${input.name}`;
    const group = byType.get(key);
    if (group) group.payloads.push(input.payload);
    else byType.set(key, { name: input.name, version: input.version, payloads: [input.payload] });
  }
  try {
    for (const { name, version, payloads } of byType.values()) await checkPayloads(services, name, version, payloads);
    return;
  } catch (error) {
    if (!(error instanceof WorkqError)) throw error;
    await checkEachChild(services, placed);
    throw error;
  }
}

/** Checks each child's payload alone, in order; a refusal names the child by its place in the flow. */
async function checkEachChild(services: ServerServices, placed: readonly PlacedChild[]): Promise<void> {
  for (const child of placed) {
    const { name, version, payload } = child.input;
    try {
      await checkPayloads(services, name, version, [payload]);
    } catch (error) {
      if (!(error instanceof WorkqError)) throw error;
      throw new WorkqError(error.code, `Child ${pathOf(child)} ("${name}") of the flow: ${error.message}`, {
        details: error.details,
        cause: error,
      });
    }
  }
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
  const { inputs, placed } = placeChildren(children);
  await checkPayloads(services, parent.name, parent.version, [parent.payload]);
  await checkChildPayloads(services, placed);
  const result = await services.engine.flows.enqueue({ ...parent, children: inputs });
  if (result.created) countEnqueued(services, [parent.name, ...placed.map(({ input }) => input.name)]);
  return result;
}

/**
 * Enqueues one job of `name`, or with `children` a flow (`enqueueFlow`): what an enqueue call does, over tRPC
 * and over the plain HTTP API alike.
 */
export function enqueueJobOrFlow(
  services: ServerServices,
  name: string,
  jobVersion: number,
  payload: unknown,
  options: EnqueueOptions | undefined,
  children: readonly ChildRequest[] | undefined,
): Promise<EnqueueResult> {
  if (!children || children.length === 0) return enqueueJob(services, name, jobVersion, payload, options);
  const [parent] = toEnqueueInputs(name, jobVersion, [payload], options) as [EnqueueInput];
  return enqueueFlow(services, parent, children);
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
  const { inputs, placed } = placeChildren(children);
  await checkChildPayloads(services, placed);
  await services.engine.flows.waitForChildren(lease, inputs);
  countEnqueued(
    services,
    placed.map(({ input }) => input.name),
  );
}

/** `VALIDATION` unless `limits.maxChildrenPageBytes` is a positive integer: checked once, at start. */
export function checkMaxChildrenPageBytes(limits: { maxChildrenPageBytes: number }): void {
  const bytes = limits.maxChildrenPageBytes;
  if (!Number.isInteger(bytes) || bytes < 1) {
    throw new WorkqError('VALIDATION', `limits.maxChildrenPageBytes must be a positive integer; got ${bytes}.`);
  }
}
