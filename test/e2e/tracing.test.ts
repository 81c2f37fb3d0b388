import * as otel from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { openStore, type Store } from '@workq/core/engine';
import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient, PermanentError, type Worker } from '@workq/sdk';
import { waitFor } from '@workq/test-support';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { collectingLogger } from '../support/quiet-logger.ts';

const SPAN_KIND = { PRODUCER: 3, CONSUMER: 4 } as const;
const STATUS_ERROR = 2;
const image = (n: number) => ({ source: `${n}.png`, output: `${n}.webp`, quality: 50 });

describe('OpenTelemetry: the producer’s trace continues in the handler', () => {
  let store: Store;
  let server: QueueServer;
  const workers: Worker[] = [];
  const exporter = new InMemorySpanExporter();

  beforeAll(async () => {
    store = await openStore('pglite://memory');
    server = await startServer({ store, port: 0, logger: collectingLogger(), pollIntervalMs: 200 });
  });

  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.close()));
    exporter.reset();
  });

  afterAll(async () => {
    await server?.close();
    otel.trace.disable();
    otel.propagation.disable();
    otel.context.disable();
  });

  it('with @opentelemetry/api installed but no OpenTelemetry SDK registered, jobs run and nothing is stored', async () => {
    const sdk = createClient({ url: server.url, jobs });
    workers.push(sdk.consume('imageConvert', async (job) => ({ bytes: job.payload.quality })));
    const [one, two] = await Promise.all([sdk.enqueue.imageConvert(image(1)), sdk.enqueue.imageConvert(image(2))]);
    const [batch] = await sdk.enqueueMany.imageConvert([image(3)]);
    for (const handle of [one!, two!, batch!]) {
      await expect(handle.result({ timeoutMs: 20_000 })).resolves.toEqual({ bytes: 50 });
      expect((await store.getJob(handle.id))?.traceContext).toBeNull();
    }
  });

  describe('with a tracer provider and the W3C propagator registered', () => {
    const tracer = () => otel.trace.getTracer('app');
    const finished = () => exporter.getFinishedSpans();
    const named = (name: string) => finished().filter((span) => span.name === name);
    const traceparentOf = (span: ReadableSpan) =>
      `00-${span.spanContext().traceId}-${span.spanContext().spanId}-0${span.spanContext().traceFlags}`;

    beforeAll(() => {
      otel.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
      otel.propagation.setGlobalPropagator(new W3CTraceContextPropagator());
      otel.trace.setGlobalTracerProvider(
        new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
      );
    });

    it('link mode (the default): the process span starts its own trace, linked to the create span', async () => {
      const sdk = createClient({ url: server.url, jobs });
      workers.push(
        sdk.consume('imageConvert', async (job) => {
          // The handler runs inside its process span: its own spans are children of it.
          tracer().startActiveSpan('resize', (span) => span.end());
          return { bytes: job.payload.quality };
        }),
      );
      const handle = await tracer().startActiveSpan('http request', async (request) => {
        try {
          return await sdk.enqueue.imageConvert(image(4));
        } finally {
          request.end();
        }
      });
      await handle.result({ timeoutMs: 20_000 });

      const [request] = named('http request');
      const [create] = named('create imageConvert');
      const [process] = named('process imageConvert');
      const [resize] = named('resize');
      expect(create).toMatchObject({
        kind: SPAN_KIND.PRODUCER,
        attributes: {
          'messaging.system': 'workq',
          'messaging.operation.type': 'create',
          'messaging.operation.name': 'create',
          'messaging.destination.name': 'imageConvert',
          'messaging.message.id': handle.id,
        },
      });
      // The enqueue is a child of the span it was made in, and the job keeps the create span's context.
      expect(create!.parentSpanContext?.spanId).toBe(request!.spanContext().spanId);
      expect((await store.getJob(handle.id))?.traceContext).toEqual({ traceparent: traceparentOf(create!) });

      expect(process).toMatchObject({
        kind: SPAN_KIND.CONSUMER,
        attributes: {
          'messaging.system': 'workq',
          'messaging.operation.type': 'process',
          'messaging.operation.name': 'process',
          'messaging.destination.name': 'imageConvert',
          'messaging.message.id': handle.id,
          'workq.job.attempt': 1,
        },
      });
      expect(process!.spanContext().traceId).not.toBe(create!.spanContext().traceId);
      expect(process!.parentSpanContext).toBeUndefined();
      expect(process!.links.map((link) => link.context)).toEqual([
        expect.objectContaining({ traceId: create!.spanContext().traceId, spanId: create!.spanContext().spanId }),
      ]);
      expect(resize!.parentSpanContext?.spanId).toBe(process!.spanContext().spanId);
    });

    it('child mode: each attempt’s process span is a child of the create span; a throw is recorded as ERROR', async () => {
      const sdk = createClient({ url: server.url, jobs, tracing: { processSpan: 'child' } });
      workers.push(
        sdk.consume('imageConvert', async (job) => {
          if (job.attempt === 1) throw new Error('the converter crashed');
          return { bytes: job.attempt };
        }),
      );
      const handle = await sdk.enqueue.imageConvert(image(5), { backoff: { type: 'fixed', delayMs: 0 } });
      await expect(handle.result({ timeoutMs: 20_000 })).resolves.toEqual({ bytes: 2 });

      const [create] = named('create imageConvert');
      const attempts = named('process imageConvert').sort(
        (a, b) => Number(a.attributes['workq.job.attempt']) - Number(b.attributes['workq.job.attempt']),
      );
      expect(attempts.map((span) => span.attributes['workq.job.attempt'])).toEqual([1, 2]);
      for (const span of attempts) {
        expect(span.spanContext().traceId).toBe(create!.spanContext().traceId);
        expect(span.parentSpanContext?.spanId).toBe(create!.spanContext().spanId);
        expect(span.links).toEqual([]);
      }
      expect(attempts[0]!.status).toMatchObject({ code: STATUS_ERROR, message: 'the converter crashed' });
      expect(attempts[0]!.events.map((event) => event.name)).toEqual(['exception']);
      expect(attempts[1]!.status.code).not.toBe(STATUS_ERROR);
    });

    it('a batch is one create span whose context every job keeps; jobs merged by the SDK keep their own', async () => {
      const sdk = createClient({ url: server.url, jobs });
      const batch = await sdk.enqueueMany.imageConvert([image(6), image(7)]);
      const [batchSpan] = named('create imageConvert');
      expect(batchSpan!.attributes).toMatchObject({ 'messaging.batch.message_count': 2 });
      for (const handle of batch) {
        expect((await store.getJob(handle.id))?.traceContext).toEqual({ traceparent: traceparentOf(batchSpan!) });
      }
      exporter.reset();

      // Enqueues in one turn go out as one request; each job still carries its own create span's context.
      const merged = await Promise.all([8, 9, 10].map((n) => sdk.enqueue.imageConvert(image(n))));
      const creates = named('create imageConvert');
      expect(creates).toHaveLength(3);
      for (const handle of merged) {
        const span = creates.find((s) => s.attributes['messaging.message.id'] === handle.id);
        expect((await store.getJob(handle.id))?.traceContext).toEqual({ traceparent: traceparentOf(span!) });
      }
      workers.push(sdk.consume('imageConvert', async () => ({ bytes: 0 }), { concurrency: 5 }));
      for (const handle of [...batch, ...merged]) await handle.result({ timeoutMs: 20_000 });
    });

    it('a job made by moveTo carries the context of the process span that moved it', async () => {
      const sdk = createClient({ url: server.url, jobs });
      workers.push(
        sdk.consume('generateReport', async (_job, ctx) => {
          await ctx.moveTo('sendEmail', { to: 'ops@example.com', subject: 'report', body: 'ready' });
          return { url: 'unused', rows: 0 };
        }),
        sdk.consume('sendEmail', async () => {
          throw new PermanentError('no mail here');
        }),
      );
      const handle = await sdk.enqueue.generateReport({
        accountId: 'a1',
        kind: 'usage',
        from: '2026-01-01',
        to: '2026-01-31',
      });
      const movedTo = await waitFor(async () => (await handle.status()).movedTo, 20_000, 50);
      await expect(sdk.job('sendEmail', movedTo).result({ timeoutMs: 20_000 })).rejects.toThrow('no mail here');

      const [report] = named('process generateReport');
      const [email] = named('process sendEmail');
      expect((await store.getJob(movedTo))?.traceContext).toEqual({ traceparent: traceparentOf(report!) });
      expect(email!.links.map((link) => link.context.spanId)).toEqual([report!.spanContext().spanId]);
      expect(email!.status.code).toBe(STATUS_ERROR);
    });

    it('an API module and a tracer provider passed in are used instead of the imported API and global provider', async () => {
      const own = new InMemorySpanExporter();
      const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(own)] });
      const sdk = createClient({ url: server.url, jobs, tracing: { api: otel, tracerProvider: provider } });
      workers.push(sdk.consume('imageConvert', async () => ({ bytes: 1 })));
      const handle = await sdk.enqueue.imageConvert(image(12));
      await handle.result({ timeoutMs: 20_000 });
      const names = own.getFinishedSpans().map((span) => span.name);
      expect(names.sort()).toEqual(['create imageConvert', 'process imageConvert']);
      expect(finished()).toEqual([]);
    });

    it('a plain-HTTP enqueue keeps the request’s traceparent and tracestate headers; options.traceContext wins', async () => {
      const producer = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
      const post = (options?: object) =>
        fetch(`${server.url}/v1/jobs/imageConvert`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', traceparent: producer, tracestate: 'app=1' },
          body: JSON.stringify({ version: 2, payload: image(13), ...(options ? { options } : {}) }),
        }).then((res) => res.json() as Promise<{ id: string }>);
      const fromHeaders = await post();
      expect((await store.getJob(fromHeaders.id))?.traceContext).toEqual({
        traceparent: producer,
        tracestate: 'app=1',
      });
      const own = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01' };
      const fromOptions = await post({ traceContext: own });
      expect((await store.getJob(fromOptions.id))?.traceContext).toEqual(own);

      const sdk = createClient({ url: server.url, jobs });
      workers.push(sdk.consume('imageConvert', async () => ({ bytes: 1 })));
      await sdk.job('imageConvert', fromHeaders.id).result({ timeoutMs: 20_000 });
      await sdk.job('imageConvert', fromOptions.id).result({ timeoutMs: 20_000 });
      const linked = named('process imageConvert').map((span) => span.links[0]?.context.spanId);
      expect(linked.sort()).toEqual(['00f067aa0ba902b7', 'b7ad6b7169203331']);
    });

    it('tracing: false records nothing and stores no context', async () => {
      const sdk = createClient({ url: server.url, jobs, tracing: false });
      workers.push(sdk.consume('imageConvert', async () => ({ bytes: 1 })));
      const handle = await sdk.enqueue.imageConvert(image(11));
      await handle.result({ timeoutMs: 20_000 });
      expect(finished()).toEqual([]);
      expect((await store.getJob(handle.id))?.traceContext).toBeNull();
    });
  });
});
