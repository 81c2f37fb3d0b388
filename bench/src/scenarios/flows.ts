import type { RunConfig } from '../config.ts';
import { startCpuMeter } from '../cpu-meter.ts';
import { percentile, waitUntil } from '../stats.ts';
import type { FlowChild, FlowsUnderTest, QueueUnderTest } from '../systems/types.ts';
import type { Measurement, Scenario } from './types.ts';

/** The systems the flows scenarios compare: workq's product path, its engine alone, BullMQ's FlowProducer (issue 50). */
export const FLOWS_SYSTEMS = ['workq-sdk-pg', 'workq-core-pg', 'bullmq-redis'] as const;
/** The children consumer's concurrency; parents have a consumer of their own. */
export const FLOWS_CONCURRENCY = 50;
/** The parents consumer's concurrency, every system alike. */
const FLOWS_PARENT_CONCURRENCY = 10;

export type FlowsShape = 'wide' | 'many';
const SHAPES: Record<FlowsShape, { parents: number; children: number }> = {
  wide: { parents: 1, children: 1_000 },
  many: { parents: 100, children: 10 },
};

export const FLOWS_FIGURES = [
  'children drained',
  'last child → parent p50',
  'last child → parent max',
  'last child → results read p50',
  'enqueue per flow',
] as const;
export type FlowsFigure = (typeof FLOWS_FIGURES)[number];

export function flowsLabel(shape: FlowsShape, figure: FlowsFigure): string {
  const { parents, children } = SHAPES[shape];
  return `flows ${parents}×${children.toLocaleString('en-US')}, ${figure}`;
}

/**
 * Which children and parents ran, when, and what each parent read: proves every job ran exactly once and every
 * parent saw every one of its children's results, in order.
 */
class FlowTracker {
  readonly childSeen: Uint8Array;
  /**
   * Per parent: when its last child's handler ran, when its own handler started, and when it held its children's
   * results (a system that reads them before the handler starts, as the SDK does for `ctx.children`, has them at
   * the start; the others read them inside the handler).
   */
  readonly lastChildAt: Float64Array;
  readonly parentAt: Float64Array;
  readonly resultsAt: Float64Array;
  childrenRun = 0;
  parentsRun = 0;
  parentsRead = 0;
  readonly problems: string[] = [];

  constructor(
    readonly parents: number,
    readonly children: number,
  ) {
    this.childSeen = new Uint8Array(parents * children);
    this.lastChildAt = new Float64Array(parents);
    this.parentAt = new Float64Array(parents);
    this.resultsAt = new Float64Array(parents);
  }

  get done(): boolean {
    return this.parentsRead >= this.parents || this.problems.length > 0;
  }

  readonly onChild = ({ p, c }: FlowChild): void => {
    const at = performance.now();
    const i = p * this.children + c;
    if (!(p >= 0 && p < this.parents && c >= 0 && c < this.children)) {
      this.problem(`unknown child ${p}/${c}`);
      return;
    }
    if (this.childSeen[i] === 1) {
      this.problem(`child ${p}/${c} ran twice`);
      return;
    }
    this.childSeen[i] = 1;
    this.childrenRun++;
    this.lastChildAt[p] = Math.max(this.lastChildAt[p] as number, at);
  };

  readonly onParent = async (p: number, readResults: () => Promise<readonly FlowChild[]>): Promise<void> => {
    const at = performance.now();
    if (!(p >= 0 && p < this.parents)) {
      this.problem(`unknown parent ${p}`);
      return;
    }
    if (this.parentAt[p] !== 0) {
      this.problem(`parent ${p} ran twice`);
      return;
    }
    this.parentAt[p] = at;
    this.parentsRun++;
    for (let c = 0; c < this.children; c++) {
      if (this.childSeen[p * this.children + c] !== 1) {
        this.problem(`parent ${p} ran before its child ${c}`);
        return;
      }
    }
    const results = await readResults();
    this.resultsAt[p] = performance.now();
    this.parentsRead++;
    const wrong = results.length !== this.children || results.some((r, c) => r.p !== p || r.c !== c);
    if (wrong) this.problem(`parent ${p} read ${results.length} results, not its ${this.children} children's`);
  };

