import { type FlowMember, type FlowReader, flowEnds } from './flow-ends.ts';
import type { JobEventEmitter } from './job-events.ts';
import type { LocalListeners } from './local-listeners.ts';

/**
 * Tells of the jobs that a job's end ended through its flow (`flowEnds`) as a job's own end is told: each is
 * announced finished to this process's listeners (result waits), a job cancelled with its flow is announced
 * cancelled with the worker that last held it as `Engine.cancel` announces its job (the watch on held leases,
 * other servers), and its event is published while someone listens. The store ends them in the same step but does not name them, so they are
 * read back, off the engine's path; a job with neither parent nor children reads nothing.
 */
export class FlowEndNotices {
  constructor(
    private readonly flows: FlowReader,
    private readonly listeners: LocalListeners,
    private readonly events: JobEventEmitter,
  ) {}

  /**
   * After `job` ended `state` at `at`, and after its own events: announces it finished, then tells of the jobs
   * its end ended through its flow.
   */
  finished(job: FlowMember & { id: string }, state: 'dead' | 'cancelled', at: Date): void {
    this.listeners.emitFinished(job.id, state);
    this.ended(job, at);
  }

  private ended(job: FlowMember, at: Date): void {
    if (!job.parentId && !job.childCount) return;
    flowEnds(this.flows, job, at).then(
      (ends) => {
        for (const parent of ends.dead) this.listeners.emitFinished(parent.id, 'dead');
        for (const child of ends.cancelled) {
          this.listeners.emitCancelled(child.id, child.workerId);
          this.listeners.emitFinished(child.id, 'cancelled');
        }
        this.events.endedWithFlow(ends, at);
      },
      // What cannot be read now is told nothing of: a waiter finds the job finished at its next poll.
      () => undefined,
    );
  }
}
