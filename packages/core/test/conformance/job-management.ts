import { expect, it } from 'vitest';
import { claimOne, expectWorkqError, type SuiteContext } from './context.ts';

const RACERS = 6;

/**
 * The operator's moves on one job (issue 51, item 8), on every store: `admin.retry` of a dead or completed
 * job in place, `admin.restore` of a cancelled job that never started, `admin.removeByKey` of a waiting job.
 * Each is one atomic step, so operators and claims racing for the same job change it once.
 */
export function registerJobManagementTests(ctx: SuiteContext): void {
  it('reads that show a state leave the payload unread (null) and read every other field as a whole read does', async () => {
    const name = ctx.jobName('unread-payload');
    const { engine } = ctx.engine();
    const payload = { text: 'x'.repeat(10_000), n: 1 };
    const { id } = await engine.enqueue({ name, version: 1, payload, options: { priority: 3, idempotencyKey: 'k' } });
    const waiting = await engine.enqueue({ name, version: 1, payload: { n: 2 } });
    await engine.complete(await claimOne(engine, name), { done: true });

    const whole = await ctx.store.getJob(id);
    expect(whole).toMatchObject({ id, state: 'completed', payload, result: { done: true }, priority: 3 });
    expect(await ctx.store.getJob(id, { withoutPayload: true })).toEqual({ ...whole, payload: null });
    expect(await ctx.store.getJob(ctx.jobName('missing'), { withoutPayload: true })).toBeNull();
    const wholeWaiting = await ctx.store.getJob(waiting.id);
    // By id, by type (through its runs of the listing index) and by state: the same rows, payloads unread.
    for (const filter of [
      { ids: [id, waiting.id] },
      { name },
      { name, states: ['completed' as const, 'waiting' as const] },
    ]) {
      expect(await ctx.store.listJobs({ ...filter, limit: 10, withoutPayload: true })).toEqual([
        { ...whole, payload: null },
        { ...wholeWaiting, payload: null },
      ]);
      expect(await ctx.store.listJobs({ ...filter, limit: 10 })).toEqual([whole, wholeWaiting]);
    }
  });

  it('reads that need only what a job is leave its payload, result and errors unread and every other field whole', async () => {
    const name = ctx.jobName('unread-values');
    const { engine, clock } = ctx.engine();
    const { id } = await engine.enqueue({ name, version: 1, payload: { text: 'p'.repeat(10_000) } });
    await engine.fail(await claimOne(engine, name), { message: 'e'.repeat(5_000) });
    clock.advance(60_000);
    await engine.complete(await claimOne(engine, name), { text: 'r'.repeat(10_000) });
    const waiting = await engine.enqueue({ name, version: 1, payload: { n: 2 } });

    const whole = await ctx.store.getJob(id);
    expect(whole).toMatchObject({ state: 'completed', result: { text: 'r'.repeat(10_000) }, attempts: 2 });
    expect(whole?.errors).toHaveLength(1);
    const unread = { payload: null, result: null, error: null, errors: [] };
    expect(await ctx.store.getJob(id, { withoutValues: true })).toEqual({ ...whole, ...unread });
    expect(await ctx.store.getJob(ctx.jobName('missing'), { withoutValues: true })).toBeNull();
    const wholeWaiting = await ctx.store.getJob(waiting.id);
    expect(await ctx.store.listJobs({ ids: [id, waiting.id], limit: 10, withoutValues: true })).toEqual([
      { ...whole, ...unread },
      { ...wholeWaiting, ...unread },
    ]);
  });

  it('reads of rows leave the payload, result and error history unread and read the latest error whole', async () => {
    const name = ctx.jobName('unread-results');
    const { engine, clock } = ctx.engine();
    const dead = await engine.enqueue({
      name,
      version: 1,
      payload: { text: 'p'.repeat(10_000) },
      options: { maxAttempts: 2 },
    });
    await engine.fail(await claimOne(engine, name), { message: 'first '.repeat(1_000) });
    clock.advance(60_000);
    await engine.fail(await claimOne(engine, name), { message: 'second', stack: 's'.repeat(500) });
    const done = await engine.enqueue({ name, version: 1, payload: { n: 2 } });
    await engine.complete(await claimOne(engine, name), { text: 'r'.repeat(10_000) });

    const wholeDead = await ctx.store.getJob(dead.id);
    expect(wholeDead).toMatchObject({ state: 'dead', error: { message: 'second', stack: 's'.repeat(500) } });
    expect(wholeDead?.errors).toHaveLength(2);
    const wholeDone = await ctx.store.getJob(done.id);
    expect(wholeDone).toMatchObject({ state: 'completed', result: { text: 'r'.repeat(10_000) } });
    // The history holds the latest error alone, as on a job stored before histories were kept.
    const unread = { payload: null, result: null };
    const deadRow = { ...wholeDead, ...unread, errors: [wholeDead?.error] };
    expect(await ctx.store.getJob(dead.id, { withoutResult: true })).toEqual(deadRow);
    expect(await ctx.store.listJobs({ name, limit: 10, withoutResult: true })).toEqual([
      deadRow,
      { ...wholeDone, ...unread, errors: [] },
    ]);
    // Through the engine's list, as the dashboard's rows read it: the latest error kept, the result not.
    const rows = (await engine.list({ name, withoutResults: true })).jobs;
    expect(rows.map((job) => [job.state, job.error?.message, job.result])).toEqual([
      ['dead', 'second', undefined],
      ['completed', undefined, undefined],
    ]);
    expect((await engine.list({ name })).jobs[1]?.result).toEqual({ text: 'r'.repeat(10_000) });
  });

  it('retry reruns a completed job in place: same id, fresh attempts, its result and error cleared', async () => {
    const name = ctx.jobName('rerun');
    const { engine, clock } = ctx.engine();
    const { id } = await engine.enqueue({ name, version: 1, payload: { n: 1 }, options: { maxAttempts: 3 } });
    await engine.fail(await claimOne(engine, name), { message: 'flaky' });
    clock.advance(60_000);
    const second = await claimOne(engine, name);
    await engine.progress(second, 100);
    await engine.complete(second, { first: true });
    expect(await engine.get(id)).toMatchObject({ state: 'completed', attempts: 2, result: { first: true } });

    clock.advance(1_000);
    expect(await engine.retry(id)).toBe(true);
    const rerun = await engine.get(id);
    expect(rerun).toMatchObject({ id, state: 'ready', attempts: 0, progress: 0 });
    expect(rerun.result).toBeUndefined();
    expect(rerun.error).toBeUndefined();
    expect(rerun.finishedAt).toBeUndefined();
    expect(rerun.runAt).toEqual(clock.now());
    // Not ready twice: a second retry finds it waiting already.
    expect(await engine.retry(id)).toBe(false);

    const third = await claimOne(engine, name);
    expect(third).toMatchObject({ id, attempt: 1, payload: { n: 1 } });
    await engine.complete(third, { first: false });
    expect(await engine.get(id)).toMatchObject({ state: 'completed', attempts: 1, result: { first: false } });
  });

  it('retry takes a dead job back as retryDead does, and says why it leaves other jobs', async () => {
    const name = ctx.jobName('retry-one');
    const { engine } = ctx.engine();
    const dead = await engine.enqueue({ name, version: 1, payload: {} });
    const cancelled = await engine.enqueue({ name, version: 1, payload: {} });
    await engine.fail(await claimOne(engine, name), { message: 'bad input', permanent: true });
    expect(await engine.get(dead.id)).toMatchObject({ state: 'dead' });
    await engine.cancel(cancelled.id);

    expect(await engine.retry(dead.id)).toBe(true);
    expect(await engine.get(dead.id)).toMatchObject({ state: 'ready', attempts: 0 });
    const active = await claimOne(engine, name);
    expect(active.id).toBe(dead.id);
    // Running: nothing to rerun.
    expect(await engine.retry(dead.id)).toBe(false);
    const conflict = await expectWorkqError(engine.retry(cancelled.id), 'CONFLICT');
    expect(conflict.message).toContain('admin.restore');
    await expectWorkqError(engine.retry(ctx.jobName('missing')), 'NOT_FOUND');
    expect(await engine.get(cancelled.id)).toMatchObject({ state: 'cancelled' });
  });

  it('concurrent retries of one completed job rerun it once', async () => {
    const name = ctx.jobName('rerun-race');
    const { engine, clock } = ctx.engine();
    const { id } = await engine.enqueue({ name, version: 1, payload: {} });
    await engine.complete(await claimOne(engine, name), { done: 1 });
    const stores = await ctx.clientStores(RACERS);
    const engines = stores.map((store) => ctx.engine({ store, clock }).engine);
    const outcomes = await Promise.all(engines.map((each) => each.retry(id)));
    expect(outcomes.filter(Boolean)).toHaveLength(1);
    const claimed = await engine.claim({ name, maxVersion: 1, limit: 10, workerId: 'w1' });
    expect(claimed.map((job) => [job.id, job.attempt])).toEqual([[id, 1]]);
  });

  it('restore puts a cancelled job that never started back to waiting, at its own run time', async () => {
    const name = ctx.jobName('restore');
    const { engine, clock } = ctx.engine();
    const ready = await engine.enqueue({ name, version: 1, payload: { n: 1 } });
    const delayed = await engine.enqueue({ name, version: 1, payload: { n: 2 }, options: { delayMs: 60_000 } });
    const started = await engine.enqueue({ name, version: 1, payload: { n: 3 }, options: { delayMs: 1_000 } });
    for (const { id } of [ready, delayed]) expect(await engine.cancel(id)).toBe(true);
    const runAt = (await engine.get(delayed.id)).runAt;

    expect(await engine.restore(ready.id)).toBe(true);
    expect(await engine.restore(delayed.id)).toBe(true);
    expect(await engine.get(ready.id)).toMatchObject({ state: 'ready', attempts: 0 });
    const scheduled = await engine.get(delayed.id);
    expect(scheduled).toMatchObject({ state: 'scheduled', attempts: 0, runAt });
    expect(scheduled.finishedAt).toBeUndefined();
    // Waiting again: a second restore has nothing to do.
    expect(await engine.restore(ready.id)).toBe(false);
    const first = await claimOne(engine, name);
    expect(first.id).toBe(ready.id);
    await engine.complete(first);
    clock.advance(60_000);
    const due = await engine.claim({ name, maxVersion: 1, limit: 10, workerId: 'w1' });
    expect(due.map((job) => job.id).sort()).toEqual([delayed.id, started.id].sort());

    // Cancelled while it ran: refused, pointing to replay.
    expect(await engine.cancel(started.id)).toBe(true);
    const refused = await expectWorkqError(engine.restore(started.id), 'CONFLICT');
    expect(refused.message).toContain('replay');
    expect(await engine.get(started.id)).toMatchObject({ state: 'cancelled', attempts: 1 });
    await expectWorkqError(engine.restore(ctx.jobName('missing')), 'NOT_FOUND');
  });

  it('restore and retry leave the jobs of a flow alone, saying to replay', async () => {
    const [parentName, childName] = [ctx.jobName('restore-parent'), ctx.jobName('restore-child')];
    const { engine } = ctx.engine();
    const parent = await engine.flows.enqueue({
      name: parentName,
      version: 1,
      payload: {},
      children: [{ name: childName, version: 1, payload: {} }],
    });
    const [child] = await engine.claim({ name: childName, maxVersion: 1, limit: 1, workerId: 'w1' });
    await engine.complete(child!, { page: 1 });
    expect((await expectWorkqError(engine.retry(child!.id), 'CONFLICT')).message).toContain('flow');
    expect(await engine.cancel(parent.id)).toBe(true);
    expect((await expectWorkqError(engine.restore(parent.id), 'CONFLICT')).message).toContain('flow');
    expect(await engine.get(child!.id)).toMatchObject({ state: 'completed', result: { page: 1 } });
    expect(await engine.get(parent.id)).toMatchObject({ state: 'cancelled' });
  });

  it('removeByKey deletes a waiting job by its idempotency key, which is free afterwards', async () => {
    const name = ctx.jobName('remove-key');
    const { engine, clock } = ctx.engine();
    const key = (k: string) => ({ idempotencyKey: k });
    const ready = await engine.enqueue({ name, version: 1, payload: { n: 1 }, options: key('ready') });
    const later = await engine.enqueue({
      name,
      version: 1,
      payload: { n: 2 },
      options: { ...key('later'), delayMs: 9e5 },
    });
    const held = await engine.enqueue({ name, version: 1, payload: { n: 3 }, options: { ...key('held'), delayMs: 1 } });

    expect(await engine.removeByKey(name, 'ready')).toBe(true);
    await expectWorkqError(engine.get(ready.id), 'NOT_FOUND');
    expect(await engine.removeByKey(name, 'later')).toBe(true);
    await expectWorkqError(engine.get(later.id), 'NOT_FOUND');
    expect(await engine.removeByKey(name, 'ready')).toBe(false);
    // Another type's key, or no holder: nothing removed.
    expect(await engine.removeByKey(`${name}-other`, 'held')).toBe(false);

    const again = await engine.enqueue({ name, version: 1, payload: { n: 4 }, options: key('ready') });
    expect(again).toMatchObject({ created: true });
    expect(again.id).not.toBe(ready.id);

    // Running, then finished: kept, and so is its key.
    clock.advance(10);
    const lease = (await engine.claim({ name, maxVersion: 1, limit: 10, workerId: 'w1' })).find(
      (j) => j.id === held.id,
    );
    expect(lease).toBeDefined();
    expect(await engine.removeByKey(name, 'held')).toBe(false);
    await engine.complete(lease!);
    expect(await engine.removeByKey(name, 'held')).toBe(false);
    expect(await engine.get(held.id)).toMatchObject({ state: 'completed' });
    expect(await engine.enqueue({ name, version: 1, payload: {}, options: key('held') })).toMatchObject({
      id: held.id,
      created: false,
    });
    await expectWorkqError(engine.removeByKey(name, ''), 'VALIDATION');
  });

  it('a claim and a removeByKey racing for one job: it is either removed or leased, never both', async () => {
    const name = ctx.jobName('remove-race');
    const { engine, clock } = ctx.engine();
    const [claimer, remover] = (await ctx.clientStores(2)).map((store) => ctx.engine({ store, clock }).engine);
    for (let round = 0; round < 8; round++) {
      const { id } = await engine.enqueue({
        name,
        version: 1,
        payload: { round },
        options: { idempotencyKey: `k${round}` },
      });
      const [claimed, removed] = await Promise.all([
        claimer!.claim({ name, maxVersion: 1, limit: 1, workerId: 'w1' }),
        remover!.removeByKey(name, `k${round}`),
      ]);
      expect(claimed.length + (removed ? 1 : 0), `round ${round}`).toBe(1);
      if (removed) await expectWorkqError(engine.get(id), 'NOT_FOUND');
      else {
        expect(await engine.get(id)).toMatchObject({ state: 'active' });
        await engine.complete(claimed[0]!);
      }
    }
  });
}
