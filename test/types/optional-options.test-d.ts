/**
 * Every optional option of the public API accepts an explicit `undefined`, so a user whose tsconfig has
 * `exactOptionalPropertyTypes` (as `tsc --init` writes it) can pass `token: process.env.WORKQ_TOKEN` or
 * `store: options.store`. Needs `exactOptionalPropertyTypes` in tsconfig.typetests.json: without it every
 * optional property accepts `undefined` and this proves nothing.
 */

import type { Backoff, DebounceOptions, EnqueueOptions, JobDefaults, JobSpec, WorkqErrorOptions } from '@workq/core';
import type { OpenStoreOptions } from '@workq/core/engine';
import type { MongoStoreOptions } from '@workq/core/mongodb';
import type { MysqlStoreOptions } from '@workq/core/mysql';
import type { PgliteStoreOptions, PostgresStoreOptions } from '@workq/core/postgres';
import type {
  CatalogCronEntry,
  CorsOptions,
  CronEntry,
  MintTokenOptions,
  ServerLimits,
  ServerOptions,
  TokenGrant,
} from '@workq/queue-server';
import type { jobs } from '@workq/schemas';
import type {
  AdminApi,
  ClientOptions,
  ConsumeOptions,
  EnqueueManyOptions,
  EventsOptions,
  JobHandle,
  LimitsChange,
  MoveToOptions,
  ScheduleInput,
  TracingOptions,
} from '@workq/sdk';
import { describe, it } from 'vitest';

type Leaf = ((...args: never[]) => unknown) | Date | RegExp | AbortSignal | PromiseLike<unknown> | { _zod: unknown };
type OptionalKeys<T> = {
  [K in keyof T]-?: string extends K ? never : Partial<Pick<T, K>> extends Pick<T, K> ? K : never;
}[keyof T];
type Depth = [never, 0, 1, 2, 3];

/**
 * The dotted paths, within `T` and the objects it holds (to four levels), of optional properties that refuse
 * an explicit `undefined`: `never` when there are none. `Required` keeps a declared `| undefined` only under
 * `exactOptionalPropertyTypes`.
 */
type RefusesUndefined<T, D extends number = 4, Path extends string = ''> = [D] extends [never]
  ? never
  : T extends Leaf
    ? never
    : T extends readonly (infer E)[]
      ? RefusesUndefined<E, Depth[D], `${Path}[]`>
      : T extends object
        ?
            | {
                [K in OptionalKeys<T> & string]: undefined extends Required<T>[K] ? never : `${Path}${K}`;
              }[OptionalKeys<T> & string]
            | { [K in keyof T & string]: RefusesUndefined<NonNullable<T[K]>, Depth[D], `${Path}${K}.`> }[keyof T &
                string]
        : never;

/** Compiles only when `Paths` is `never`; otherwise the error names each path that refuses `undefined`. */
function noneRefuseUndefined<Paths extends never>(): Paths | undefined {
  return undefined;
}

type Jobs = typeof jobs;
type FirstArg<F> = F extends (first: infer A, ...rest: never[]) => unknown ? NonNullable<A> : never;

describe('exactOptionalPropertyTypes: optional options accept undefined', () => {
  it('in the SDK', () => {
    noneRefuseUndefined<RefusesUndefined<ClientOptions<Jobs>>>();
    noneRefuseUndefined<RefusesUndefined<ConsumeOptions>>();
    noneRefuseUndefined<RefusesUndefined<EnqueueManyOptions>>();
    noneRefuseUndefined<RefusesUndefined<MoveToOptions>>();
    noneRefuseUndefined<RefusesUndefined<FirstArg<JobHandle['result']>>>();
    noneRefuseUndefined<RefusesUndefined<EventsOptions>>();
    noneRefuseUndefined<RefusesUndefined<LimitsChange>>();
    noneRefuseUndefined<RefusesUndefined<ScheduleInput>>();
    noneRefuseUndefined<RefusesUndefined<TracingOptions>>();
    noneRefuseUndefined<RefusesUndefined<FirstArg<AdminApi['list']>>>();
    noneRefuseUndefined<RefusesUndefined<ConsumeOptions>>();
  });

  it('in core', () => {
    noneRefuseUndefined<RefusesUndefined<EnqueueOptions>>();
    noneRefuseUndefined<RefusesUndefined<WorkqErrorOptions>>();
    // Drivers' own objects (a pool, a client) are theirs to type.
    noneRefuseUndefined<RefusesUndefined<Omit<MongoStoreOptions, 'client'>>>();
    noneRefuseUndefined<RefusesUndefined<Omit<MysqlStoreOptions, 'pool'>>>();
    noneRefuseUndefined<RefusesUndefined<Omit<PostgresStoreOptions, 'pool'>>>();
    noneRefuseUndefined<RefusesUndefined<PgliteStoreOptions>>();
    noneRefuseUndefined<RefusesUndefined<OpenStoreOptions>>();
    noneRefuseUndefined<RefusesUndefined<DebounceOptions>>();
    noneRefuseUndefined<RefusesUndefined<Backoff>>();
    noneRefuseUndefined<RefusesUndefined<JobDefaults>>();
    noneRefuseUndefined<RefusesUndefined<JobSpec<1, never, undefined, undefined>>>();
  });

  it('in the server', () => {
    // A `Store` is an implementation of the store contract, not options.
    noneRefuseUndefined<RefusesUndefined<Omit<ServerOptions, 'store'>>>();
    noneRefuseUndefined<RefusesUndefined<ServerLimits>>();
    noneRefuseUndefined<RefusesUndefined<CorsOptions>>();
    noneRefuseUndefined<RefusesUndefined<TokenGrant>>();
    noneRefuseUndefined<RefusesUndefined<MintTokenOptions>>();
    noneRefuseUndefined<RefusesUndefined<CronEntry>>();
    noneRefuseUndefined<RefusesUndefined<CatalogCronEntry<Jobs>>>();
  });
});
