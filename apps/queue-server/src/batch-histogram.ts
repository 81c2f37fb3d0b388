import type { Metric, Registry } from 'prom-client';

/** The observations of one set of label values: a count per bucket (not cumulative), their sum and count. */
export interface HistogramSeries {
  /** Counts one observation. */
  observe(value: number): void;
}

/** One line of the rendered histogram, as prom-client's registry reads it from `get()`. */
interface RenderedValue {
  metricName: string;
  labels: Record<string, string | number>;
  value: number;
}

interface SeriesData extends HistogramSeries {
  labels: Readonly<Record<string, string>>;
  bucketCounts: number[];
  sum: number;
  count: number;
}

/**
 * A Prometheus histogram whose label values are looked up once per batch of observations, not once per
 * observation: `series(labels)` names the set once, and its `observe` only finds the bucket and counts. The
 * server observes every job it leases and every lease it ends, in batches of one job type, where prom-client's
 * `Histogram.observe` checks and hashes the labels again for each value.
 *
 * Registered in a prom-client `Registry` as one of its own metrics, and rendered as prom-client renders a
 * `Histogram` of the same name, labels and buckets: the same lines, in the same order.
 */
export class BatchHistogram<Label extends string> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly bySeries = new Map<string, SeriesData>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly Label[],
    /** Upper bounds, ascending; `+Inf` is added. */
    private readonly buckets: readonly number[],
    registry: Registry,
  ) {
    // prom-client types its registry's metrics as its own classes; it reads them through `get` and `reset` only.
    registry.registerMetric(this as unknown as Metric);
  }

  /** The series of `labels`, to observe a batch of values under. */
  series(labels: Readonly<Record<Label, string>>): HistogramSeries {
    const key = this.labelNames.map((label) => labels[label]).join('\u0000');
    let series = this.bySeries.get(key);
    if (series === undefined) {
      series = this.newSeries(labels);
      this.bySeries.set(key, series);
    }
    return series;
  }

  async get(): Promise<{ name: string; help: string; type: 'histogram'; values: RenderedValue[]; aggregator: 'sum' }> {
    const values: RenderedValue[] = [];
    for (const { labels, bucketCounts, sum, count } of this.bySeries.values()) {
      let cumulative = 0;
      this.buckets.forEach((bound, index) => {
        cumulative += bucketCounts[index] ?? 0;
        values.push({ metricName: `${this.name}_bucket`, labels: { le: bound, ...labels }, value: cumulative });
      });
      values.push({ metricName: `${this.name}_bucket`, labels: { le: '+Inf', ...labels }, value: count });
      values.push({ metricName: `${this.name}_sum`, labels: { ...labels }, value: sum });
      values.push({ metricName: `${this.name}_count`, labels: { ...labels }, value: count });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    this.bySeries.clear();
  }

  private newSeries(labels: Readonly<Record<Label, string>>): SeriesData {
    const { buckets } = this;
    const series: SeriesData = {
      labels: Object.fromEntries(this.labelNames.map((label) => [label, labels[label]])),
      bucketCounts: buckets.map(() => 0),
      sum: 0,
      count: 0,
      observe(value) {
        if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
        series.sum += value;
        series.count++;
        for (let index = 0; index < buckets.length; index++) {
          if (value <= (buckets[index] as number)) {
            (series.bucketCounts[index] as number)++;
            return;
          }
        }
      },
    };
    return series;
  }
}
