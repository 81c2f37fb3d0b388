import type { JobCount } from '@workq/core/engine';
import { Counter, Gauge, Registry } from 'prom-client';

const COUNTS_CACHE_MS = 5_000;

/** The server's Prometheus metrics: operation counters, and job counts read from the store at most every few seconds. */
export class ServerMetrics {
  readonly registry = new Registry();
  readonly enqueued = new Counter({
    name: 'workq_jobs_enqueued_total',
    help: 'Jobs enqueued',
    labelNames: ['name'],
    registers: [this.registry],
  });
  readonly claimed = new Counter({
    name: 'workq_jobs_claimed_total',
    help: 'Jobs leased to consumers',
    labelNames: ['name'],
    registers: [this.registry],
  });
  readonly handedOver = new Counter({
    name: 'workq_jobs_handed_over_total',
    help: 'Jobs leased to a waiting consumer by their own insert (also counted as claimed)',
    labelNames: ['name'],
    registers: [this.registry],
  });
  readonly claimQueries = new Counter({
    name: 'workq_claim_queries_total',
    help: 'Claim attempts, by whether their store query ran or was skipped (right after a handoff, nothing new)',
    labelNames: ['name', 'query'],
    registers: [this.registry],
  });
  readonly completed = new Counter({
    name: 'workq_jobs_completed_total',
    help: 'Jobs completed',
    registers: [this.registry],
  });
  readonly failed = new Counter({
    name: 'workq_job_failures_total',
    help: 'Failed attempts, by outcome (retry or dead)',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  readonly cronEnqueues = new Counter({
    name: 'workq_cron_enqueues_total',
    help: 'Crontab occurrences enqueued by this server, by whether the job was created here or already existed (enqueued by another server)',
    labelNames: ['name', 'outcome'],
    registers: [this.registry],
  });
  readonly storeUp = new Gauge({
    name: 'workq_store_up',
    help: 'Whether the job store answers this server (1), or is in an outage (0)',
    registers: [this.registry],
  });
  readonly storeOutages = new Counter({
    name: 'workq_store_outages_total',
    help: 'Job store outages this server saw begin (a failed call confirmed by a failed probe)',
    registers: [this.registry],
  });
  private countsReadAt = 0;

  /** `countJobs` reads the job counts from the store (the engine's `counts`). */
  constructor(countJobs: () => Promise<JobCount[]>) {
    const metrics = this;
    new Gauge({
      name: 'workq_jobs',
      help: 'Jobs in the store by type, version and state',
      labelNames: ['name', 'version', 'state'],
      registers: [this.registry],
      async collect() {
        if (Date.now() - metrics.countsReadAt < COUNTS_CACHE_MS) return;
        metrics.countsReadAt = Date.now();
        // Without the store the last counts stay, so the other metrics (workq_store_up among them) still answer.
        const counts = await countJobs().catch(() => undefined);
        if (counts === undefined) return;
        this.reset();
        for (const row of counts) {
          this.set({ name: row.name, version: String(row.version), state: row.state }, row.count);
        }
      },
    });
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
