import { mintToken, type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient } from '@workq/sdk';
import { until } from '@workq/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scrapedMetric } from '../support/prometheus.ts';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawClient } from '../support/raw-client.ts';
import { openSocket } from '../support/raw-http.ts';

const ROOT = 'root-token-body-budget-0123';
/** Four producers' tokens: one token's requests may hold half the budget, here one largest body. */
const PRODUCERS = ['p0', 'p1', 'p2', 'p3'].map((name) => `produce-token-body-budget-${name}`);
const WORKER = 'work-token-body-budget-0123';
const TOKEN_SECRET = 'body-budget-token-secret-0123456789-abcdef';
const MAX_REQUEST_BYTES = 1024 * 1024;
const BUDGET = 2 * MAX_REQUEST_BYTES;

/** A `jobs.enqueueMany` body of `count` emails of about 22 KB each, told apart by `tag`. */
function enqueueManyBody(tag: string, count: number): string {
  const payloads = Array.from({ length: count }, (_, i) => ({
    to: 'a@example.com',
    subject: `${tag}-${i}`,
    body: 'x'.repeat(22_000),
  }));
  return JSON.stringify({ json: { name: 'sendEmail', version: 1, payloads } });
}

/**
 * The bytes of `body` (ASCII) sent before the rest: nine tenths. One such part of the bodies below fits a
 * token's share, two do not; two fit the budget, three do not; and the room two leave still takes one body's
 * last tenth.
 */
const firstPartOf = (body: string) => Math.floor(body.length * 0.9);

/**
 * A raw `POST /trpc/jobs.enqueueMany` whose body is sent in two parts: `sendRest()` sends the second, `abort()`
 * closes the connection instead. `answer` is what came back by the time the connection closed.
 */
function partSentEnqueue(url: string, token: string, body: string) {
  const { socket, state, closed } = openSocket(url);
  const part = firstPartOf(body);
  socket.write(
    `POST /trpc/jobs.enqueueMany HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`,
  );
  socket.write(body.slice(0, part));
  return {
    answer: closed.then(() => state.received),
    answered: () => state.received.length > 0,
    sendRest: () => socket.write(body.slice(part)),
    abort: () => socket.destroy(),
  };
}

