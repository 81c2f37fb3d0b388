import { expect, it } from 'vitest';
import type { ListFilter } from '../../src/engine/store.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { claimOne, enqueueJobs, expectWorkqError, type SuiteContext } from './context.ts';

const DAY_MS = 86_400_000;

/** Progress, extend, moveTo, cancel, list, counts and prune: the rest of a job's life, on every store. */
export function registerLifecycleTests(ctx: SuiteContext): void {
  it('progress is recorded and visible in get; extend moves the lease expiry', async () => {
    const name = ctx.jobName('progress');
    const { engine, clock } = ctx.engine();
    const { id } = await engine.enqueue({ name, version: 1, payload: {}, options: { leaseMs: 1_000 } });
    const lease = await claimOne(engine, name);
    await engine.progress(lease, 25);
    expect((await engine.get(id)).progress).toBe(25);
    await engine.progress(lease, 100);
    expect((await engine.get(id)).progress).toBe(100);
    await expectWorkqError(engine.progress(lease, 101), 'VALIDATION');

    clock.advance(900);
    const { leaseExpiresAt } = await engine.extend(lease, 5_000);
    expect(leaseExpiresAt.getTime()).toBe(clock.now().getTime() + 5_000);
    expect((await engine.get(id)).leaseExpiresAt).toEqual(leaseExpiresAt);
    clock.advance(4_000);
    expect(await engine.claim({ name, maxVersion: 1, limit: 1, workerId: 'w2' })).toEqual([]);
    await engine.complete(lease);
    expect(await engine.get(id)).toMatchObject({ state: 'completed', progress: 100 });
  });

  it('updatePayload replaces a held job’s payload and version; its next attempt starts from them', async () => {
    const name = ctx.jobName('checkpoint');
    const { engine, clock } = ctx.engine();
    await engine.enqueue({ name, version: 1, payload: { page: 0 }, options: { leaseMs: 1_000, maxAttempts: 3 } });
    const first = await claimOne(engine, name, 2);
    expect(first.payload).toEqual({ page: 0 });
    await engine.updatePayload(first, { name, version: 2, payload: { page: 7, seen: ['a', 'b'] } });
    const held = await engine.get(first.id);
    expect(held).toMatchObject({ state: 'active', version: 2, attempts: 1 });
    // Another job type's name is refused, and changes nothing.
    await expectWorkqError(
      engine.updatePayload(first, { name: `${name}-other`, version: 1, payload: {} }),
      'VALIDATION',
    );
    await engine.fail(first, { message: 'crashed after the checkpoint' });
    clock.advance(60_000);
    // The payload is now written in version 2: a consumer reading only version 1 no longer gets it.
    expect(await engine.claim({ name, maxVersion: 1, limit: 1, workerId: 'v1' })).toEqual([]);
    const second = await claimOne(engine, name, 2);
    expect(second).toMatchObject({ id: first.id, attempt: 2, version: 2, payload: { page: 7, seen: ['a', 'b'] } });
    await engine.complete(second);
  });

  it('moveTo completes the job and creates the next job of another type, claimable, in one step', async () => {
    const name = ctx.jobName('move-from');
    const nextName = ctx.jobName('move-to');
    const { engine, store } = ctx.engine();
    const { id } = await engine.enqueue({ name, version: 1, payload: { step: 1 } });
    const lease = await claimOne(engine, name);

    const next = await engine.moveTo(lease, {
      name: nextName,
      version: 2,
      payload: { step: 2 },
      options: { priority: 4, idempotencyKey: 'next-key' },
    });
    expect(next).toMatchObject({ created: true, state: 'ready' });
    const from = await store.getJob(id);
    expect(from).toMatchObject({ state: 'completed', movedTo: next.id, leaseToken: null });
    expect(from?.finishedAt).toBeInstanceOf(Date);
    expect((await engine.get(id)).movedTo).toBe(next.id);
    expect(await store.getJob(next.id)).toMatchObject({
      name: nextName,
      version: 2,
      payload: { step: 2 },
      state: 'waiting',
      priority: 4,
      attempts: 0,
      idempotencyKey: 'next-key',
      movedFrom: id,
    });
    expect((await engine.get(next.id)).movedFrom).toBe(id);
    expect((await store.getJob(id))?.movedFrom).toBeNull();

    const claimed = await engine.claim({ name: nextName, maxVersion: 2, limit: 5, workerId: 'w2' });
    expect(claimed.map((j) => j.id)).toEqual([next.id]);
    expect(claimed[0]?.payload).toEqual({ step: 2 });
    await expectWorkqError(engine.moveTo(lease, { name: nextName, version: 1, payload: {} }), 'LEASE_LOST');
    expect(await store.listJobs({ name: nextName, limit: 10 })).toHaveLength(1);
  });

  it('cancel of a waiting job is true and leaves it cancelled; cancel of a finished or unknown job is false', async () => {
    const name = ctx.jobName('cancel');
    const { engine } = ctx.engine();
    const [scheduled, ready, done] = await engine.enqueueMany([
      { name, version: 1, payload: { n: 1 }, options: { delayMs: 60_000 } },
      { name, version: 1, payload: { n: 2 } },
      { name, version: 1, payload: { n: 3 }, options: { priority: 1 } },
    ]);
    await engine.complete(await claimOne(engine, name));

    expect(await engine.cancel(scheduled!.id)).toBe(true);
    expect(await engine.cancel(ready!.id)).toBe(true);
    expect(await engine.cancel(ready!.id)).toBe(false);
    expect(await engine.cancel(done!.id)).toBe(false);
    expect(await engine.cancel('00000000-0000-7000-8000-000000000001')).toBe(false);
    const cancelled = await engine.get(ready!.id);
    expect(cancelled.state).toBe('cancelled');
    expect(cancelled.finishedAt).toBeInstanceOf(Date);
    expect((await engine.get(scheduled!.id)).state).toBe('cancelled');
    expect((await engine.get(done!.id)).state).toBe('completed');
    expect(await engine.claim({ name, maxVersion: 1, limit: 10, workerId: 'w1' })).toEqual([]);
  });

  it('list pages with a cursor return each job once, in id order, filtered by name and state', async () => {
    const name = ctx.jobName('list');
    const { engine } = ctx.engine();
    const ids = await enqueueJobs(engine, name, 23);
    await engine.enqueue({ name: ctx.jobName('list-other'), version: 1, payload: {} });
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await engine.list({ name, limit: 5, ...(cursor ? { cursor } : {}) });
      seen.push(...page.jobs.map((j) => j.id));
      cursor = page.nextCursor ?? undefined;
      pages += 1;
      expect(pages).toBeLessThanOrEqual(5);
    } while (cursor);
    expect(pages).toBe(5);
    expect(seen).toEqual([...ids].sort());
    expect(new Set(seen).size).toBe(23);

    const claimed = await engine.claim({ name, maxVersion: 1, limit: 3, workerId: 'w1' });
    const active = await engine.list({ name, state: 'active' });
    expect(active.jobs.map((j) => j.id)).toEqual(claimed.map((j) => j.id).sort());
    expect(active.nextCursor).toBeNull();
    expect((await engine.list({ name, state: 'ready', limit: 100 })).jobs).toHaveLength(20);
    await expectWorkqError(engine.list({ name, state: 'bogus' as 'ready' }), 'VALIDATION');
  });

  it('the store lists jobs by id, with its other filters and paging applied', async () => {
    const name = ctx.jobName('list-ids');
    const { engine, store } = ctx.engine();
    const ids = (await engine.enqueueMany([1, 2, 3, 4].map((n) => ({ name, version: 1, payload: { n } })))).map(
      (job) => job.id,
    );
    const [first, second, third] = [...ids].sort() as [string, string, string, string];
    const claimed = await claimOne(engine, name);
    await engine.complete(claimed);
    const byId = (filter: Omit<ListFilter, 'limit'>) =>
      store.listJobs({ limit: 10, ...filter }).then((jobs) => jobs.map((job) => job.id));
    expect(await byId({ ids: [third, first, 'unknown'] })).toEqual([first, third]);
    expect(await byId({ ids: [first, second, third], states: ['completed'] })).toEqual([claimed.id]);
    expect(await byId({ ids: [first, second, third], afterId: first })).toEqual([second, third]);
    expect(await byId({ ids: [] })).toEqual([]);
  });

  it('the store lists newest first between id bounds, by version, group and idempotency key', async () => {
    const name = ctx.jobName('list-newest');
    const { engine, store } = ctx.engine();
    const jobs = await engine.enqueueMany([
      { name, version: 1, payload: {}, options: { group: 'g1', idempotencyKey: 'k1' } },
      { name, version: 2, payload: {}, options: { group: 'g2' } },
      { name, version: 2, payload: {}, options: { group: 'g1', idempotencyKey: 'k3' } },
      { name, version: 1, payload: {} },
    ]);
    const [a, b, c, d] = jobs.map((job) => job.id).sort() as [string, string, string, string];
    const byId = (filter: Omit<ListFilter, 'limit' | 'name'>, limit = 10) =>
      store.listJobs({ name, limit, ...filter }).then((rows) => rows.map((job) => job.id));
    expect(await byId({ newestFirst: true })).toEqual([d, c, b, a]);
    expect(await byId({ newestFirst: true }, 2)).toEqual([d, c]);
    expect(await byId({ newestFirst: true, beforeId: c })).toEqual([b, a]);
    expect(await byId({ newestFirst: true, beforeId: d, afterId: a })).toEqual([c, b]);
    expect(await byId({ beforeId: c })).toEqual([a, b]);
    expect(await byId({ newestFirst: true, version: 2 })).toEqual([c, b]);
    expect(await byId({ group: 'g1' })).toEqual([a, c]);
    expect(await byId({ idempotencyKey: 'k3' })).toEqual([c]);
    expect(await byId({ idempotencyKey: 'k3', version: 1 })).toEqual([]);
    const debounced = await engine.enqueue({
      name,
      version: 1,
      payload: {},
      options: { debounce: { key: 'd1', delayMs: 60_000 } },
    });
    expect(await byId({ debounceKey: 'd1' })).toEqual([debounced.id]);
    expect(await byId({ debounceKey: 'd2' })).toEqual([]);
    expect(await byId({ states: ['waiting'], newestFirst: true, group: 'g2' })).toEqual([b]);
  });

  it('the store lists a state or a key across job types, and a type in both kept states, merged by id', async () => {
    const { engine, store } = ctx.engine();
    const names = ['x', 'y', 'z'].map((suffix) => ctx.jobName(`list-merged-${suffix}`));
    // Jobs of other tests are older than this one's, whose id bounds the listings below.
    const since = {
      afterId: (await engine.enqueue({ name: ctx.jobName('list-merged-start'), version: 1, payload: {} })).id,
    };
    // Three types in turn, each job holding the key of its place in the turn, so every key spans types.
    const jobs = await engine.enqueueMany(
      Array.from({ length: 12 }, (_, n) => ({
        name: names[n % 3] as string,
        version: 1,
        payload: { n },
        options: { idempotencyKey: `merged-${Math.floor(n / 3)}` },
      })),
    );
    const ids = jobs.map((job) => job.id);
    for (const id of ids.filter((_, n) => n % 2 === 0)) await engine.cancel(id);
    const page = (filter: Omit<ListFilter, 'limit'>, limit = 4) =>
      store.listJobs({ ...since, limit, ...filter }).then((rows) => rows.map((job) => job.id));
    const cancelled = ids.filter((_, n) => n % 2 === 0).sort();
    // Newest first, four at a time, by cursor: each cancelled job once, across the three types.
    const first = await page({ states: ['cancelled'], newestFirst: true });
    expect(first).toEqual(cancelled.slice(2).reverse());
    expect(await page({ states: ['cancelled'], newestFirst: true, beforeId: first.at(-1) as string })).toEqual(
      cancelled.slice(0, 2).reverse(),
    );
    expect(await page({ states: ['cancelled'], afterId: cancelled[1] as string }, 10)).toEqual(cancelled.slice(2));
    expect(await page({ idempotencyKey: 'merged-1' })).toEqual(ids.slice(3, 6).sort());
    expect(await page({ idempotencyKey: 'merged-1', states: ['waiting'] })).toEqual([ids[3], ids[5]].sort());
    // A type's waiting jobs, kept as `waiting` and as `delayed`, in id order whatever their run times.
    const delayed = await engine.enqueue({
      name: names[0] as string,
      version: 1,
      payload: {},
      options: { delayMs: 60_000 },
    });
    const ready = await engine.enqueue({ name: names[0] as string, version: 1, payload: {} });
    const waitingOfX = [ids[3], ids[9], delayed.id, ready.id].sort() as string[];
    expect(await page({ name: names[0] as string, states: ['waiting'] }, 10)).toEqual(waitingOfX);
    expect(await page({ name: names[0] as string, states: ['waiting'], newestFirst: true }, 3)).toEqual(
      waitingOfX.slice(1).reverse(),
    );
  });

  it('the store lists a group across job types and states, merged by id, in a state or not', async () => {
    const { engine, store } = ctx.engine();
    const group = ctx.jobName('list-group');
    const names = ['x', 'y', 'z'].map((suffix) => ctx.jobName(`list-group-${suffix}`));
    // Three types in turn; every fourth job in another group, and the last one in none.
    const jobs = await engine.enqueueMany(
      Array.from({ length: 12 }, (_, n) => ({
        name: names[n % 3] as string,
        version: 1,
        payload: { n },
        options: n === 11 ? {} : { group: n % 4 === 3 ? `${group}-other` : group },
      })),
    );
    const later = await engine.enqueue({
      name: names[0] as string,
      version: 1,
      payload: {},
      options: { group, delayMs: 60_000 },
    });
    const grouped = [...jobs.filter((_, n) => n !== 11 && n % 4 !== 3), later].map((job) => job.id);
    const cancelled = grouped.filter((_, i) => i % 3 === 1);
    for (const id of cancelled) await engine.cancel(id);
    const page = (filter: Omit<ListFilter, 'limit'>, limit = 3) =>
      store.listJobs({ limit, group, ...filter }).then((rows) => rows.map((job) => job.id));
    // Newest first, three at a time, by cursor: each of the group's jobs once, whatever its type or state.
    const newest = [...grouped].sort().reverse();
    const seen: string[] = [];
    for (let before: string | undefined; seen.length < newest.length + 1; ) {
      const rows = await page({ newestFirst: true, ...(before === undefined ? {} : { beforeId: before }) });
      seen.push(...rows);
      if (rows.length < 3) break;
      before = rows.at(-1);
    }
    expect(seen).toEqual(newest);
    expect(await page({ states: ['cancelled'] }, 10)).toEqual([...cancelled].sort());
    // Waiting jobs, kept as `waiting` and as `delayed`, in id order whatever their run times.
    const waiting = grouped.filter((id) => !cancelled.includes(id)).sort();
    expect(await page({ states: ['waiting'] }, 10)).toEqual(waiting);
    expect(await page({ states: ['waiting'], afterId: waiting[1] as string }, 2)).toEqual(waiting.slice(2, 4));
  });

  it('promote runs a scheduled job now, a delayed one or one waiting out its backoff, keeping its attempts', async () => {
    const { engine } = ctx.engine();
    const name = ctx.jobName('promote');
    const backoff = { type: 'fixed', delayMs: 60_000 } as const;
    const retried = await engine.enqueue({ name, version: 1, payload: {}, options: { backoff, maxAttempts: 3 } });
    const delayed = await engine.enqueue({ name, version: 1, payload: {}, options: { delayMs: 60_000 } });
    expect(await engine.fail(await claimOne(engine, name), { message: 'later' })).toMatchObject({ state: 'scheduled' });
    expect(await engine.promote(delayed.id)).toBe(true);
    expect(await engine.promote(retried.id)).toBe(true);
    expect(await engine.get(delayed.id)).toMatchObject({ state: 'ready', attempts: 0 });
    expect(await engine.get(retried.id)).toMatchObject({ state: 'ready', attempts: 1, error: { message: 'later' } });
    const claimed = await engine.claim({ name, maxVersion: 1, limit: 10, workerId: 'w1' });
    expect(claimed.map((job) => [job.id, job.attempt])).toEqual([
      [retried.id, 2],
      [delayed.id, 1],
    ]);
    // Started, or never there: nothing to run early.
    expect(await engine.promote(delayed.id)).toBe(false);
    await expectWorkqError(engine.promote(ctx.jobName('missing')), 'NOT_FOUND');
  });

  it('counts report jobs by name, version and state', async () => {
    const name = ctx.jobName('counts');
    const { engine } = ctx.engine();
    await engine.enqueueMany([
      ...Array.from({ length: 4 }, () => ({ name, version: 1, payload: {} })),
      ...Array.from({ length: 2 }, () => ({ name, version: 2, payload: {} })),
      { name, version: 2, payload: {}, options: { delayMs: 60_000 } },
    ]);
    const [a, b, c] = await engine.claim({ name, maxVersion: 1, limit: 3, workerId: 'w1' });
    await engine.complete(a!);
    await engine.fail(b!, { message: 'x', permanent: true });
    expect(c).toBeDefined();

    const counts = (await engine.counts()).filter((row) => row.name === name);
    const byKey = Object.fromEntries(counts.map((row) => [`v${row.version}.${row.state}`, row.count]));
    expect(byKey).toEqual({
      'v1.completed': 1,
      'v1.dead': 1,
      'v1.active': 1,
      'v1.ready': 1,
      'v2.ready': 2,
      'v2.scheduled': 1,
    });
  });

  it('prune deletes finished jobs older than the retention and keeps live and recent ones', async () => {
    const name = ctx.jobName('prune');
    // A clock years before the other tests' jobs, so this prune cannot reach them.
    const clock = new ManualClock(new Date('2020-01-01T00:00:00.000Z'));
    const { engine, store } = ctx.engine({ clock, historyRetentionMs: 3_600_000 });
    const [done, cancelledWaiting, cancelledActive, active, dead, ready] = await engine.enqueueMany(
      [1, 2, 3, 4, 5, 6].map((n) => ({
        name,
        version: 1,
        payload: { n },
        options: { priority: 10 - n, leaseMs: DAY_MS },
      })),
    );
    await engine.complete(await claimOne(engine, name));
    await engine.cancel(cancelledWaiting!.id);
    expect((await claimOne(engine, name)).id).toBe(cancelledActive!.id);
    await engine.cancel(cancelledActive!.id);
    expect((await claimOne(engine, name)).id).toBe(active!.id);
    const deadLease = await claimOne(engine, name);
    expect(deadLease.id).toBe(dead!.id);
    await engine.fail(deadLease, { message: 'x', permanent: true });
    clock.advance(3_000_000);
    const recent = await engine.enqueue({ name, version: 1, payload: { n: 7 }, options: { priority: 100 } });
    await engine.complete(await claimOne(engine, name));
    clock.advance(1_000_000);

    expect(await engine.prune(3)).toBe(3);
    expect(await engine.prune()).toBe(1);
    for (const gone of [done, cancelledWaiting, cancelledActive, dead]) expect(await store.getJob(gone!.id)).toBeNull();
    expect(await store.getJob(active!.id)).toMatchObject({ state: 'active' });
    expect(await store.getJob(ready!.id)).toMatchObject({ state: 'waiting' });
    expect(await store.getJob(recent.id)).toMatchObject({ state: 'completed' });
    expect(await engine.prune()).toBe(0);
  });
}
