import type { TraceContext } from '@workq/core';

/*
 * The few parts of `@opentelemetry/api` the SDK uses, written out so that its types need no OpenTelemetry
 * package installed: the module itself (`import * as api from '@opentelemetry/api'`) fits them.
 */

/** An OpenTelemetry context (opaque here). */
export type OtelContext = object;

/** A span's identity, as links carry it. */
export interface OtelSpanContext {
  traceId: string;
  spanId: string;
  traceFlags: number;
}

/** An attribute value the SDK sets. */
type AttributeValue = string | number | boolean;

/** The span methods the SDK calls. */
export interface OtelSpan {
  setAttribute(key: string, value: AttributeValue): unknown;
  recordException(exception: Error | string): void;
  setStatus(status: { code: number; message?: string }): unknown;
  end(): void;
}

/** The options of a span the SDK starts. */
interface SpanOptions {
  kind?: number;
  attributes?: Record<string, AttributeValue>;
  links?: { context: OtelSpanContext }[];
  root?: boolean;
}

/** A tracer, as `TracerProvider.getTracer` returns it. */
export interface OtelTracer {
  startSpan(name: string, options?: SpanOptions, context?: OtelContext): OtelSpan;
}

/** Where tracers come from: OpenTelemetry's global provider, or one passed in. */
export interface OtelTracerProvider {
  getTracer(name: string, version?: string): OtelTracer;
}

/** The `@opentelemetry/api` module, as far as the SDK uses it. */
export interface OpenTelemetryApi {
  trace: {
    getTracerProvider(): OtelTracerProvider;
    setSpan(context: OtelContext, span: OtelSpan): OtelContext;
    getSpanContext(context: OtelContext): OtelSpanContext | undefined;
  };
  context: {
    active(): OtelContext;
    with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
      context: OtelContext,
      fn: F,
      thisArg?: ThisParameterType<F>,
      ...args: A
    ): ReturnType<F>;
  };
  propagation: {
    inject(context: OtelContext, carrier: Record<string, string>): void;
    extract(context: OtelContext, carrier: Record<string, string>): OtelContext;
  };
}

/** How the SDK traces enqueues and handlers (docs/observability.md). */
export interface TracingOptions {
  /**
   * The `@opentelemetry/api` module (`import * as api from '@opentelemetry/api'`), for code whose bundler
   * should include it.
   * @defaultValue imported on first use where it is installed (Node); where it cannot be imported (not
   * installed, or a browser bundle, which leaves that import alone) nothing is traced
   */
  api?: OpenTelemetryApi | undefined;
  /** @defaultValue OpenTelemetry's global tracer provider (a no-op until an OpenTelemetry SDK registers one) */
  tracerProvider?: OtelTracerProvider | undefined;
  /**
   * How a handler's `process` span relates to the `create` span of the enqueue: `'link'` starts a trace of
   * its own with a link to it (the messaging conventions' default: a job may run long after, and more than
   * once), `'child'` continues the producer's trace.
   * @defaultValue 'link'
   */
  processSpan?: 'link' | 'child' | undefined;
}

/** `SpanKind.PRODUCER`, `SpanKind.CONSUMER` and `SpanStatusCode.ERROR` of `@opentelemetry/api`. */
const SPAN_KIND_PRODUCER = 3;
const SPAN_KIND_CONSUMER = 4;
const STATUS_ERROR = 2;

const TRACER_NAME = '@workq/sdk';
/** Kept in a variable, so bundlers leave the import alone instead of failing where it is not installed. */
const OTEL_API_MODULE = '@opentelemetry/api';
/** Where `@opentelemetry/api` 1.x keeps what is registered with it (provider, propagator, context manager, logger). */
const OTEL_GLOBAL_KEY = Symbol.for('opentelemetry.js.api.1');

/** A job as its `process` span describes it. */
export interface TracedJob {
  id: string;
  name: string;
  attempt: number;
  traceContext?: TraceContext | undefined;
}

/** Spans around enqueues and handlers, over one OpenTelemetry API and tracer. */
export class Tracing {
  readonly #api: OpenTelemetryApi;
  readonly #tracer: OtelTracer;
  readonly #processSpan: 'link' | 'child';

  constructor(api: OpenTelemetryApi, options: TracingOptions) {
    this.#api = api;
    this.#tracer = (options.tracerProvider ?? api.trace.getTracerProvider()).getTracer(TRACER_NAME);
    this.#processSpan = options.processSpan ?? 'link';
  }

  /**
   * Runs `send` inside a `create <name>` span (kind PRODUCER, a child of the active context), handing it
   * the span's context as a carrier to store with the jobs; `idOf` names the job sent, for a single one.
   */
  async create<R>(
    name: string,
    count: number,
    send: (traceContext: TraceContext | undefined) => Promise<R>,
    idOf: (result: R) => string | undefined,
  ): Promise<R> {
    const { context, trace, propagation } = this.#api;
    const attributes: Record<string, AttributeValue> = {
      ...messagingAttributes('create', name),
      ...(count === 1 ? {} : { 'messaging.batch.message_count': count }),
    };
    const span = this.#tracer.startSpan(`create ${name}`, { kind: SPAN_KIND_PRODUCER, attributes });
    const carrier: Record<string, string> = {};
    propagation.inject(trace.setSpan(context.active(), span), carrier);
    try {
      const result = await send(Object.keys(carrier).length > 0 ? carrier : undefined);
      const id = idOf(result);
      if (id !== undefined) span.setAttribute('messaging.message.id', id);
      return result;
    } catch (error) {
      failed(span, error);
      throw error;
    } finally {
      span.end();
    }
  }

