import { describe, expect, it } from 'vitest';
import { AnswerBudget, inAnswer } from './answer-budget.ts';

const live = () => new AbortController().signal;

/** Whether `promise` has settled by the time already-queued work has run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe('AnswerBudget', () => {
  it('refuses a budget smaller than the largest answer, or not an integer (VALIDATION)', () => {
    for (const maxBytes of [999, 1_000.5, Number.NaN]) {
      expect(() => new AnswerBudget(maxBytes, 1_000)).toThrow(
        expect.objectContaining({ code: 'VALIDATION', message: expect.stringContaining('maxAnswerBytesInFlight') }),
      );
    }
    expect(new AnswerBudget(1_000, 1_000).callerShare).toBe(1_000);
    expect(new AnswerBudget(4_000, 1_000).callerShare).toBe(2_000);
  });

  it('grants whole reads while they fit, cuts one to the whole units that fit, and keeps what a read brought', async () => {
    const budget = new AnswerBudget(1_000, 400);
    const [a, b] = [{}, {}];
    expect((await budget.reserve(a, undefined, 400, 100, live())).bytes).toBe(400);
    const cut = await budget.reserve(b, undefined, 800, 100, live());
    expect(cut.bytes).toBe(600);
    expect(budget.held).toBe(1_000);
    cut.keep(250);
    expect(budget.held).toBe(650);
    // A read that brought more than its grant holds all it brought, past the budget (it is read already).
    cut.keep(900);
    expect(budget.held).toBe(1_300);
    expect(budget.waiting).toBe(0);
    cut.keep(0);
    expect(budget.held).toBe(400);
    budget.release(a);
    budget.release(b);
    expect(budget.held).toBe(0);
  });

  it('makes a read wait while not one unit fits, in the order reads came, until room is given back', async () => {
    const budget = new AnswerBudget(1_000, 1_000);
    const [a, b, c] = [{}, {}, {}];
    await budget.reserve(a, undefined, 950, 100, live());
    const second = budget.reserve(b, undefined, 500, 100, live());
    const third = budget.reserve(c, undefined, 100, 100, live());
    expect(await settled(second)).toBe(false);
    expect(await settled(third)).toBe(false);
    expect(budget.waiting).toBe(2);
    budget.release(a);
    expect((await second).bytes).toBe(500);
    expect((await third).bytes).toBe(100);
    expect(budget.held).toBe(600);
  });

  it('ends a patient read with no room once its time is up or it is told to stop, and lets the line behind it pass', async () => {
    const budget = new AnswerBudget(1_000, 1_000);
    const [a, b, c, d] = [{}, {}, {}, {}];
    await budget.reserve(a, undefined, 950, 100, live());
    const stop = new AbortController();
    const timed = budget.reserve(b, undefined, 500, 100, live(), { stop: live(), ms: 30 });
    const stopped = budget.reserve(c, undefined, 500, 100, live(), { stop: stop.signal, ms: 60_000 });
    const behind = budget.reserve(d, undefined, 500, 100, live());
    expect(budget.waiting).toBe(3);
    stop.abort();
    expect((await stopped).bytes).toBe(0);
    expect(budget.waiting).toBe(2);
    expect((await timed).bytes).toBe(0);
    expect(budget.waiting).toBe(1);
    // A read that may not wait at all, and finds no room, has none at once.
    expect((await budget.reserve({}, undefined, 100, 100, live(), { stop: live(), ms: 0 })).bytes).toBe(0);
    expect(budget.held).toBe(950);
    budget.release(a);
    expect((await behind).bytes).toBe(500);
    // One that gave up holds nothing, and room that fits is granted whatever its patience.
    expect((await budget.reserve(b, undefined, 300, 100, live(), { stop: live(), ms: 0 })).bytes).toBe(300);
    expect(budget.held).toBe(800);
  });

  it('never makes a request that holds room wait: it gets what fits, or a retryable refusal when nothing does', async () => {
    const budget = new AnswerBudget(1_000, 1_000);
    const a = {};
    await budget.reserve(a, undefined, 700, 100, live());
    expect((await budget.reserve(a, undefined, 800, 100, live())).bytes).toBe(300);
    await expect(budget.reserve(a, undefined, 800, 100, live())).rejects.toMatchObject({
      code: 'UNAVAILABLE',
      retryable: true,
      details: { limit: 'maxAnswerBytesInFlight' },
    });
    expect(budget.held).toBe(1_000);
    budget.release(a);
    expect(budget.held).toBe(0);
  });

  it("holds one caller to its share, and lets other callers' reads pass one that only its share holds back", async () => {
    const budget = new AnswerBudget(1_000, 200);
    const [a1, a2, b1] = [{}, {}, {}];
    expect((await budget.reserve(a1, 'a', 800, 100, live())).bytes).toBe(500);
    const a2Room = budget.reserve(a2, 'a', 200, 100, live());
    expect(await settled(a2Room)).toBe(false);
    expect((await budget.reserve(b1, 'b', 300, 100, live())).bytes).toBe(300);
    expect(await settled(a2Room)).toBe(false);
    budget.release(a1);
    expect((await a2Room).bytes).toBe(200);
  });

  it('stops the wait of a read whose client went away: it gets one unit past the budget, and those behind it go', async () => {
    const budget = new AnswerBudget(1_000, 1_000);
    const [a, b, c] = [{}, {}, {}];
    await budget.reserve(a, undefined, 1_000, 1_000, live());
    const gone = new AbortController();
    const abandoned = budget.reserve(b, undefined, 1_000, 200, gone.signal);
    const behind = budget.reserve(c, undefined, 100, 100, live());
    gone.abort();
    expect((await abandoned).bytes).toBe(200);
    expect(budget.waiting).toBe(1);
    expect(budget.held).toBe(1_200);
    budget.release(b);
    budget.release(a);
    expect((await behind).bytes).toBe(100);
    expect(budget.waiting).toBe(0);
    expect(budget.held).toBe(100);
  });

  it('counts nothing for a request once it is released, or first seen after its client went away', async () => {
    const budget = new AnswerBudget(1_000, 1_000);
    const [a, b, c] = [{}, {}, {}];
    await budget.reserve(a, undefined, 1_000, 100, live());
    const waiting = budget.reserve(b, undefined, 600, 100, live());
    expect(budget.waiting).toBe(1);
    budget.release(b);
    // b's wait ends with one unit nobody holds; what a and b read after their release is not counted either.
    expect((await waiting).bytes).toBe(100);
    expect(budget.held).toBe(1_000);
    budget.release(a);
    expect(budget.held).toBe(0);
    expect((await budget.reserve(a, undefined, 600, 100, live())).bytes).toBe(100);
    budget.add(b, undefined, 300, live());
    const gone = new AbortController();
    gone.abort();
    budget.add(c, undefined, 300, gone.signal);
    await budget.reserve(c, undefined, 600, 100, gone.signal);
    expect(budget.held).toBe(0);
  });

  it('counts what a request brought without a reservation, and outside any request releases when the read ends', async () => {
    const budget = new AnswerBudget(1_000, 1_000);
    const a = {};
    budget.add(a, undefined, 300, live());
    expect(budget.held).toBe(300);
    budget.release(a);
    expect(budget.held).toBe(0);
    const kept = await inAnswer(budget, async ({ request, owner }) => {
      const room = await budget.reserve(request, owner, 400, 100, live());
      room.keep(250);
      return budget.held;
    });
    expect(kept).toBe(250);
    expect(budget.held).toBe(0);
  });
});