describe('request bodies held at once (limits.maxBodyBytesInFlight)', () => {
  let server: QueueServer;
  const logger = collectingLogger();

  beforeAll(async () => {
    server = await startServer({
      store: 'pglite://memory',
      port: 0,
      jobs,
      tokens: [
        { token: ROOT, scopes: ['admin'] },
        ...PRODUCERS.map((token) => ({ token, scopes: ['produce:*'] })),
        { token: WORKER, scopes: ['consume:*'] },
      ],
      tokenSecret: TOKEN_SECRET,
      limits: { maxRequestBytes: MAX_REQUEST_BYTES, maxBodyBytesInFlight: BUDGET },
      logger,
    });
  });

  afterAll(async () => {
    await server?.close();
  });

  const scraped = (name: string) => scrapedMetric(server.url, ROOT, name);
  const bodyBytesHeld = () => scraped('workq_request_body_bytes');
  const bodiesRefused = () => scraped('workq_request_bodies_refused_total');
  /** The emails the store holds, page by page. */
  const emailsStored = async (): Promise<number> => {
    const admin = rawClient(server.url, ROOT).admin;
    let count = 0;
    let cursor: string | undefined;
    do {
      const page = await admin.jobs.query({ name: 'sendEmail', limit: 200, ...(cursor ? { cursor } : {}) });
      count += page.jobs.length;
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return count;
  };
  /** Resolves once `done()` holds; fails after 10 s, naming `what` it waited for. */
  const waitFor = (done: () => Promise<boolean> | boolean, what: string) =>
    until(done, 10_000, 20).catch(() => {
      throw new Error(`timed out waiting for ${what}`);
    });

  it('refuses the bodies past it with a retryable UNAVAILABLE, stores the others whole, and gives every byte back', async () => {
    // Eight bodies of ~880 KB each from four tokens, nine tenths of each sent before any is finished.
    const bodies = Array.from({ length: 8 }, (_, i) => enqueueManyBody(`held${i}`, 40));
    const part = firstPartOf(bodies[0] as string);
    const sent = bodies.map((body, i) => partSentEnqueue(server.url, PRODUCERS[i % 4] as string, body));
    // Settled: every request is answered (refused) or has its whole first part held.
    let heldWhileFull = 0;
    await waitFor(async () => {
      heldWhileFull = await bodyBytesHeld();
      return heldWhileFull === sent.filter((request) => !request.answered()).length * part;
    }, 'each request refused or its first part held');
    expect(heldWhileFull).toBeLessThanOrEqual(BUDGET);

    const refused = sent.filter((request) => request.answered());
    const held = sent.filter((request) => !request.answered());
    expect(refused.length).toBeGreaterThanOrEqual(6);
    expect(held.length).toBeGreaterThanOrEqual(1);
    for (const request of refused) {
      const text = await request.answer;
      expect(text).toMatch(/^HTTP\/1\.1 503 /);
      expect(text).toContain('"workqCode":"UNAVAILABLE"');
      expect(text).toContain('"retryable":true');
      expect(text).toContain('maxBodyBytesInFlight');
    }
    expect(await bodiesRefused()).toBeGreaterThanOrEqual(refused.length);
    // Load shed as meant: one warning for the first refusal (the others are counted for the window's line),
    // and not one failed request.
    const refusalLines = logger.lines.filter((line) => line.fields?.limit === 'maxBodyBytesInFlight');
    expect(refusalLines).toEqual([
      expect.objectContaining({
        level: 'warn',
        message: 'request refused at a server limit (maxBodyBytesInFlight)',
        fields: expect.objectContaining({ path: '/trpc/jobs.enqueueMany', status: 503 }),
      }),
    ]);
    expect(logger.lines.filter((line) => line.level === 'error')).toEqual([]);

    for (const request of held) {
      request.sendRest();
      expect(await request.answer).toMatch(/^HTTP\/1\.1 200 /);
    }
    expect(await emailsStored()).toBe(40 * held.length);
    await waitFor(async () => (await bodyBytesHeld()) === 0, 'every byte given back');
  });

  it("holds one caller's requests to its share, while another caller's go through", async () => {
    const [mine, again] = ['share-a', 'share-b'].map((tag) => enqueueManyBody(tag, 40)) as [string, string];
    const first = partSentEnqueue(server.url, PRODUCERS[0] as string, mine);
    await waitFor(async () => (await bodyBytesHeld()) === firstPartOf(mine), "the token's first part held");
    const second = partSentEnqueue(server.url, PRODUCERS[0] as string, again);
    const refusal = await second.answer;
    expect(refusal).toMatch(/^HTTP\/1\.1 503 /);
    expect(refusal).toContain("This caller's requests");
    expect(refusal).toContain('"retryable":true');

    // Over plain HTTP too: the same token's enqueue, padded past what its share has left, and another token's.
    const restEnqueue = (token: string) =>
      fetch(`${server.url}/v1/jobs/sendEmail`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ version: 1, payload: { to: 'a@example.com', subject: 'rest', body: '' } }).padEnd(
          300_000,
          ' ',
        ),
      });
    const sameToken = await restEnqueue(PRODUCERS[0] as string);
    expect(sameToken.status).toBe(503);
    expect(await sameToken.text()).toContain("This caller's requests");
    expect((await restEnqueue(PRODUCERS[1] as string)).status).toBe(201);

    // Another token's body, whole, while the first token's part is still held.
    const other = await fetch(`${server.url}/trpc/jobs.enqueueMany`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${PRODUCERS[1]}` },
      body: enqueueManyBody('share-other', 40),
    });
    expect(other.status).toBe(200);
    first.sendRest();
    expect(await first.answer).toMatch(/^HTTP\/1\.1 200 /);
    await waitFor(async () => (await bodyBytesHeld()) === 0, 'every byte given back');
  });

  it("counts a signed token's body toward its subject's share, whichever of its tokens sent it", async () => {
    // Each body has a token of its own (their scopes differ, so their texts do): one subject's second token
    // finds the share its first one holds.
    const mint = (subject: string, scopes = ['produce:*']) =>
      mintToken({ secret: TOKEN_SECRET, scopes, expiresInMs: 60_000, subject });
    const [mine, again, other] = ['subject-a', 'subject-b', 'subject-c'].map((tag) => enqueueManyBody(tag, 40)) as [
      string,
      string,
      string,
    ];
    const first = partSentEnqueue(server.url, await mint('user-1'), mine);
    await waitFor(async () => (await bodyBytesHeld()) === firstPartOf(mine), "the subject's first part held");
    const refusal = await partSentEnqueue(server.url, await mint('user-1', ['produce:sendEmail']), again).answer;
    expect(refusal).toMatch(/^HTTP\/1\.1 503 /);
    expect(refusal).toContain("This caller's requests");
    const otherSubject = await fetch(`${server.url}/trpc/jobs.enqueueMany`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${await mint('user-2')}` },
      body: other,
    });
    expect(otherSubject.status).toBe(200);
    first.sendRest();
    expect(await first.answer).toMatch(/^HTTP\/1\.1 200 /);
    await waitFor(async () => (await bodyBytesHeld()) === 0, 'every byte given back');
  });

  it('keeps the room others need from a token whose claims long-poll with padded bodies', async () => {
    // A claim waiting 3 s for work, its body padded to 900 KB with whitespace (still valid JSON).
    const claim = () => {
      const text = JSON.stringify({
        json: { name: 'imageConvert', maxVersion: 2, limit: 1, workerId: 'pad', waitMs: 3_000 },
      });
      return fetch(`${server.url}/trpc/consumer.claim`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${WORKER}` },
        body: text.padEnd(900_000, ' '),
      });
    };
    const waiting = claim();
    await waitFor(async () => (await bodyBytesHeld()) === 900_000, 'the first claim waiting, its body held');
    const refused = await claim();
    expect(refused.status).toBe(503);
    expect(await refused.text()).toContain("This caller's requests");

    const enqueued = await fetch(`${server.url}/trpc/jobs.enqueueMany`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${PRODUCERS[3]}` },
      body: enqueueManyBody('beside-claims', 40),
    });
    expect(enqueued.status).toBe(200);
    await waitFor(async () => (await bodyBytesHeld()) === 900_000, 'the enqueue given back, the claim still held');
    expect((await waiting).status).toBe(200);
    await waitFor(async () => (await bodyBytesHeld()) === 0, 'every byte given back');
  });

  it("gives back a claim's body once the acks it carried are stored, while it waits on for work", async () => {
    // Eight jobs held by one worker token; each half's acks carry four results of 200 KB (about 800 KB a body),
    // so two such claims waiting at once hold more than the token's share (one largest body) until their acks
    // are stored.
    const producer = rawClient(server.url, PRODUCERS[0]);
    const worker = rawClient(server.url, WORKER);
    const name = 'imageConvert';
    for (let i = 0; i < 8; i++) {
      await producer.jobs.enqueue.mutate({ name, version: 2, payload: { source: `s${i}.png`, output: `o${i}.webp` } });
    }
    const held = await worker.consumer.claim.mutate({ name, maxVersion: 2, limit: 8, workerId: 'acking' });
    expect(held.jobs).toHaveLength(8);
    const ackOf = (job: { id: string; leaseToken: string }) => ({
      id: job.id,
      leaseToken: job.leaseToken,
      result: { bytes: 200_000, blob: job.id.padEnd(200_000, 'r') },
    });
    const claimCarrying = (jobs: typeof held.jobs, waitMs: number) =>
      worker.consumer.claim.mutate({
        name,
        maxVersion: 2,
        limit: 1,
        workerId: 'acking',
        waitMs,
        complete: jobs.map(ackOf),
      });
    // Its wait outlasts the steps below however loaded the machine: they run while it still waits.
    const first = claimCarrying(held.jobs.slice(0, 4), 10_000);
    let firstAnswered = false;
    void first.then(() => {
      firstAnswered = true;
    });
    await waitFor(async () => {
      const jobsNow = await Promise.all(held.jobs.slice(0, 4).map((job) => producer.jobs.get.query({ id: job.id })));
      return jobsNow.every((job) => job.state === 'completed');
    }, "the first claim's acks stored");
    await waitFor(async () => (await bodyBytesHeld()) === 0, "the waiting claim's body given back");
    expect(firstAnswered).toBe(false);
    // The same token's next claim, as large, is let in while the first still waits.
    const second = await claimCarrying(held.jobs.slice(4), 0);
    expect(firstAnswered).toBe(false);
    expect(second.completed.sort()).toEqual(
      held.jobs
        .slice(4)
        .map((job) => job.id)
        .sort(),
    );
    const answered = await first;
    expect(answered.completed.sort()).toEqual(
      held.jobs
        .slice(0, 4)
        .map((job) => job.id)
        .sort(),
    );
    for (const job of held.jobs) {
      expect(await producer.jobs.get.query({ id: job.id })).toMatchObject({
        state: 'completed',
        result: { bytes: 200_000, blob: job.id.padEnd(200_000, 'r') },
      });
    }
    await waitFor(async () => (await bodyBytesHeld()) === 0, 'every byte given back');
  });

  it('lets the SDK through once the bodies ahead of it are gone: it tries a refused enqueue again', async () => {
    // Two tokens' first parts fit the budget and leave less room than the SDK's body needs.
    const bodies = Array.from({ length: 2 }, (_, i) => enqueueManyBody(`blocker${i}`, 40));
    const blockers = bodies.map((body, i) => partSentEnqueue(server.url, PRODUCERS[i] as string, body));
    const parts = bodies.reduce((sum, body) => sum + firstPartOf(body), 0);
    await waitFor(async () => (await bodyBytesHeld()) === parts, 'the two first parts held');
    const sdk = createClient({ url: server.url, jobs, token: PRODUCERS[2] });
    try {
      const payloads = Array.from({ length: 40 }, (_, i) => ({
        to: 'a@example.com',
        subject: `sdk-${i}`,
        body: 'y'.repeat(22_000),
      }));
      const storedBefore = await emailsStored();
      const refusedBefore = await bodiesRefused();
      const enqueuing = sdk.enqueueMany.sendEmail(payloads);
      // Refused while the blockers hold the budget: the SDK is told to try again, and does once they are gone.
      await waitFor(async () => (await bodiesRefused()) > refusedBefore, 'the SDK refused');
      for (const blocker of blockers) blocker.abort();
      expect(await enqueuing).toHaveLength(40);
      expect(await emailsStored()).toBe(storedBefore + 40);
    } finally {
      await sdk.close();
    }
    await waitFor(async () => (await bodyBytesHeld()) === 0, 'every byte given back');
  });
});