  /**
   * Runs `handle` inside a `process <name>` span (kind CONSUMER), active while it runs, so the handler's own
   * spans are its children. Linked to the producer's span, or its child (`processSpan`); a job enqueued
   * untraced starts a trace of its own. A throw is recorded on the span, with status ERROR.
   */
  async process<R>(job: TracedJob, handle: () => Promise<R>): Promise<R> {
    const { context, trace, propagation } = this.#api;
    const producer = job.traceContext ? propagation.extract(context.active(), { ...job.traceContext }) : undefined;
    const producerSpan = producer ? trace.getSpanContext(producer) : undefined;
    const child = this.#processSpan === 'child' && producerSpan !== undefined;
    const options: SpanOptions = { kind: SPAN_KIND_CONSUMER, attributes: processAttributes(job) };
    if (!child) options.root = true;
    if (producerSpan && !child) options.links = [{ context: producerSpan }];
    const span = this.#tracer.startSpan(`process ${job.name}`, options, child ? producer : context.active());
    try {
      return await context.with(trace.setSpan(child && producer ? producer : context.active(), span), handle);
    } catch (error) {
      failed(span, error);
      throw error;
    } finally {
      span.end();
    }
  }

  /** The active context as a carrier (within a handler: its `process` span), or `undefined` when empty. */
  activeContext(): TraceContext | undefined {
    const carrier: Record<string, string> = {};
    this.#api.propagation.inject(this.#api.context.active(), carrier);
    return Object.keys(carrier).length > 0 ? carrier : undefined;
  }
}

/**
 * The client's tracing, resolved once: `null` when off or `@opentelemetry/api` cannot be loaded. `get()` is
 * synchronous once resolved, so a traced or untraced enqueue waits on nothing after the first. Until something
 * registers with OpenTelemetry in this process (an OpenTelemetry SDK's provider, propagator or context manager)
 * the API traces and propagates nothing, so unless a `tracerProvider` is passed it is not loaded: `get()` is
 * `null` at once, and looks again next time. So a client in a process without OpenTelemetry pays neither the
 * API's import on its first enqueue nor a span per job.
 */
export class TracingLoader {
  #resolved: Tracing | null | undefined;
  #loading: Promise<Tracing | null> | undefined;

  /** A provider passed in: tracing loads the API for it without waiting for a registration. */
  readonly #provided: boolean;

  constructor(private readonly options: false | TracingOptions | undefined) {
    this.#provided = options !== false && options?.tracerProvider !== undefined;
    if (options === false) this.#resolved = null;
    else if (options?.api) this.#resolved = new Tracing(options.api, options);
  }

  get(): Tracing | null | Promise<Tracing | null> {
    if (this.#resolved !== undefined) return this.#resolved;
    if (this.#loading === undefined && !this.#provided && !openTelemetryRegistered()) {
      return null;
    }
    this.#loading ??= importOpenTelemetry().then((api) => {
      this.#resolved = api ? new Tracing(api, this.options || {}) : null;
      return this.#resolved;
    });
    return this.#loading;
  }

  /** The tracing once `get()` has resolved it; `null` before, or without tracing. */
  get resolved(): Tracing | null {
    return this.#resolved ?? null;
  }
}

/** Whether anything registered with `@opentelemetry/api` in this process: its global, under its own key. */
function openTelemetryRegistered(): boolean {
  return (globalThis as Record<symbol, unknown>)[OTEL_GLOBAL_KEY] !== undefined;
}

/** `@opentelemetry/api` where it can be imported, else `null`. */
async function importOpenTelemetry(): Promise<OpenTelemetryApi | null> {
  try {
    const module = await import(/* webpackIgnore: true */ /* @vite-ignore */ OTEL_API_MODULE);
    const api = (module.trace ? module : module.default) as OpenTelemetryApi | undefined;
    return api?.trace && api.context && api.propagation ? api : null;
  } catch {
    return null;
  }
}

function messagingAttributes(operation: 'create' | 'process', name: string): Record<string, AttributeValue> {
  return {
    'messaging.system': 'workq',
    'messaging.operation.type': operation,
    'messaging.operation.name': operation,
    'messaging.destination.name': name,
  };
}

/**
 * A `process` span's attributes, written out in one literal rather than spread from `messagingAttributes`:
 * every job's handler runs in such a span, with or without a tracer provider behind it, and spreading
 * objects with these keys is the slow path of object spread, many times the cost of a literal.
 */
function processAttributes(job: TracedJob): Record<string, AttributeValue> {
  return {
    'messaging.system': 'workq',
    'messaging.operation.type': 'process',
    'messaging.operation.name': 'process',
    'messaging.destination.name': job.name,
    'messaging.message.id': job.id,
    'workq.job.attempt': job.attempt,
  };
}

function failed(span: OtelSpan, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: STATUS_ERROR, message: error instanceof Error ? error.message : String(error) });
}
