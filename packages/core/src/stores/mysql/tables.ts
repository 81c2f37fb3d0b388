import { WorkqError } from '../../errors.ts';

/** The store's table names, each already escaped for use in SQL. */
export interface Tables {
  jobs: string;
  /** The jobs table's name unescaped, for catalog lookups (as a value, never spliced). */
  jobsName: string;
  schemas: string;
  workers: string;
  /** Cross-process wake-up messages, kept about a minute (see notifier.ts). */
  wakeups: string;
  /** Leader election: a lease row per role (see leadership.ts). */
  leaders: string;
  /** Schedules kept in the store, and the last run of each schedule (see schedules.ts). */
  schedules: string;
  scheduleRuns: string;
  /** Flow control: each job type's settings (see flow-control.ts). */
  queueSettings: string;
  /** The settings table's name unescaped, as `jobsName`. */
  queueSettingsName: string;
  /** The schema ledger: the versions applied and the oldest server each allows (see migrations.ts). */
  migrations: string;
  /** The ledger's name unescaped, as `jobsName`. */
  migrationsName: string;
}

const TABLE_PREFIX = /^[a-z_][a-z0-9_]{0,30}$/;

/** Validates `prefix` and escapes each table name once; SQL elsewhere only interpolates these. */
export function tableNames(prefix: string): Tables {
  if (!TABLE_PREFIX.test(prefix)) {
    throw new WorkqError(
      'VALIDATION',
      `tablePrefix must match ${String(TABLE_PREFIX)} (lower-case letters, digits, underscores; at most 31); got "${prefix}".`,
    );
  }
  const quoted = (table: string): string => `\`${prefix}${table}\``;
  return {
    jobs: quoted('jobs'),
    jobsName: `${prefix}jobs`,
    schemas: quoted('schemas'),
    workers: quoted('workers'),
    wakeups: quoted('wakeups'),
    leaders: quoted('leaders'),
    schedules: quoted('schedules'),
    scheduleRuns: quoted('schedule_runs'),
    queueSettings: quoted('queue_settings'),
    queueSettingsName: `${prefix}queue_settings`,
    migrations: quoted('migrations'),
    migrationsName: `${prefix}migrations`,
  };
}
