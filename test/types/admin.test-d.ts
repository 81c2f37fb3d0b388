import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import type { JobEvent, ResyncEvent } from '@workq/core';
import type { AppRouter } from '@workq/queue-server/router';
import { jobs } from '@workq/schemas';
import {
  createClient,
  createQueueApi,
  type JobState,
  type LimitsChange,
  type QueueApi,
  type ScheduleInput,
  type ScheduleListing,
  type WorkerListing,
} from '@workq/sdk';
import { describe, expectTypeOf, it } from 'vitest';

const sdk = createClient({ url: 'http://127.0.0.1:1', jobs });

describe('admin types: the worker registry and schedules', () => {
  it('types each worker as the worker registry lists it', () => {
    expectTypeOf(sdk.admin.workers).returns.resolves.toEqualTypeOf<WorkerListing[]>();
    expectTypeOf<WorkerListing>().toEqualTypeOf<{
      id: string;
      host: string;
      pid: number | null;
      names: string[];
      versions: number[];
      startedAt: Date | null;
      lastSeenAt: Date;
      activeJobIds: string[];
    }>();
  });

  it('types upsertSchedule’s input and the listing with its source, next run and last run', () => {
    expectTypeOf(sdk.admin.schedules).returns.resolves.toEqualTypeOf<ScheduleListing[]>();
    expectTypeOf<ScheduleListing['source']>().toEqualTypeOf<'crontab' | 'stored'>();
    expectTypeOf<ScheduleListing['nextRunAt']>().toEqualTypeOf<Date | null>();
    expectTypeOf<ScheduleListing['lastRun']>().toEqualTypeOf<{
      jobId: string;
      at: Date;
      state: JobState | null;
    } | null>();
    expectTypeOf(sdk.admin.removeSchedule).toEqualTypeOf<(key: string) => Promise<boolean>>();
    expectTypeOf(sdk.admin.removeSchema).toEqualTypeOf<(name: string, version: number) => Promise<boolean>>();
    void sdk.admin.upsertSchedule({ key: 'k', cron: '0 3 * * *', name: 'generateReport', payload: {} });
    // @ts-expect-error a schedule needs its key
    void sdk.admin.upsertSchedule({ cron: '0 3 * * *', name: 'generateReport' });
    // @ts-expect-error options are the crontab's, not arbitrary
    void sdk.admin.upsertSchedule({ key: 'k', cron: '* * * * *', name: 'x', options: { runAt: new Date() } });
  });
});

describe('admin types: one shape on both sides of the wire', () => {
  type Outputs = inferRouterOutputs<AppRouter>['admin'];

  it('types each admin result as the server’s router answers it', () => {
    expectTypeOf<Awaited<ReturnType<typeof sdk.admin.workers>>>().toEqualTypeOf<Outputs['workers']>();
    expectTypeOf<Awaited<ReturnType<typeof sdk.admin.schedules>>>().toEqualTypeOf<Outputs['schedules']>();
    expectTypeOf<Awaited<ReturnType<typeof sdk.admin.queues>>>().toEqualTypeOf<Outputs['queues']>();
    expectTypeOf<Awaited<ReturnType<typeof sdk.admin.setLimits>>>().toEqualTypeOf<Outputs['setLimits']>();
    expectTypeOf<Awaited<ReturnType<typeof sdk.admin.upsertSchedule>>>().toEqualTypeOf<Outputs['upsertSchedule']>();
    expectTypeOf<Awaited<ReturnType<typeof sdk.admin.stats>>>().toEqualTypeOf<Outputs['stats']>();
    expectTypeOf<Awaited<ReturnType<typeof sdk.admin.list>>>().toEqualTypeOf<Outputs['list']>();
    expectTypeOf<Awaited<ReturnType<typeof sdk.admin.retryDead>>>().toEqualTypeOf<Outputs['retryDead']>();
    expectTypeOf<Awaited<ReturnType<typeof sdk.admin.replay>>>().toEqualTypeOf<Outputs['replay']>();
    expectTypeOf<Awaited<ReturnType<typeof sdk.admin.promote>>>().toEqualTypeOf<Outputs['promote']>();
    expectTypeOf<Awaited<ReturnType<typeof sdk.admin.retry>>>().toEqualTypeOf<boolean>();
    expectTypeOf<Awaited<ReturnType<typeof sdk.admin.restore>>>().toEqualTypeOf<boolean>();
    expectTypeOf<Awaited<ReturnType<typeof sdk.admin.removeByKey>>>().toEqualTypeOf<boolean>();
    expectTypeOf(sdk.admin.removeByKey).parameters.toEqualTypeOf<[name: string, key: string]>();
    expectTypeOf<Awaited<ReturnType<typeof sdk.admin.removeSchema>>>().toEqualTypeOf<Outputs['removeSchema']>();
    expectTypeOf<Awaited<ReturnType<typeof sdk.admin.job>>>().toEqualTypeOf<Outputs['job']>();
    expectTypeOf<Awaited<ReturnType<typeof sdk.admin.schemas>>>().toEqualTypeOf<
      inferRouterOutputs<AppRouter>['schemas']['list']
    >();
  });

  it('takes each admin input as the router declares it, a schedule’s options narrowed to a crontab entry’s', () => {
    type Inputs = inferRouterInputs<AppRouter>['admin'];
    expectTypeOf<LimitsChange>().toEqualTypeOf<Inputs['setLimits']['limits']>();
    expectTypeOf(sdk.admin.list).parameter(0).toEqualTypeOf<Inputs['list'] | undefined>();
    expectTypeOf<Omit<ScheduleInput, 'options'>>().toEqualTypeOf<Omit<Inputs['upsertSchedule'], 'options'>>();
    expectTypeOf<ScheduleInput['options']>().toExtend<Inputs['upsertSchedule']['options']>();
  });

  it('gives any other caller (the dashboard) the router’s whole API through the SDK’s transport', () => {
    const api = createQueueApi({ url: 'http://127.0.0.1:1', token: () => 'short-lived' });
    expectTypeOf(api).toEqualTypeOf<QueueApi>();
    expectTypeOf(api.admin.checkPayload.mutate).returns.resolves.toEqualTypeOf<
      inferRouterOutputs<AppRouter>['admin']['checkPayload']
    >();
    // @ts-expect-error no such procedure on the server
    void api.admin.dropEverything.mutate();
  });

  it('types the calls an operator makes without a catalog: cancel by id, and events of any job type', () => {
    expectTypeOf(sdk.admin.cancel).toEqualTypeOf<(id: string) => Promise<boolean>>();
    expectTypeOf(sdk.admin.job).parameter(0).toEqualTypeOf<string>();
    expectTypeOf<Awaited<ReturnType<typeof sdk.admin.job>>['workerId']>().toEqualTypeOf<string | null>();
    expectTypeOf(sdk.admin.events('anyJobType')).toEqualTypeOf<AsyncIterable<JobEvent | ResyncEvent>>();
    // @ts-expect-error the signal is an AbortSignal
    void sdk.admin.events(undefined, { signal: true });
  });
});
