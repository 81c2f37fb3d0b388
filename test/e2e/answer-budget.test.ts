import { type QueueServer, startServer } from '@workq/queue-server';
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
    server = await startServer({
      store: 'pglite://memory',
      port: 0,
      jobs,
      tokens: [
        { token: ROOT, scopes: ['admin', 'produce:*'] },
        { token: WORKER_A, scopes: ['consume:*'] },
        { token: WORKER_B, scopes: ['consume:*'] },
      ],
      limits: { maxPayloadBytes: MAX_PAYLOAD_BYTES, maxClaimBytes: MAX_CLAIM_BYTES, maxAnswerBytesInFlight: BUDGET },
      logger,
    });
  });

  afterAll(async () => {
    await server?.close();
  });

  const scraped = (name: string) => scrapedMetric(server.url, ROOT, name);
  const waitFor = (done: () => Promise<boolean>, what: string) =>
    until(done, 20_000, 20).catch(() => {
      throw new Error(`timed out waiting for ${what}`);
    });
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
