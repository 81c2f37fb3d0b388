import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ClaimedJob, createEngine, type Engine } from '../engine/engine.ts';
import type { Store } from '../engine/store.ts';
import { createPgliteStore } from '../stores/postgres/index.ts';
import { Handoffs, type ParkedClaim } from './handoffs.ts';

let store: Store;
let engine: Engine;
let handoffs: Handoffs;

beforeAll(async () => {
  store = await createPgliteStore();
  engine = createEngine({ store });
  handoffs = new Handoffs(engine);
});

afterAll(() => store?.close());

const waitingFor = (workerId: string, minVersion = 1, maxVersion = 1) => ({
  name: 'mail',
  minVersion,
  maxVersion,
  limit: 5,
  workerId,
});
const listening = () => new AbortController().signal;

it('hands a lone job to the longest-parked claim that reads its version, passing over claims whose client left', async () => {
  const gone = new AbortController();
  const left = handoffs.park(waitingFor('left'), gone.signal);
  gone.abort();
  const newerOnly = handoffs.park(waitingFor('newer-only', 2, 2), listening());
  const first = handoffs.park(waitingFor('first'), listening());
  const second = handoffs.park(waitingFor('second'), listening());

  const result = await handoffs.enqueue({ name: 'mail', version: 1, payload: { n: 1 } });

  expect([left, newerOnly, first, second].map((claim) => claim.taken.aborted)).toEqual([false, false, true, false]);
  const [job] = await handoffs.withdraw(first);
  expect(job).toMatchObject({ id: result?.id, version: 1, payload: { n: 1 }, attempt: 1 });
  expect(await engine.get(result?.id as string)).toMatchObject({ state: 'active', attempts: 1 });
  for (const claim of [left, newerOnly, second]) expect(await handoffs.withdraw(claim)).toEqual([]);
});

it('does nothing when no claim is parked for the job, leaving the caller to enqueue it', async () => {
  const withdrawn = handoffs.park(waitingFor('withdrawn'), listening());
  await handoffs.withdraw(withdrawn);
  expect(await handoffs.enqueue({ name: 'mail', version: 1, payload: { n: 2 } })).toBeUndefined();
  expect(withdrawn.taken.aborted).toBe(false);
  expect(await engine.counts()).toEqual([{ name: 'mail', version: 1, state: 'active', count: 1 }]);
});

/** A claim query that answers when the test says so. */
function heldQuery() {
  let answer: (jobs: ClaimedJob[]) => void = () => undefined;
  const jobs = new Promise<ClaimedJob[]>((resolve) => {
    answer = resolve;
  });
  return { query: () => jobs, answer };
}

const report = (workerId: string) => ({ ...waitingFor(workerId), name: 'report' });
const settledWithin = (promise: Promise<unknown>, ms: number) =>
  Promise.race([promise.then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), ms))]);

it('waits for a running claim of consumers that found nothing, and hands the job to it when it parks', async () => {
  const idle = await handoffs.attempt(
    report('idle'),
    listening(),
    async () => [],
    () => true,
  );
  await handoffs.withdraw(idle.parked as ParkedClaim);

  const running = heldQuery();
  const attempt = handoffs.attempt(report('running'), listening(), running.query, () => true);
  const enqueued = handoffs.enqueue({ name: 'report', version: 1, payload: { n: 3 } });
  expect(await settledWithin(enqueued, 50)).toBe(false);

  running.answer([]);
  const { parked } = await attempt;
  const result = await enqueued;
  expect(parked?.taken.aborted).toBe(true);
  const [job] = await handoffs.withdraw(parked as ParkedClaim);
  expect(job).toMatchObject({ id: result?.id, payload: { n: 3 } });
  expect(await engine.get(result?.id as string)).toMatchObject({ state: 'active' });
});

it('does not wait for a running claim when the latest one found work, nor when the claim may not park', async () => {
  const busy = heldQuery();
  const found = handoffs.attempt(report('busy'), listening(), busy.query, () => true);
  busy.answer([{ id: 'j1' } as ClaimedJob]);
  expect((await found).parked).toBeUndefined();

  const running = heldQuery();
  const attempt = handoffs.attempt(report('running'), listening(), running.query, () => true);
  expect(await handoffs.enqueue({ name: 'report', version: 1, payload: { n: 4 } })).toBeUndefined();
  running.answer([]);
  await handoffs.withdraw((await attempt).parked as ParkedClaim);

  const closing = heldQuery();
  const last = handoffs.attempt(report('closing'), listening(), closing.query, () => false);
  const enqueued = handoffs.enqueue({ name: 'report', version: 1, payload: { n: 5 } });
  closing.answer([]);
  expect(await last).toEqual({ jobs: [] });
  expect(await enqueued).toBeUndefined();
});

