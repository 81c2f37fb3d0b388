import { type Span, type TracerProvider, trace } from '@opentelemetry/api';
import { afterEach, describe, expect, it } from 'vitest';
import { type OtelTracerProvider, TracingLoader } from './tracing.ts';

/** A tracer provider that names the spans it is asked to start. */
function namingProvider(started: string[]): OtelTracerProvider {
  const span = {
    setAttribute: () => span,
    setStatus: () => span,
    recordException: () => undefined,
    end: () => undefined,
    spanContext: () => ({ traceId: '0'.repeat(32), spanId: '0'.repeat(16), traceFlags: 0 }),
  } as unknown as Span;
  return {
    getTracer: () => ({
      startSpan: (name: string) => {
        started.push(name);
        return span;
      },
    }),
  };
}

describe('TracingLoader', () => {
  afterEach(() => trace.disable());

  it('loads nothing until something registers with OpenTelemetry, then traces through what registered', async () => {
    expect((globalThis as Record<symbol, unknown>)[Symbol.for('opentelemetry.js.api.1')]).toBeUndefined();
    const loader = new TracingLoader(undefined);
    // Not a promise: no import is waited for while nothing could be traced.
    expect(loader.get()).toBeNull();
    expect(loader.resolved).toBeNull();

    const started: string[] = [];
    trace.setGlobalTracerProvider(namingProvider(started) as unknown as TracerProvider);
    const tracing = await loader.get();
    expect(tracing).not.toBeNull();
    expect(loader.resolved).toBe(tracing);
    await tracing?.create(
      'imageConvert',
      1,
      async () => 'sent',
      () => undefined,
    );
    expect(started).toEqual(['create imageConvert']);
  });

  it('loads the API for a tracer provider passed to it, with nothing registered', async () => {
    const started: string[] = [];
    const loader = new TracingLoader({ tracerProvider: namingProvider(started) });
    const tracing = await loader.get();
    await tracing?.process({ id: 'j1', name: 'imageConvert', attempt: 1 }, async () => undefined);
    expect(started).toEqual(['process imageConvert']);
  });

  it('is off with tracing: false, whatever is registered', () => {
    trace.setGlobalTracerProvider(namingProvider([]) as unknown as TracerProvider);
    expect(new TracingLoader(false).get()).toBeNull();
  });
});
