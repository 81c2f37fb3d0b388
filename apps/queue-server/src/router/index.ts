import { adminRouter } from './admin.ts';
import { consumerRouter } from './consumer.ts';
import { eventsRouter } from './events.ts';

import { producerRouter } from './producer.ts';
import { schemasRouter } from './schemas.ts';
import { router } from './trpc.ts';

/** The queue server's tRPC API. */
export const appRouter = router({
  jobs: producerRouter,
  consumer: consumerRouter,
  schemas: schemasRouter,
  admin: adminRouter,
  events: eventsRouter,
});

export type AppRouter = typeof appRouter;
/** A leased job as a claim's answer carries it. */
export type { ClaimedJob } from '@workq/core/engine';
