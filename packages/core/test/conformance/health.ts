import { expect, it } from 'vitest';
import { expectWorkqError, type SuiteContext } from './context.ts';

/** `Store.ping`: the health probe answers while the store does, and says UNAVAILABLE once it cannot. */
export function registerHealthTests(ctx: SuiteContext): void {
  it('ping resolves on a live store and rejects with UNAVAILABLE once the store is closed', async () => {
    await expect(ctx.store.ping()).resolves.toBeUndefined();
    const store = await ctx.openStore();
    await expect(store.ping()).resolves.toBeUndefined();
    await store.close();
    await expectWorkqError(store.ping(), 'UNAVAILABLE');
  });
}
