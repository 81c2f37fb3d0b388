import {
  type AnyJobDefinition,
  type Catalog,
  CHILD_FAILURE_POLICIES,
  type ChildFailurePolicy,
  type EnqueueOptions,
  type JobError,
  type JobName,
  type JobState,
  type PayloadInput,
  parseWith,
  type ResultOutput,
  WorkqError,
} from '@workq/core';

/**
 * Flows: a parent job that runs after its children have ended and reads their results. A child is described by
 * `sdk.child.<name>(payload, options)`, typed and checked as `sdk.enqueue.<name>` is, and enqueued with its
 * parent (`sdk.enqueue.<parent>(payload, { children })`) or from a running parent (`ctx.waitForChildren`), all
 * of a flow in one atomic step. See docs/flows.md.
 */

/**
 * A child's options: an enqueue's, but none that could make the enqueue return another job than a new child of
 * this flow (an idempotency key or a debounce), nor an id (the server makes each child's, ascending in the order
 * its parent reads them in), nor a retention (the jobs of a flow are kept for the server-wide retention, so a
 * parent finds its children's results), with its policy and its own children.
 */
export interface ChildOptions<N extends string = string>
  extends Omit<
    EnqueueOptions,
    'debounce' | 'idempotencyKey' | 'idempotencyTtlMs' | 'idempotencyUntil' | 'id' | 'retention'
  > {
  /** What the child's end as `dead` does to its parent. @defaultValue 'fail-parent' */
  onFailure?: ChildFailurePolicy | undefined;
  /** The child's own children: it runs after they end, as its parent runs after it. @defaultValue none */
  children?: readonly ChildJob<N>[] | undefined;
}

/**
 * A child to enqueue with a parent, made by `sdk.child.<name>`: its payload checked against the catalog's
 * current version, its type's `defaults` (but `retention`) under its options. It is what is sent, as it is.
 */
export interface ChildJob<N extends string = string> {
  readonly name: N;
  readonly version: number;
  readonly payload: unknown;
  readonly options?: EnqueueOptions | undefined;
  readonly onFailure?: ChildFailurePolicy | undefined;
  readonly children?: readonly ChildJob<N>[] | undefined;
}

/** `sdk.child.<job>(payload, options)`: a child described, typed by the catalog as `sdk.enqueue.<job>` is. */
export type ChildFns<C extends Catalog> = {
  [N in JobName<C>]: (payload: PayloadInput<C, N>, options?: ChildOptions<JobName<C>>) => ChildJob<JobName<C>>;
};

/** An enqueue's options for a parent: its children, enqueued with it in one atomic step. */
export interface ParentOptions<C extends Catalog> {
  /**
   * Children made by `sdk.child.<name>`, each possibly with children of its own: the job runs once they have
   * all ended (state `waiting-children` until then). @defaultValue none
   */
  children?: readonly ChildJob<JobName<C>>[] | undefined;
}

/** A child as its parent's handler sees it (`ctx.children`), its result typed by its job type. */
export type FlowChild<C extends Catalog> = {
  [N in JobName<C>]: {
    id: string;
    name: N;
    state: JobState;
    /** The child's result, when it completed. */
    result?: ResultOutput<C, N>;
    /** The child's last error, when it failed. */
    error?: JobError;
  };
}[JobName<C>];

/** The children `sdk.child` made: what a parent's `children` must hold. */
const madeChildren = new WeakSet<object>();

/** Checks one child's options (policy, children) and builds the descriptor sent with its parent. */
function describeChild(definition: AnyJobDefinition, name: string, payload: unknown, options?: ChildOptions): ChildJob {
  parseWith(definition.payload, payload, `Payload of child "${name}"`);
  const { onFailure, children, ...own } = options ?? {};
  if (onFailure !== undefined && !(CHILD_FAILURE_POLICIES as readonly string[]).includes(onFailure)) {
    throw new WorkqError(
      'VALIDATION',
      `onFailure of child "${name}" is ${JSON.stringify(onFailure)}; use 'fail-parent', 'ignore' or 'continue'.`,
    );
  }
  if ((own as EnqueueOptions).id !== undefined) {
    throw new WorkqError(
      'VALIDATION',
      `Child "${name}" takes no id: each child's id is made for it, in the order its parent reads its children. Find a child through its parent (ctx.children, handle.status()).`,
    );
  }
  // The type's default retention stays out: a flow's jobs are kept for the server-wide retention.
  const { retention: _retention, ...defaults } = definition.defaults;
  const child: ChildJob = { name, version: definition.version, payload, options: { ...defaults, ...own } };
  const made = checkChildren(children, `child "${name}"`);
  Object.assign(child, {
    ...(onFailure === undefined ? {} : { onFailure }),
    ...(made === undefined ? {} : { children: made }),
  });
  madeChildren.add(child);
  return child;
}

/**
 * `children` as sent, each one made by `sdk.child`, or `undefined` for none; `VALIDATION` for anything else
 * (a child written by hand would skip the checks its maker makes). `of` names whose children they are.
 */
export function checkChildren(children: readonly ChildJob[] | undefined, of: string): ChildJob[] | undefined {
  if (children === undefined) return undefined;
  if (!Array.isArray(children)) {
    throw new WorkqError('VALIDATION', `The children of ${of} must be an array of sdk.child.<name>(payload).`);
  }
  for (const [i, child] of children.entries()) {
    if (typeof child !== 'object' || child === null || !madeChildren.has(child)) {
      throw new WorkqError(
        'VALIDATION',
        `Child ${i} of ${of} was not made by sdk.child.<name>(payload, options): make each child with it.`,
      );
    }
  }
  return children.length === 0 ? undefined : [...children];
}

/** `sdk.child`, over the catalog's definitions (`definitionOf` fails with `UNKNOWN_JOB` for a name it lacks). */
export function createChildFns<C extends Catalog>(definitionOf: (name: string) => AnyJobDefinition): ChildFns<C> {
  return new Proxy({} as ChildFns<C>, {
    get: (_target, name) => {
      if (typeof name !== 'string') return undefined;
      return (payload: unknown, options?: ChildOptions) => describeChild(definitionOf(name), name, payload, options);
    },
  });
}
