import { catalogJsonSchemas, defineCatalog, defineJob } from '@workq/core';
import { type QueueServer, startServer } from '@workq/queue-server';
import { createClient } from '@workq/sdk';
import { until } from '@workq/test-support';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { collectingLogger } from '../support/quiet-logger.ts';
import { failure, rawClient, rawFailure } from '../support/raw-client.ts';
import {
  describeEachStore,
  type FreshStore,
  IN_PROCESS_STORES,
  SHARED_STORES,
  serverStore,
} from '../support/stores.ts';

/** The catalog the real deploy ships: `resize` v3. */
const released = defineCatalog({
  resize: defineJob({ version: 3, payload: z.object({ source: z.string(), width: z.number().int().min(1) }) }),
});
/** What got to v3 first: a different payload under the same version. */
const squatted = defineCatalog({ resize: defineJob({ version: 3, payload: z.object({ url: z.string() }) }) });
/** Another type, registered by an admin, that a token scoped to `resize` never sees listed. */
const other = defineCatalog({ sendDigest: defineJob({ version: 1, payload: z.object({ to: z.string() }) }) });

const TOKENS = {
  admin: 'registration-admin-0001',
  /** The service that deploys the catalog: it may register new versions of `resize`, and use them. */
  deploy: 'registration-deploy-0001',
  /** A visitor's browser: produce only. */
  browser: 'registration-browser-001',
  /** Someone holding `register:resize` who registered the wrong v3 (a leaked or misused token). */
  squatter: 'registration-squatter-01',
};
const tokens = [
  { token: TOKENS.admin, scopes: ['admin'] },
  { token: TOKENS.deploy, scopes: ['register:resize', 'produce:resize', 'consume:resize'] },
  { token: TOKENS.browser, scopes: ['produce:resize'] },
  { token: TOKENS.squatter, scopes: ['register:resize'] },
];

const squatterSchemas = { schemas: catalogJsonSchemas(squatted) };
const realPayload = { source: 'a.png', width: 640 };

