import type {
  CancelledLeases,
  ClaimDispatcher,
  CronScheduler,
  Engine,
  EventHub,
  ScheduledEntry,
  SchemaRegistry,
  WakeupBus,
} from '@workq/core/engine';
import type { TokenAuthority } from '../auth.ts';
import type { ServerMetrics } from '../metrics.ts';
import type { ResolvedServerOptions } from '../options.ts';
import type { AnswerBudget } from './answer-budget.ts';

/** What every use case and every procedure can reach: built once per server. */
export interface ServerServices {
  engine: Engine;
  registry: SchemaRegistry;
  /** Wakes waiting requests, in this process and across servers. */
  bus: WakeupBus;
  /** What claims and enqueues do between store calls: waiting, handoffs, stop-waiting, merged writes. */
  dispatcher: ClaimDispatcher;
  /** What waiting lease extensions hear of their jobs' cancellations through this server. */
  cancellations: CancelledLeases;
  /** Job events of every server on the store, for this server's subscribers. */
  events: EventHub;
  authority: TokenAuthority;
  metrics: ServerMetrics;
  /** The stored bytes the answers in flight carry: claims and pages of children take room in it. */
  answerBudget: AnswerBudget;
  /** This server's crontab, checked. */
  crontab: readonly ScheduledEntry[];
  /** The cron role: told to read the stored schedules again when one is written here (it reads them only while leading). */
  scheduler: Pick<CronScheduler, 'reload'>;
  options: ResolvedServerOptions;
}
