import type { JobStatus } from '@workq/core';
import type { Store, WorkerPresence } from '@workq/core/engine';
import type { ServerServices } from './services.ts';

/**
 * The worker registry, as operators and waiting producers read it: the
 * consumers seen within the presence window (`presenceWindowMs`).
 */

/** A connected worker, as `admin.workers` lists it. */
export interface ListedWorker {
  /** Unique per consumer (`sdk.consume` call). */
  id: string;
  host: string;
  /** Its process id; `null` when it sent none (a browser, or an older SDK). */
  pid: number | null;
  /** The job types it consumes (one per consumer). */
  names: string[];
  /** The versions of them it reads, oldest first. */
  versions: number[];
  /** When it started, by its own clock; `null` when it sent none. */
  startedAt: Date | null;
  /** When it last claimed or extended a lease. */
  lastSeenAt: Date;
  /** The jobs it holds leases on now. */
  activeJobIds: string[];
}

/** Pages of active jobs read per listing, and most pages read (the jobs beyond are left out of `activeJobIds`). */
const ACTIVE_PAGE = 1_000;
const MAX_ACTIVE_PAGES = 20;

/** The consumers seen within the presence window. */
export function presentWorkers(services: ServerServices): Promise<WorkerPresence[]> {
  const since = new Date(services.engine.clock.now().getTime() - services.options.presenceWindowMs);
  return services.engine.store.listWorkers(since);
}

/**
 * Each worker seen within the presence window (claiming, or extending the
 * leases of the jobs it runs, so a worker busy with a long job stays listed),
 * with the jobs it holds.
 */
export async function listWorkers(services: ServerServices): Promise<ListedWorker[]> {
  const [present, held] = await Promise.all([presentWorkers(services), activeJobsByWorker(services.engine.store)]);
  return present.map((worker) => ({
    id: worker.id,
    host: worker.host,
    pid: worker.pid,
    names: [worker.name],
    versions: Array.from({ length: worker.maxVersion - worker.minVersion + 1 }, (_, i) => worker.minVersion + i),
    startedAt: worker.startedAt,
    lastSeenAt: worker.seenAt,
    activeJobIds: held.get(worker.id) ?? [],
  }));
}

/** How many workers seen within the presence window read jobs of `job`'s type and version. */
export async function workersReading(
  services: ServerServices,
  job: Pick<JobStatus, 'name' | 'version'>,
): Promise<number> {
  const present = await presentWorkers(services);
  return present.filter(
    (worker) => worker.name === job.name && worker.minVersion <= job.version && job.version <= worker.maxVersion,
  ).length;
}

/** The ids of the active jobs, by the worker holding each. */
async function activeJobsByWorker(store: Store): Promise<Map<string, string[]>> {
  const held = new Map<string, string[]>();
  let afterId: string | undefined;
  for (let page = 0; page < MAX_ACTIVE_PAGES; page++) {
    const jobs = await store.listJobs({
      states: ['active'],
      limit: ACTIVE_PAGE,
      withoutValues: true,
      ...(afterId ? { afterId } : {}),
    });
    for (const job of jobs) {
      if (job.workerId === null) continue;
      const ids = held.get(job.workerId);
      if (ids) ids.push(job.id);
      else held.set(job.workerId, [job.id]);
    }
    if (jobs.length < ACTIVE_PAGE) break;
    afterId = jobs[jobs.length - 1]?.id;
  }
  return held;
}
