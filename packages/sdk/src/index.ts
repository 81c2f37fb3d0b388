/** `@workq/sdk`: the typed producer and consumer. */

import { defaultFetch as platformFetch } from '#default-fetch';

export type {
  ChildFailurePolicy,
  ChildSummary,
  DebounceMode,
  DebounceOptions,
  EnqueueOptions,
  IdempotencyUntil,
  JobState,
  JobStatus,
  TraceContext,
  WorkqErrorCode,
} from '@workq/core';
export { isWorkqError, WorkqError } from '@workq/core';
/**
 * On Node, the keep-alive `node:http` client the SDK uses when no `fetch` is given, for wrapping (timing,
 * tracing). `undefined` elsewhere, where the SDK uses the platform's `fetch`.
 */
export const defaultFetch: typeof fetch | undefined = platformFetch;
export type {
  AdminApi,
  InspectedJob,
  LimitsChange,
  QueueLimits,
  QueueListing,
  RegisteredSchema,
  ScheduleInput,
  ScheduleListing,
  WorkerListing,
} from './admin.ts';
export type { ClientOptions, WorkqClient } from './client.ts';
export { createClient } from './client.ts';
export type {
  ConsumedJob,
  ConsumeOptions,
  Delayed,
  EndedAttempt,
  Handler,
  JobContext,
  MoveToOptions,
  RateLimited,
  WaitingForChildren,
  Worker,
} from './consumer/types.ts';
export { PermanentError } from './errors.ts';
export type { EventsFn, EventsOptions, JobEvent, ResyncEvent } from './events.ts';
export type { ChildFns, ChildJob, ChildOptions, FlowChild, ParentOptions } from './flows.ts';
export type { Logger } from './logger.ts';
export type { EnqueueManyOptions, JobHandle } from './producer.ts';
export type { OpenTelemetryApi, OtelTracerProvider, TracingOptions } from './tracing.ts';
export type { QueueApi, QueueApiOptions, TokenSource } from './transport.ts';
export { createQueueApi } from './transport.ts';
