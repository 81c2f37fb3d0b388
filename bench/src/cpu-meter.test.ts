import { spawn } from 'node:child_process';
import pg from 'pg';
import { afterAll, expect, it } from 'vitest';
import { SERVICES } from './config.ts';
import { startCpuMeter } from './cpu-meter.ts';
import { fillQueue, timeDrain } from './scenarios/drain.ts';
import { pgQuery } from './systems/pg-admin.ts';
import { workqCoreSystem } from './systems/workq-core.ts';

const OTHER_CLIENT = 'workq-bench-other-client';

/**
 * Another client's busy backend, as another engineer's tests would make: its psql is started by a shell
 * that exits at once, so it is no descendant of this process.
 */
async function startOtherClient(): Promise<void> {
  const url = new URL(SERVICES.postgresUrl);
  const sql = 'SELECT count(*) FROM generate_series(1, 1000000000)';
  const command = `psql -h ${url.hostname} -p ${url.port} -U ${url.username} ${url.pathname.slice(1)} -c '${sql}' >/dev/null 2>&1 &`;
  await new Promise((resolve) =>
    spawn('sh', ['-c', command], { env: { ...process.env, PGAPPNAME: OTHER_CLIENT }, stdio: 'ignore' }).on(
      'exit',
      resolve,
    ),
  );
  for (let tries = 0; tries < 100; tries++) {
    const running = await pgQuery(`SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND state = 'active'`, [
      OTHER_CLIENT,
    ]);
    if (running.length > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('the other client did not start');
}

afterAll(async () => {
  await pgQuery('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [OTHER_CLIENT]);
});

it("counts the backends of a core drain's own connections, not another client's busy one", async () => {
  const queue = await workqCoreSystem('pg', { timeRoundTrips: false }).open('cpu-meter');
  try {
    await fillQueue(queue, 3_000);
    await startOtherClient();
    const { cpuPerJob } = await timeDrain(queue, 3_000, 50, { measureCpu: true });
    if (!cpuPerJob) throw new Error('no /proc to read');
    expect(cpuPerJob.postgres).toBeGreaterThan(0);
    // The other backend is busy all through the drain: in the whole figure, in neither of the others.
    expect(cpuPerJob.postgres + cpuPerJob['postgres-bg']).toBeLessThan(cpuPerJob['postgres-whole']);
  } finally {
    await queue.close();
  }
});

it("keeps the meter's own readings of /proc out of the bench column", () => {
  const spans = 5;
  const cost = process.cpuUsage();
  for (let i = 0; i < spans; i++) startCpuMeter(true).perJob(1);
  const { user, system } = process.cpuUsage(cost);
  const readingsMs = (user + system) / 1000;
  if (readingsMs < 50) return; // readings too cheap here to tell them from the clock's ticks
  // Nothing ran between the two readings of each span but the readings themselves.
  let benchMs = 0;
  for (let i = 0; i < spans; i++) benchMs += (startCpuMeter(true).perJob(1)?.bench ?? 0) / 1000;
  expect(benchMs).toBeLessThan(readingsMs / 4);
});

it('counts a connection opened and closed inside the span up to its mark, and not without one', async () => {
  /** The span's PostgreSQL CPU in ms, for a connection that works ~1 s, closed before the span ends. */
  const spanWithWork = async (marked: boolean): Promise<number> => {
    const cpu = startCpuMeter(true);
    const client = new pg.Client({ connectionString: SERVICES.postgresUrl });
    await client.connect();
    await client.query('SELECT count(*) FROM generate_series(1, 10000000)');
    if (marked) cpu.mark();
    await client.end();
    const times = cpu.perJob(1);
    if (!times) throw new Error('no /proc to read');
    return times.postgres / 1000;
  };
  const unmarkedMs = await spanWithWork(false);
  const markedMs = await spanWithWork(true);
  expect(markedMs).toBeGreaterThan(200);
  expect(unmarkedMs).toBeLessThan(markedMs / 5);
});
