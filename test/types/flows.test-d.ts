import { defineCatalog, defineJob, type JobError, type JobState } from '@workq/core';
import { type ChildJob, createClient, type FlowChild, type WaitingForChildren } from '@workq/sdk';
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';

const jobs = defineCatalog({
  buildReport: defineJob({
    version: 1,
    payload: z.object({ reportId: z.string() }),
    result: z.object({ pages: z.number() }),
  }),
  renderPage: defineJob({
    version: 1,
    payload: z.object({ page: z.number().int(), dpi: z.number().default(72) }),
    result: z.object({ url: z.string() }),
  }),
  notify: defineJob({ version: 1, payload: z.object({ to: z.string() }) }),
});

const sdk = createClient({ url: 'http://127.0.0.1:1', jobs });

describe('flow types', () => {
  it('types a child as an enqueue of its type', async () => {
    const page = sdk.child.renderPage({ page: 1 }, { onFailure: 'ignore', priority: 3 });
    expectTypeOf(page).toEqualTypeOf<ChildJob<'buildReport' | 'renderPage' | 'notify'>>();
    expectTypeOf(sdk.child.renderPage).parameter(0).toEqualTypeOf<{ page: number; dpi?: number | undefined }>();
    const handle = await sdk.enqueue.buildReport(
      { reportId: 'r1' },
      { children: [page, sdk.child.notify({ to: 'a' }, { children: [sdk.child.renderPage({ page: 2 })] })] },
    );
    expectTypeOf(handle.result()).resolves.toEqualTypeOf<{ pages: number }>();
  });

  it('rejects a wrong child payload, an unknown child type and a wrong policy', () => {
    const reject = async () => {
      // @ts-expect-error `page` must be a number
      sdk.child.renderPage({ page: 'one' });
      // @ts-expect-error `page` is required
      sdk.child.renderPage({ dpi: 300 });
      // @ts-expect-error there is no job named resizeVideo
      sdk.child.resizeVideo({});
      // @ts-expect-error onFailure is 'fail-parent', 'ignore' or 'continue'
      sdk.child.renderPage({ page: 1 }, { onFailure: 'retry' });
      // @ts-expect-error a child takes no idempotency key: it is always a new job of its flow
      sdk.child.renderPage({ page: 1 }, { idempotencyKey: 'k' });
      // @ts-expect-error a child takes no id: ids order a parent's children, so each is made for it
      sdk.child.renderPage({ page: 1 }, { id: '0190a8c4-3f2e-7c1a-9b6d-2f4e5a6b7c8d' });
      // @ts-expect-error children are made by sdk.child, not written as payloads
      await sdk.enqueue.buildReport({ reportId: 'r1' }, { children: [{ page: 1 }] });
    };
    expectTypeOf(reject).toBeFunction();
  });

  it('types the children and their results in the parent’s handler', () => {
    sdk.consume('buildReport', async (_job, ctx) => {
      expectTypeOf(ctx.resumed).toEqualTypeOf<boolean>();
      if (!ctx.resumed) {
        const waiting = ctx.waitForChildren([sdk.child.renderPage({ page: 3 })]);
        expectTypeOf(waiting).resolves.toEqualTypeOf<WaitingForChildren>();
        return waiting;
      }
      const pages = await ctx.childResults('renderPage');
      expectTypeOf(pages).toEqualTypeOf<{ url: string }[]>();
      expectTypeOf(await ctx.childResults('notify')).toEqualTypeOf<undefined[]>();
      expectTypeOf(ctx.children).toEqualTypeOf<readonly FlowChild<typeof jobs>[]>();
      for (const child of ctx.children) {
        expectTypeOf(child.id).toBeString();
        expectTypeOf(child.state).toEqualTypeOf<JobState>();
        expectTypeOf(child.error).toEqualTypeOf<JobError | undefined>();
        if (child.name === 'renderPage') expectTypeOf(child.result).toEqualTypeOf<{ url: string } | undefined>();
      }
      return { pages: pages.length };
    });
  });

  it('rejects a wrong child name in childResults and a result used as a wrong type', () => {
    sdk.consume('buildReport', async (_job, ctx) => {
      // @ts-expect-error there is no job named renderPages
      await ctx.childResults('renderPages');
      const [first] = await ctx.childResults('renderPage');
      // @ts-expect-error a page's url is a string
      const dpi: number | undefined = first?.url;
      // @ts-expect-error renderPage results have no `bytes`
      first?.bytes;
      // @ts-expect-error a waitForChildren child is made by sdk.child
      await ctx.waitForChildren([{ name: 'renderPage', payload: { page: 1 } }]);
      return { pages: dpi ?? 0 };
    });
  });

  it('still checks the result of a handler that may wait for children', () => {
    // @ts-expect-error `pages` must be a number
    sdk.consume('buildReport', async (_job, ctx) => (ctx.resumed ? { pages: 'many' } : ctx.waitForChildren([])));
  });
});