await describeEachStore(IN_PROCESS_STORES, 'registering new schema versions over $label', ({ open }) => {
  let target: FreshStore | undefined;
  let server: QueueServer;

  beforeAll(async () => {
    target = await open();
    server = await startServer({ store: await serverStore(target), port: 0, tokens, logger: collectingLogger() });
  });
  afterAll(async () => {
    await server?.close();
    await target?.drop();
  });

  it('a produce-only token cannot take v3; an admin removes a squatted v3 and the real deploy registers it', async () => {
    const browser = createClient({ url: server.url, jobs: released, token: TOKENS.browser });
    const notKnown = await failure(browser.ready());
    expect(notKnown.code).toBe('FORBIDDEN');
    expect(notKnown.message).toContain("does not know this client's catalog yet");
    expect(notKnown.message).toContain('"register:resize"');
    expect(notKnown.message).toContain('startServer({ jobs })');
    expect(notKnown.details).toEqual({ unregistered: [{ name: 'resize', version: 3 }] });
    expect((await failure(browser.enqueue.resize(realPayload))).code).toBe('FORBIDDEN');
    const raw = rawFailure(rawClient(server.url, TOKENS.browser).schemas.register.mutate(squatterSchemas));
    expect(await raw).toMatchObject({ code: 'FORBIDDEN' });
    const admin = createClient({ url: server.url, jobs: other, token: TOKENS.admin });
    expect(await admin.admin.removeSchema('resize', 3)).toBe(false);

    // A token with register:resize writes the wrong v3 first; the real deploy then conflicts.
    await rawClient(server.url, TOKENS.squatter).schemas.register.mutate(squatterSchemas);
    const deploy = createClient({ url: server.url, jobs: released, token: TOKENS.deploy });
    expect((await failure(deploy.ready())).code).toBe('CONFLICT');
    // The browser's token presents the real v3, which is not the one registered.
    expect((await failure(createClient({ url: server.url, jobs: released, token: TOKENS.browser }).ready())).code).toBe(
      'CONFLICT',
    );

    expect(await admin.admin.removeSchema('resize', 3)).toBe(true);
    expect(await admin.admin.removeSchema('resize', 3)).toBe(false);
    // Payloads of the removed version are refused until it is registered again.
    const squatterPayload = rawClient(server.url, TOKENS.deploy).jobs.enqueue.mutate({
      name: 'resize',
      version: 3,
      payload: { url: 'x' },
    });
    expect(await rawFailure(squatterPayload)).toMatchObject({ code: 'UNKNOWN_JOB' });

    await deploy.ready();
    await browser.ready();
    const handle = await browser.enqueue.resize(realPayload);
    expect((await handle.status()).version).toBe(3);
    const checked = rawClient(server.url, TOKENS.browser).jobs.enqueue.mutate({
      name: 'resize',
      version: 3,
      payload: { url: 'x' },
    });
    expect(await rawFailure(checked)).toMatchObject({ code: 'VALIDATION' });
  });

  it('schemas.list shows a token only the types it may produce, consume or register', async () => {
    const admin = createClient({ url: server.url, jobs: other, token: TOKENS.admin });
    await admin.ready();
    const names = async (token: string) =>
      [...new Set((await rawClient(server.url, token).schemas.list.query()).map((entry) => entry.name))].sort();
    expect(await names(TOKENS.admin)).toEqual(['resize', 'sendDigest']);
    expect(await names(TOKENS.browser)).toEqual(['resize']);
    expect(await names(TOKENS.squatter)).toEqual(['resize']);
    expect(await rawClient(server.url, TOKENS.browser).schemas.list.query({ name: 'sendDigest' })).toEqual([]);
  });

  it('removing a schema takes the admin scope', async () => {
    const remove = rawClient(server.url, TOKENS.deploy).admin.removeSchema.mutate({ name: 'resize', version: 3 });
    expect(await rawFailure(remove)).toMatchObject({ code: 'FORBIDDEN' });
    const listed = await rawClient(server.url, TOKENS.admin).schemas.list.query({ name: 'resize' });
    expect(listed.map((entry) => entry.version)).toEqual([3]);
  });
});

await describeEachStore(
  SHARED_STORES,
  'a schema removed through one server, seen by another over $label',
  ({ open }) => {
    let target: FreshStore | undefined;
    const servers: QueueServer[] = [];

    beforeAll(async () => {
      target = await open();
      for (let i = 0; i < 2; i++) {
        const store = await serverStore(target);
        servers.push(await startServer({ store, port: 0, tokens, logger: collectingLogger(), pollIntervalMs: 200 }));
      }
    });
    afterAll(async () => {
      await Promise.all(servers.map((server) => server.close()));
      await target?.drop();
    });

    it('the other server forgets the removed version and checks payloads against the one registered again', async () => {
      const [first, second] = servers as [QueueServer, QueueServer];
      await rawClient(first.url, TOKENS.squatter).schemas.register.mutate(squatterSchemas);
      const enqueueOnSecond = (payload: unknown) =>
        rawClient(second.url, TOKENS.admin).jobs.enqueue.mutate({ name: 'resize', version: 3, payload });
      // The second server validates against the squatter's v3, and keeps it.
      await enqueueOnSecond({ url: 'x' });

      expect(
        await createClient({ url: first.url, jobs: other, token: TOKENS.admin }).admin.removeSchema('resize', 3),
      ).toBe(true);
      const refusal = () =>
        enqueueOnSecond({ url: 'x' }).then(
          () => 'accepted',
          async (e) => (await rawFailure(Promise.reject(e))).code,
        );
      await until(async () => (await refusal()) === 'UNKNOWN_JOB', 10_000, 50);

      await createClient({ url: first.url, jobs: released, token: TOKENS.deploy }).ready();
      expect(await rawFailure(enqueueOnSecond({ url: 'x' }))).toMatchObject({ code: 'VALIDATION' });
      await enqueueOnSecond(realPayload);
    });
  },
);
