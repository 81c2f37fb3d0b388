import { listWorkers } from '../app/workers.ts';
import { adminProcedure } from './scoped.ts';

export const workerProcedures = {
  /**
   * The worker registry: each worker seen within the presence window
   * (claiming, or extending the leases of the jobs it runs, so a worker busy
   * with a long job stays listed), with the jobs it holds.
   */
  workers: adminProcedure.query(({ ctx }) => listWorkers(ctx.services)),
};
