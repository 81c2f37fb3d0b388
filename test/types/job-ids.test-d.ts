import { jobs } from '@workq/schemas';
import { createClient, type EnqueueOptions, type MoveToOptions } from '@workq/sdk';
import { describe, expectTypeOf, it } from 'vitest';

const sdk = createClient({ url: 'http://127.0.0.1:1', jobs });
const email = { to: 'a@example.com', subject: 's', body: 'b' };

describe('caller-chosen job ids', () => {
  it('takes an id on enqueue, and one per job on enqueueMany', async () => {
    expectTypeOf<EnqueueOptions['id']>().toEqualTypeOf<string | undefined>();
    const handle = await sdk.enqueue.sendEmail(email, { id: crypto.randomUUID() });
    expectTypeOf(handle.id).toEqualTypeOf<string>();
    expectTypeOf(handle.created).toEqualTypeOf<boolean>();
    await sdk.enqueueMany.sendEmail([email, email], { perJob: [{ id: crypto.randomUUID() }, undefined] });
    const reject = async () => {
      // @ts-expect-error an id is a string
      await sdk.enqueue.sendEmail(email, { id: 42 });
      // @ts-expect-error a per-job id is a string
      await sdk.enqueueMany.sendEmail([email], { perJob: [{ id: null }] });
    };
    expectTypeOf(reject).toBeFunction();
  });

  it('leaves the id out of moveTo, whose next job the server names', () => {
    expectTypeOf<MoveToOptions>().not.toHaveProperty('id');
    sdk.consume('imageConvert', async (_job, ctx) => {
      // @ts-expect-error moveTo takes no id
      await ctx.moveTo('sendEmail', email, { id: crypto.randomUUID() });
      return { bytes: 1 };
    });
  });
});