  private problem(text: string): void {
    if (this.problems.length < 5) this.problems.push(text);
  }

  verify(completed: number): void {
    const total = this.parents * (this.children + 1);
    const problems = [...this.problems];
    if (this.childrenRun !== this.parents * this.children)
      problems.push(`ran ${this.childrenRun} of ${this.parents * this.children} children`);
    if (this.parentsRun !== this.parents) problems.push(`ran ${this.parentsRun} of ${this.parents} parents`);
    if (completed !== total) problems.push(`store shows ${completed} completed, expected ${total}`);
    if (problems.length > 0) throw new Error(`check failed: ${problems.join('; ')}`);
  }
}

/**
 * Flows (issue 50): with a consumer of children at concurrency 50 and one of parents waiting, `parents` flows of
 * `children` children each are enqueued one after the other, each in one call. Figures: children drained per
 * second, from the first flow's enqueue to the last child's end (its handler, which returns at once); and per
 * parent, the time from its last child's end to its own handler's start (p50 over the parents, and max); and the
 * mean time of one flow's enqueue call, the consumers running meanwhile; with `--cpu`, CPU per child over the
 * enqueues and the drain. Every run checks that each child and each parent ran exactly once, that each parent read
 * all its children's results, and that the store shows them all completed.
 * - `wide`: one parent with 1,000 children.
 * - `many`: 100 parents with 10 children each.
 */
export function flowsScenario(shape: FlowsShape): Scenario {
  const { parents, children } = SHAPES[shape];
  const unitOf = (figure: FlowsFigure): Measurement['unit'] => (figure === 'children drained' ? 'jobs/s' : 'ms');
  const rows = FLOWS_FIGURES.map((figure) => ({
    scenario: flowsLabel(shape, figure),
    concurrency: FLOWS_CONCURRENCY,
    unit: unitOf(figure),
  }));
  return {
    id: `flows-${shape}`,
    needs: 'flows',
    systems: FLOWS_SYSTEMS,
    rows: () => rows,
    async run(queue: QueueUnderTest, config: RunConfig): Promise<Measurement[]> {
      const flows = queue.flows as FlowsUnderTest;
      const tracker = new FlowTracker(parents, children);
      const consumer = await flows.consume({ children: FLOWS_CONCURRENCY, parents: FLOWS_PARENT_CONCURRENCY }, tracker);
      const cpu = startCpuMeter(config.cpu);
      let started: number;
      let enqueued: number;
      try {
        started = performance.now();
        for (let p = 0; p < parents; p++) await flows.enqueueFlow(p, children);
        enqueued = performance.now();
        await waitUntil(() => tracker.done, 120_000, 2);
      } finally {
        // A consumer may close connections it opened: their backends are read before it stops.
        cpu.mark();
        await consumer.stop();
      }
      const cpuPerJob = cpu.perJob(parents * children);
      await waitUntil(async () => (await flows.countCompleted()) >= parents * (children + 1), 30_000, 100).catch(
        () => undefined,
      );
      tracker.verify(await flows.countCompleted());
      const lastChild = Math.max(...tracker.lastChildAt);
      const gaps = Array.from(tracker.parentAt, (at, p) => at - (tracker.lastChildAt[p] as number));
      const toResults = Array.from(tracker.resultsAt, (at, p) => at - (tracker.lastChildAt[p] as number));
      const figures: Record<FlowsFigure, number> = {
        'children drained': ((parents * children) / (lastChild - started)) * 1000,
        'last child → parent p50': percentile(gaps, 50),
        'last child → parent max': percentile(gaps, 100),
        'last child → results read p50': percentile(toResults, 50),
        'enqueue per flow': (enqueued - started) / parents,
      };
      return FLOWS_FIGURES.map((figure) => ({
        scenario: flowsLabel(shape, figure),
        concurrency: FLOWS_CONCURRENCY,
        value: figures[figure],
        unit: unitOf(figure),
        ...(cpuPerJob && figure === 'children drained' ? { cpuPerJob } : {}),
      }));
    },
  };
}
