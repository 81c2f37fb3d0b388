import { isFinishedState } from '@workq/core';
import { type CountScope, type JobCount, leaseClaimedAtMs } from '@workq/core/engine';
import { Counter, Gauge, Registry } from 'prom-client';
import { BatchHistogram, type HistogramSeries } from './batch-histogram.ts';

const COUNTS_CACHE_MS = 5_000;
/**
 * How long the gauge shows the finished jobs' counts before it reads them again: that read grows with the
 * history kept, the live counts' does not, so only the live ones are read at every scrape.
 */
const HISTORY_COUNTS_MS = 60_000;

/** Histogram buckets, in seconds, for waits and handler runs: from milliseconds to an hour. */
const DURATION_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];

/** How a lease ended, as the handler duration histogram labels it. */
export type HandledOutcome = 'completed' | 'retry' | 'dead';

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
  /** See `observeClaimed`. */
  readonly waitTime = new BatchHistogram(
    'workq_job_wait_seconds',
    'Time from when a job became due (its run time: enqueue, delay end, retry backoff end) to the claim that leased it, observed at that claim',
    ['name'],
    DURATION_BUCKETS_S,
    this.registry,
  );
  /** See `observeHandled`. */
  readonly handlerDuration = new BatchHistogram(
    'workq_job_handler_seconds',
    'Time from the claim that leased a job to the ack or failure that ended the lease, as the servers saw them, by outcome (completed, retry, dead)',
    ['name', 'outcome'],
    DURATION_BUCKETS_S,
    this.registry,
  );
  private countsReadAt = 0;
  private historyReadAt = Number.NEGATIVE_INFINITY;
  private history: JobCount[] = [];

  /**
   * `countJobs` reads the job counts from the store (the engine's `counts`): of the live states at each
   * scrape (at most every few seconds), of every state at most every minute.
   */
  constructor(countJobs: (scope: CountScope) => Promise<JobCount[]>) {
    const metrics = this;
    new Gauge({
      name: 'workq_jobs',
      help: 'Jobs in the store by type, version and state (those of finished states read at most every minute)',
      labelNames: ['name', 'version', 'state'],
      registers: [this.registry],
      async collect() {
        if (Date.now() - metrics.countsReadAt < COUNTS_CACHE_MS) return;
        metrics.countsReadAt = Date.now();
        // Without the store the last counts stay, so the other metrics (workq_store_up among them) still answer.
        const all = metrics.countsReadAt - metrics.historyReadAt >= HISTORY_COUNTS_MS;
        const counts = await countJobs(all ? 'all' : 'live').catch(() => undefined);
        if (counts === undefined) return;
        if (all) {
          metrics.historyReadAt = metrics.countsReadAt;
          metrics.history = counts.filter((row) => isFinishedState(row.state));
        }
        this.reset();
        for (const row of [...counts.filter((row) => !isFinishedState(row.state)), ...metrics.history]) {
          this.set({ name: row.name, version: String(row.version), state: row.state }, row.count);
        }
      },
    });
  }

  /**
   * Observes, for jobs a claim leased at `nowMs`, how long each waited ready: from its run time, so a delayed
   * job or a retry counts from when it became due, not from its enqueue. A job delivered again after a lost
   * lease keeps its run time, so its wait includes the lost lease.
   */
  observeClaimed(jobs: readonly { name: string; runAtMs: number }[], nowMs: number): void {
    let name: string | undefined;
    let series: HistogramSeries | undefined;
    for (const job of jobs) {
      // A claim's jobs are of one type: its series is looked up once.
      if (job.name !== name || series === undefined) {
        name = job.name;
        series = this.waitTime.series({ name });
      }
      series.observe(Math.max(0, nowMs - job.runAtMs) / 1000);
    }
  }

  /**
   * Observes how long a lease was held when its ack or failure arrives at `nowMs`: from the claim time its
   * token carries (`leaseClaimedAtMs`), read on whichever server took the claim. That spans the handler's
   * run and what the server cannot see apart from it: the claim's answer in transit, a prefetched job's wait
   * in the worker, and the ack's batching. A token without a claim time is not observed. One call per batch of
   * leases of one type that ended alike, such as the acks a claim carried.
   */
  observeHandled(name: string, leaseTokens: readonly string[], outcome: HandledOutcome, nowMs: number): void {
    const series = this.handlerDuration.series({ name, outcome });
    for (const leaseToken of leaseTokens) {
      const claimedAtMs = leaseClaimedAtMs(leaseToken);
      if (claimedAtMs !== null) series.observe(Math.max(0, nowMs - claimedAtMs) / 1000);
    }
  }

  /** Shows, at each scrape, the request-body bytes `bodies` holds now and the bodies it has refused. */
  observeRequestBodies(bodies: { readonly held: number; readonly refused: number }): void {
    new Gauge({
      name: 'workq_request_body_bytes',
      help: 'Request-body bytes the server holds now, over all requests (at most limits.maxBodyBytesInFlight)',
      registers: [this.registry],
      collect() {
        this.set(bodies.held);
      },
    });
    new Counter({
      name: 'workq_request_bodies_refused_total',
      help: 'Request bodies refused (retryably) because the server held limits.maxBodyBytesInFlight',
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(bodies.refused);
      },
    });
  }

  observeAnswers(answers: { readonly held: number; readonly waiting: number }): void {
    new Gauge({
      name: 'workq_answer_bytes',
      help: 'Stored bytes the claims and pages of children being answered hold now (at most limits.maxAnswerBytesInFlight)',
      registers: [this.registry],
      collect() {
        this.set(answers.held);
      },
    });
    new Gauge({
      name: 'workq_answer_reads_waiting',
      help: 'Claims and pages of children waiting for room under limits.maxAnswerBytesInFlight',
      registers: [this.registry],
      collect() {
        this.set(answers.waiting);
      },
    });
  }

  observeStoreTurns(turns: { readonly running: number; readonly waiting: number }): void {
    new Gauge({
      name: 'workq_store_calls',
      help: 'Store calls made for requests, by whether they run or wait for their turn (limits.maxStoreCallsInFlight)',
      labelNames: ['status'],
      registers: [this.registry],
      collect() {
        this.set({ status: 'running' }, turns.running);
        this.set({ status: 'waiting' }, turns.waiting);
      },
    });
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
