import { expect, it } from 'vitest';
import type { Store } from '../../src/engine/store.ts';
import type { LeaderElection } from '../../src/roles/leadership.ts';
import type { SuiteContext } from './context.ts';

const TTL_MS = 10_000;

/** A store of the kind under test: one of the kind has leader election, so each has. */
function electionOf(store: Store | undefined): LeaderElection {
  const election = store?.leadership;
  if (!election) throw new Error(`${store?.kind} opened without the leader election its kind has`);
  return election;
}

/** Leadership: one holder per role at a time among the servers on one store; another takes over when it dies. */
export function registerLeadershipTests(ctx: SuiteContext): void {
  it('two servers on one store: one leads, renewals keep it, and the other takes over once the leader dies', async ({
    skip,
  }) => {
    ctx.requirePart('leadership', skip);
    const role = ctx.jobName('leader');
    const [leaderStore, followerStore] = await ctx.clientStores(2);
    const leader = electionOf(leaderStore);
    const follower = electionOf(followerStore);
    const t0 = Date.UTC(2026, 0, 1);
    const at = (ms: number) => new Date(t0 + ms);

    expect(await leader.tryLead(role, 'server-a', at(0), TTL_MS)).toBe(true);
    expect(await follower.tryLead(role, 'server-b', at(1), TTL_MS)).toBe(false);
    expect(await leader.tryLead(role, 'server-a', at(5_000), TTL_MS)).toBe(true);
    expect(await follower.tryLead(role, 'server-b', at(12_000), TTL_MS)).toBe(false);

    // The leader's store connection dies (where the harness gives each server its own), so it renews no more.
    if (ctx.harness.separateConnections) await leaderStore?.close();
    expect(await follower.tryLead(role, 'server-b', at(14_999), TTL_MS)).toBe(false);
    expect(await follower.tryLead(role, 'server-b', at(15_000), TTL_MS)).toBe(true);
    expect(await follower.tryLead(role, 'server-b', at(20_000), TTL_MS)).toBe(true);
    if (!ctx.harness.separateConnections) {
      expect(await leader.tryLead(role, 'server-a', at(21_000), TTL_MS)).toBe(false);
    }
  });

  it('a leader that resigns hands its role over at once; another holder cannot resign it', async ({ skip }) => {
    ctx.requirePart('leadership', skip);
    const role = ctx.jobName('resign');
    const [a, b] = (await ctx.clientStores(2)).map(electionOf) as [LeaderElection, LeaderElection];
    const now = new Date(Date.UTC(2026, 0, 1));
    expect(await a.tryLead(role, 'server-a', now, TTL_MS)).toBe(true);
    await b.resign(role, 'server-b');
    expect(await b.tryLead(role, 'server-b', now, TTL_MS)).toBe(false);
    await a.resign(role, 'server-a');
    expect(await b.tryLead(role, 'server-b', now, TTL_MS)).toBe(true);
  });

  it('of eight servers contending for a free role at once, exactly one leads; roles are independent', async ({
    skip,
  }) => {
    ctx.requirePart('leadership', skip);
    const role = ctx.jobName('contended');
    const elections = (await ctx.clientStores(8)).map(electionOf);
    const now = new Date(Date.UTC(2026, 0, 1));
    const won = await Promise.all(elections.map((e, i) => e.tryLead(role, `server-${i}`, now, TTL_MS)));
    expect(won.filter(Boolean)).toHaveLength(1);
    expect(await elections[0]?.tryLead(ctx.jobName('other-role'), 'server-0', now, TTL_MS)).toBe(true);
  });
}