it('lets enqueues that arrive while a taken claim commits its handoff join it, up to the limit it asked for', async () => {
  const claim = handoffs.park({ ...waitingFor('joined'), name: 'digest', limit: 2 }, listening());
  const [first, second, third] = await Promise.all(
    [1, 2, 3].map((n) => handoffs.enqueue({ name: 'digest', version: 1, payload: { n } })),
  );
  const handed = await handoffs.withdraw(claim);
  expect(handed.map((job) => job.id).sort()).toEqual([first?.id, second?.id].sort());
  expect(third).toBeUndefined();
  expect(await handoffs.enqueue({ name: 'digest', version: 1, payload: { n: 4 } })).toBeUndefined();
});

it('lets the claim an enqueue took answer before that enqueue does: its worker waits to run the job', async () => {
  const claim = handoffs.park({ ...waitingFor('eager'), name: 'invoice' }, listening());
  const answered: string[] = [];
  const taken = new Promise<void>((resolve) => claim.taken.addEventListener('abort', () => resolve(), { once: true }));
  const claimAnswered = taken
    .then(() => handoffs.withdraw(claim))
    .then((jobs) => answered.push(`claim with ${jobs.length} job`));
  const enqueueAnswered = handoffs
    .enqueue({ name: 'invoice', version: 1, payload: { n: 6 } })
    .then((result) => answered.push(result ? 'enqueue' : 'enqueue found no claim'));
  await Promise.all([claimAnswered, enqueueAnswered]);
  expect(answered).toEqual(['claim with 1 job', 'enqueue']);
});

describe('a claim right after a handoff', () => {
  /** Handoffs whose readiness counts the engine's announcements, as the server's wake-ups do. */
  function withReadiness(freshForMs: number) {
    let announced = 0;
    engine.onReady(() => announced++);
    return new Handoffs(engine, { generation: () => announced, freshForMs });
  }

  /** Parks `request`, hands it one new job and answers the claim. */
  async function handOne(on: Handoffs, request: ReturnType<typeof waitingFor>) {
    const claim = on.park(request, listening());
    const result = await on.enqueue({ name: request.name, version: 1, payload: { n: 7 } });
    expect(await on.withdraw(claim)).toHaveLength(1);
    return result;
  }

  it('may park without a query, once, while nothing of its type has been announced', async () => {
    const on = withReadiness(60_000);
    const request = { ...waitingFor('quiet'), name: 'receipt' };
    expect(on.nothingReadySinceHandoff(request)).toBe(false);
    await handOne(on, request);
    expect(on.nothingReadySinceHandoff(request)).toBe(true);
    expect(on.nothingReadySinceHandoff(request)).toBe(false);
  });

  it('queries when a job of its type was announced since, when it reads other versions, or when the handoff is old', async () => {
    const on = withReadiness(60_000);
    const request = { ...waitingFor('busy'), name: 'refund' };
    await handOne(on, request);
    // Nobody waits for this one: it is inserted as waiting and announced, and the claim must find it.
    const waiting = await engine.enqueue({ name: 'refund', version: 1, payload: { n: 8 } });
    expect(on.nothingReadySinceHandoff(request)).toBe(false);
    expect((await engine.claim({ ...request, maxVersion: 1 })).map((job) => job.id)).toEqual([waiting.id]);

    await handOne(on, request);
    expect(on.nothingReadySinceHandoff({ ...request, maxVersion: 2 })).toBe(false);

    const stale = withReadiness(0);
    await handOne(stale, request);
    expect(stale.nothingReadySinceHandoff(request)).toBe(false);
  });

  it('always queries without readiness to go by', async () => {
    const request = { ...waitingFor('plain'), name: 'notice' };
    await handOne(handoffs, request);
    expect(handoffs.nothingReadySinceHandoff(request)).toBe(false);
  });
});
