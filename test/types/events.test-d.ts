import { jobs } from '@workq/schemas';
import { createClient, type JobEvent, type ResyncEvent } from '@workq/sdk';
import { describe, expectTypeOf, it } from 'vitest';

const sdk = createClient({ url: 'http://127.0.0.1:1', jobs });

describe('event types', () => {
  it("types one job type's events, their result by that type's result schema", async () => {
    for await (const event of sdk.events('imageConvert')) {
      expectTypeOf(event).toEqualTypeOf<JobEvent<typeof jobs, 'imageConvert'> | ResyncEvent>();
      if (event.type === 'resync') {
        expectTypeOf(event.at).toEqualTypeOf<Date>();
        continue;
      }
      expectTypeOf(event.name).toEqualTypeOf<'imageConvert'>();
      expectTypeOf(event.result).toEqualTypeOf<{ bytes: number; width?: number | undefined } | undefined>();
      expectTypeOf(event.type).toEqualTypeOf<
        'enqueued' | 'started' | 'progress' | 'completed' | 'failed' | 'dead' | 'cancelled' | 'waiting-children'
      >();
      expectTypeOf(event.at).toEqualTypeOf<Date>();
      expectTypeOf(event.attempt).toEqualTypeOf<number | undefined>();
      expectTypeOf(event.willRetry).toEqualTypeOf<boolean | undefined>();
      // @ts-expect-error an imageConvert result has no messageId
      event.result?.messageId;
    }
  });

  it('types the events of every job type as a union that the name narrows', async () => {
    for await (const event of sdk.events(undefined, { signal: AbortSignal.timeout(1) })) {
      if (event.type === 'resync') continue;
      if (event.name === 'sendEmail') expectTypeOf(event.result).toEqualTypeOf<{ messageId: string } | undefined>();
      if (event.name === 'generateReport') {
        expectTypeOf(event.result).toEqualTypeOf<{ url: string; rows: number } | undefined>();
      }
    }
  });

  it('takes only job names of the catalog', () => {
    // @ts-expect-error not a job of this catalog
    sdk.events('resizeVideo');
  });
});
