import { type QueueServer, type ServerLimits, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { until } from '@workq/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scrapedMetric } from '../support/prometheus.ts';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawClient } from '../support/raw-client.ts';
import { openSocket } from '../support/raw-http.ts';

/**
 * The payloads the claims being answered carry, over all claims (`limits.maxAnswerBytesInFlight`): a claim's
 * room is held until its answer is sent, so a client that leaves a large answer unread keeps holding it.
 */
const ROOT = 'root-token-answer-budget-0123';
const WORKER_A = 'work-token-answer-budget-a-0123';
const WORKER_B = 'work-token-answer-budget-b-0123';
const MAX_PAYLOAD_BYTES = 2 * 1024 * 1024;
/** Sixteen jobs of the largest payload: an answer of 32 MiB, far more than a loopback socket buffers. */
const JOBS_PER_CLAIM = 16;
const MAX_CLAIM_BYTES = JOBS_PER_CLAIM * MAX_PAYLOAD_BYTES;
/** Two whole claims; one caller's share is one. */
const BUDGET = 2 * MAX_CLAIM_BYTES;

/** An `imageConvert` payload just under the largest size. */
const largePayload = (n: number) => ({ source: `${n}:${'x'.repeat(MAX_PAYLOAD_BYTES - 200)}`, output: `${n}.webp` });

/** A server on an in-memory store with these tokens (each with its scopes) and limits. */
const serverWith = (
  tokens: [string, string[]][],
  limits: ServerLimits,
  logger = collectingLogger(),
): Promise<QueueServer> =>
  startServer({
    store: 'pglite://memory',
    port: 0,
    jobs,
    tokens: tokens.map(([token, scopes]) => ({ token, scopes })),
    limits,
    logger,
  });

/** Resolves once `done()` holds; fails after 20 s, naming `what` it waited for. */
const waitFor = (done: () => Promise<boolean>, what: string) =>
  until(done, 20_000, 20).catch(() => {
    throw new Error(`timed out waiting for ${what}`);
  });

/** The tRPC body of a claim of up to `JOBS_PER_CLAIM` images for `workerId`, waiting up to `waitMs` for them. */
const claimBody = (workerId: string, waitMs = 60_000) =>
  JSON.stringify({ json: { name: 'imageConvert', maxVersion: 2, limit: JOBS_PER_CLAIM, workerId, waitMs } });

/** A claim by `token` on a connection of its own, which reads the answer only while not paused. */
async function socketClaim(url: string, token: string, workerId: string, paused: boolean) {
  const opened = openSocket(url);
  await opened.connected;
  if (paused) opened.socket.pause();
  const body = claimBody(workerId);
  opened.socket.write(
    `POST /trpc/consumer.claim HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  return opened;
}

describe('payloads answered at once (limits.maxAnswerBytesInFlight)', () => {
  let server: QueueServer;
  const logger = collectingLogger();

  beforeAll(async () => {
    server = await serverWith(
      [
        [ROOT, ['admin', 'produce:*']],
        [WORKER_A, ['consume:*']],
        [WORKER_B, ['consume:*']],
      ],
      { maxPayloadBytes: MAX_PAYLOAD_BYTES, maxClaimBytes: MAX_CLAIM_BYTES, maxAnswerBytesInFlight: BUDGET },
      logger,
    );
  });

  afterAll(async () => {
    await server?.close();
  });

  const scraped = (name: string) => scrapedMetric(server.url, ROOT, name);
  const claim = async (token: string, workerId: string, waitMs?: number): Promise<string[]> => {
    const response = await fetch(`${server.url}/trpc/consumer.claim`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: claimBody(workerId, waitMs),
    });
    expect(response.status).toBe(200);
    const answer = (await response.json()) as { result: { data: { json: { jobs: { id: string }[] } } } };
    return answer.result.data.json.jobs.map((job) => job.id);
  };

  it("holds a caller's claims to its share while its answer is unread, serves another caller's, and loses no job", async () => {
    const producer = rawClient(server.url, ROOT);
    for (let first = 0; first < 3 * JOBS_PER_CLAIM; first += 6) {
      const payloads = Array.from({ length: 6 }, (_, i) => largePayload(first + i));
      await producer.jobs.enqueueMany.mutate({ name: 'imageConvert', version: 2, payloads });
    }

    // Caller A claims on a connection it does not read: its answer of 32 MiB cannot be sent whole.
    const unread = await socketClaim(server.url, WORKER_A, 'slow-reader', true);
    await waitFor(async () => (await scraped('workq_answer_bytes')) > MAX_CLAIM_BYTES - 4096, "A's answer held");

    // A's next claim waits for room, leasing nothing meanwhile.
    let aSecondIds: string[] | undefined;
    const aSecond = claim(WORKER_A, 'a-second').then((ids) => (aSecondIds = ids));
    await waitFor(async () => (await scraped('workq_answer_reads_waiting')) === 1, "A's second claim waiting");
    // A claim waits for room no longer than it would wait for jobs: at its deadline it has none, and leases none.
    const startedAt = Date.now();
    expect(await claim(WORKER_A, 'a-short', 300)).toEqual([]);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(250);
    expect(await scraped('workq_answer_reads_waiting')).toBe(1);
    // A claim whose client goes away while it waits stops waiting, holds nothing, and puts back what it leased.
    const gone = await socketClaim(server.url, WORKER_A, 'gone', false);
    await waitFor(async () => (await scraped('workq_answer_reads_waiting')) === 2, 'the claim that goes away waiting');
    gone.socket.destroy();
    await waitFor(async () => (await scraped('workq_answer_reads_waiting')) === 1, 'the claim that went away gone');
    const queues = await rawClient(server.url, ROOT).admin.queues.query();
    const images = queues.find((queue) => queue.name === 'imageConvert');
    expect(images?.counts.active).toBe(JOBS_PER_CLAIM);

    // Caller B's claim is answered in full beside it: A's unread answer holds only A's share.
    const bIds = await claim(WORKER_B, 'b');
    expect(bIds).toHaveLength(JOBS_PER_CLAIM);
    expect(aSecondIds).toBeUndefined();

    // Once A reads its answer, its room comes back and its second claim is answered.
    unread.socket.resume();
    await unread.closed;
    expect(unread.state.received).toMatch(/^HTTP\/1\.1 200 /);
    expect(unread.state.received.split('"leaseToken"').length - 1).toBe(JOBS_PER_CLAIM);
    await aSecond;
    expect(aSecondIds).toHaveLength(JOBS_PER_CLAIM);
    expect(new Set([...bIds, ...(aSecondIds ?? [])]).size).toBe(2 * JOBS_PER_CLAIM);
    const after = (await rawClient(server.url, ROOT).admin.queues.query()).find(
      (queue) => queue.name === 'imageConvert',
    );
    expect(after?.counts).toMatchObject({ active: 3 * JOBS_PER_CLAIM, ready: 0 });
    await waitFor(async () => (await scraped('workq_answer_bytes')) === 0, 'every answer sent');
    expect(logger.lines.filter((line) => line.level === 'error')).toEqual([]);
  });

  it('refuses a budget that cannot hold one whole claim, at start', async () => {
    await expect(
      startServer({
        store: 'pglite://memory',
        port: 0,
        jobs,
        logger: collectingLogger(),
        limits: {
          maxPayloadBytes: MAX_PAYLOAD_BYTES,
          maxClaimBytes: MAX_CLAIM_BYTES,
          maxAnswerBytesInFlight: BUDGET / 4,
        },
      }),
    ).rejects.toMatchObject({ code: 'VALIDATION', message: expect.stringContaining('limits.maxAnswerBytesInFlight') });
  });
});

/**
 * Job statuses take room too: a status brings its result (and errors), so a caller reading a large result many
 * times in one batch, and leaving the answer unread, holds its share, while another caller's reads go on.
 */
describe('statuses answered at once (limits.maxAnswerBytesInFlight)', () => {
  const READER_A = 'produce-token-status-budget-a-0123';
  const READER_B = 'produce-token-status-budget-b-0123';
  const MAX_RESULT_BYTES = 8 * 1024 * 1024;
  /** Three statuses of a result just under 8 MiB: an answer of about 24 MiB, more than a loopback socket buffers. */
  const READS_PER_BATCH = 3;
  /** One caller's share: 20 MiB, which the batch above passes. */
  const STATUS_BUDGET = 40 * 1024 * 1024;
  let server: QueueServer;
  let jobId = '';

  beforeAll(async () => {
    server = await serverWith(
      [
        [ROOT, ['admin', 'produce:*', 'consume:*']],
        [READER_A, ['produce:*']],
        [READER_B, ['produce:*']],
      ],
      {
        maxPayloadBytes: 256 * 1024,
        maxResultBytes: MAX_RESULT_BYTES,
        maxClaimBytes: 256 * 1024,
        maxChildrenPageBytes: MAX_RESULT_BYTES,
        maxAnswerBytesInFlight: STATUS_BUDGET,
      },
    );
    const root = rawClient(server.url, ROOT);
    jobId = (
      await root.jobs.enqueue.mutate({
        name: 'imageConvert',
        version: 2,
        payload: { source: 'a.png', output: 'a.webp' },
      })
    ).id;
    const [held] = (await root.consumer.claim.mutate({ name: 'imageConvert', maxVersion: 2, limit: 1, workerId: 'w' }))
      .jobs;
    const result = { bytes: 1, blob: 'r'.repeat(MAX_RESULT_BYTES - 1_000) };
    await root.consumer.complete.mutate({ items: [{ id: jobId, leaseToken: held?.leaseToken as string, result }] });
  });

  afterAll(async () => {
    await server?.close();
  });

  const scraped = (name: string) => scrapedMetric(server.url, ROOT, name);
  /** The length of the job's result as `token` reads it through `jobs.get`. */
  const resultOf = async (token: string) => {
    const status = await rawClient(server.url, token).jobs.get.query({ id: jobId });
    return (status.result as { blob: string }).blob.length;
  };

  /**
   * `token` reads the job's status `READS_PER_BATCH` times in one batch, on a connection it does not read; with
   * `path` and `input`, that query instead.
   */
  async function unreadStatusBatch(token: string, path = 'jobs.get', input: unknown = { id: jobId }) {
    const inputs = Object.fromEntries(Array.from({ length: READS_PER_BATCH }, (_, i) => [i, { json: input }]));
    const paths = Array.from({ length: READS_PER_BATCH }, () => path).join(',');
    const unread = openSocket(server.url);
    await unread.connected;
    unread.socket.pause();
    unread.socket.write(
      `GET /trpc/${paths}?batch=1&input=${encodeURIComponent(JSON.stringify(inputs))} HTTP/1.1\r\n` +
        `Host: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
    );
    return unread;
  }

  /** The length of the job's result as `token` lists it through `admin.list`. */
  const listedResultOf = async (token: string) => {
    const page = await rawClient(server.url, token).admin.list.query({ name: 'imageConvert' });
    return (page.jobs[0]?.result as { blob: string } | undefined)?.blob.length;
  };

  it.each([
    { reads: 'status reads', token: READER_A, path: 'jobs.get', input: () => ({ id: jobId }), read: resultOf },
    {
      reads: 'admin.list pages',
      token: ROOT,
      path: 'admin.list',
      input: () => ({ name: 'imageConvert' }),
      read: listedResultOf,
    },
  ])("holds a caller's $reads to its share while its answer is unread, and serves another caller's", async (reader) => {
    // The caller reads the job three times in one batch, on a connection it does not read.
    const unread = await unreadStatusBatch(reader.token, reader.path, reader.input());
    await waitFor(async () => (await scraped('workq_answer_bytes')) > 20 * 1024 * 1024, "the caller's answer held");

    // Its next read waits for room; another caller's is answered beside it.
    let nextRead: number | undefined;
    const next = reader.read(reader.token).then((length) => (nextRead = length));
    await waitFor(async () => (await scraped('workq_answer_reads_waiting')) === 1, "the caller's next read waiting");
    expect(await resultOf(READER_B)).toBe(MAX_RESULT_BYTES - 1_000);
    expect(nextRead).toBeUndefined();

    // Once it reads its answer, its room comes back and its next read is answered.
    unread.socket.resume();
    await unread.closed;
    expect(unread.state.received).toMatch(/^HTTP\/1\.1 200 /);
    await next;
    expect(nextRead).toBe(MAX_RESULT_BYTES - 1_000);
    await waitFor(async () => (await scraped('workq_answer_bytes')) === 0, 'every answer sent');
  });

  it("holds none of a job's result while a caller's reads of its children wait for room (the scope check reads only its type)", async () => {
    // A's share is held by a batch it does not read.
    const unread = await unreadStatusBatch(READER_A);
    await waitFor(async () => (await scraped('workq_answer_bytes')) > 20 * 1024 * 1024, "A's answer held");

    // Forty reads of the job's children by A wait for room, each past its scope check. Were that check to read
    // the job's status, each would hold its 8 MiB result while it waits: 320 MiB. The server's heap is this
    // process's.
    const baseline = process.memoryUsage().heapUsed;
    const reader = rawClient(server.url, READER_A);
    const pages = Promise.all(Array.from({ length: 40 }, () => reader.jobs.children.query({ id: jobId })));
    await waitFor(async () => (await scraped('workq_answer_reads_waiting')) === 40, "A's reads waiting");
    expect(process.memoryUsage().heapUsed - baseline).toBeLessThan(64 * 1024 * 1024);

    unread.socket.resume();
    await unread.closed;
    expect(await pages).toEqual(Array.from({ length: 40 }, () => []));
    await waitFor(async () => (await scraped('workq_answer_bytes')) === 0, 'every answer sent');
  });
});
