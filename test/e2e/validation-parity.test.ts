import { catalogJsonSchemas, defineCatalog, defineJob } from '@workq/core';
import { type QueueServer, startServer } from '@workq/queue-server';
import { createClient } from '@workq/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawClient, rawFailure } from '../support/raw-client.ts';

/** Constraints JSON Schema cannot express: coercion, a refinement, a pipe after a transform. */
const jobs = defineCatalog({
  placeOrder: defineJob({
    version: 1,
    payload: z.object({
      quantity: z.coerce.number().int(),
      code: z.string().refine((code) => code.startsWith('A'), 'must start with A'),
      label: z
        .string()
        .transform((label) => label.trim())
        .pipe(z.string().max(5)),
    }),
  }),
});

const good = { quantity: 2, code: 'A-1', label: 'box' };

/** POSTs a plain HTTP enqueue of `placeOrder`; resolves to the status and parsed body. */
async function enqueueOverHttp(server: QueueServer, payload: unknown) {
  const response = await fetch(`${server.url}/v1/jobs/placeOrder`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ version: 1, payload }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('a server without the catalog', () => {
  let server: QueueServer;

  beforeAll(async () => {
    server = await startServer({ store: 'pglite://memory', port: 0, logger: collectingLogger() });
  });
  afterAll(async () => server?.close());

  it('never refuses a payload the SDK accepts', async () => {
    const sdk = createClient({ url: server.url, jobs });
    // The SDK coerces "3" to 3, and sends what it was given: the server must not refuse it as "not an integer".
    const handle = await sdk.enqueue.placeOrder({ ...good, quantity: '3' } as never);
    expect(handle.id).toEqual(expect.any(String));
  });

  it('says, when it accepts a plain HTTP payload, which constraints it could not check', async () => {
    await rawClient(server.url).schemas.register.mutate({ schemas: catalogJsonSchemas(jobs) });
    const breaksRefinement = await enqueueOverHttp(server, { ...good, code: 'B-1' });
    expect(breaksRefinement.status).toBe(201);
    const warnings = breaksRefinement.body.warnings as string[];
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/registered JSON Schema/);
    expect(warnings[0]).toMatch(/not checked/);
    for (const field of ['quantity: coercion', 'code: refinement', 'label: the schema piped into']) {
      expect(warnings[0]).toContain(field);
    }
    expect(warnings[0]).toContain('startServer({ jobs })');
  });
});

describe('a server given the catalog', () => {
  let server: QueueServer;

  beforeAll(async () => {
    server = await startServer({ store: 'pglite://memory', port: 0, logger: collectingLogger(), jobs });
  });
  afterAll(async () => server?.close());

  it('registers the catalog at start, so plain HTTP producers need no client to have connected', async () => {
    const registered = await rawClient(server.url).schemas.list.query({ name: 'placeOrder' });
    expect(registered.map((entry) => entry.version)).toEqual([1]);
    const accepted = await enqueueOverHttp(server, good);
    expect(accepted.status).toBe(201);
    expect(accepted.body).not.toHaveProperty('warnings');
  });

  it('refuses over plain HTTP what the catalog refuses: refinements and pipes after transforms', async () => {
    const breaksRefinement = await enqueueOverHttp(server, { ...good, code: 'B-1' });
    expect(breaksRefinement.status).toBe(400);
    expect(breaksRefinement.body.error).toMatchObject({
      code: 'VALIDATION',
      message: expect.stringContaining('must start with A'),
    });
    const breaksPipe = await enqueueOverHttp(server, { ...good, label: '  too long  ' });
    expect(breaksPipe.status).toBe(400);
    expect(breaksPipe.body.error).toMatchObject({ code: 'VALIDATION', message: expect.stringContaining('label') });
  });

  it('refuses them over tRPC too, and accepts what the SDK accepts', async () => {
    const refused = await rawFailure(
      rawClient(server.url).jobs.enqueue.mutate({ name: 'placeOrder', version: 1, payload: { ...good, code: 'B' } }),
    );
    expect(refused.code).toBe('VALIDATION');
    const sdk = createClient({ url: server.url, jobs });
    const handle = await sdk.enqueue.placeOrder({ ...good, quantity: '4' } as never);
    expect(handle.id).toEqual(expect.any(String));
  });
});
