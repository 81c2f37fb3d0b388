import { createEngine, type Engine, type Store } from '@workq/core/engine';
import { createPgliteStore } from '@workq/core/postgres';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Handoffs } from './handoffs.ts';

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
