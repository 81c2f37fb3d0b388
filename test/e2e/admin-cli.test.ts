import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient, PermanentError, type Worker } from '@workq/sdk';
import { freePort, freshPostgresSchema, until } from '@workq/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/processes.ts';
import { collectingLogger } from '../support/quiet-logger.ts';

const WORKQ = join(REPO_ROOT, 'apps', 'queue-server', 'bin', 'workq.js');
const ADMIN = 'admin-secret';
const PRODUCER = 'producer-secret';
const exec = promisify(execFile);

interface Run {
  code: number;
  out: string;
  err: string;
}

const email = (subject: string) => ({ to: 'ops@example.com', subject, body: 'hello' });
const report = { accountId: 'acct-1', kind: 'usage', from: '2026-03-01', to: '2026-03-31' } as const;

describe('the workq admin CLI, as a child process against a queue server', () => {
  let server: QueueServer;
  let drop: () => Promise<void>;
  let worker: Worker | undefined;
  const ids = { dead: '', completed: '', waiting: '', held: '' };

  /** Runs `workq <args>` against the server (`--url` unless `env` names it), with the admin token unless given. */
  async function workq(args: string[], env: Record<string, string> = {}): Promise<Run> {
    const withUrl = env.WORKQ_URL ? args : [...args, '--url', server.url];
    const token = env.WORKQ_TOKEN !== undefined || args.includes('--token') ? [] : ['--token', ADMIN];
    try {
      const { stdout, stderr } = await exec(process.execPath, [WORKQ, ...withUrl, ...token], {
        cwd: REPO_ROOT,
        env: { ...process.env, WORKQ_URL: '', WORKQ_TOKEN: '', ...env },
      });
      return { code: 0, out: stdout, err: stderr };
    } catch (error) {
      const failed = error as { code: number; stdout: string; stderr: string };
      return { code: failed.code, out: failed.stdout, err: failed.stderr };
    }
  }

  beforeAll(async () => {
    const target = await freshPostgresSchema('workq_e2e');
    drop = target.drop;
    server = await startServer({
      store: target.url,
      port: 0,
      tokens: [
        { token: ADMIN, scopes: ['admin'] },
        { token: PRODUCER, scopes: ['produce:*'] },
      ],
      crontab: [{ cron: '0 3 * * *', name: 'generateReport', payload: report, key: 'nightly-report' }],
      logger: collectingLogger(),
    });
    const sdk = createClient({ url: server.url, jobs, token: ADMIN });
    await sdk.ready();
    await sdk.admin.upsertSchedule({ key: 'hourly-email', cron: '0 * * * *', name: 'sendEmail', payload: email('h') });
    ids.dead = (await sdk.enqueue.sendEmail(email('dead'))).id;
    ids.completed = (await sdk.enqueue.sendEmail(email('done'))).id;
    ids.waiting = (await sdk.enqueue.sendEmail(email('later'), { delayMs: 3_600_000 })).id;
    const done = sdk.consume('sendEmail', async (job) => {
      if (job.payload.subject === 'dead') throw new PermanentError('mailbox gone');
      return { messageId: `m-${job.id}` };
    });
    await until(async () => (await sdk.admin.stats()).counts.filter((c) => c.state === 'ready').length === 0, 10_000);
    await done.close();
    await sdk.admin.setLimits('sendEmail', { concurrency: 3, rateLimit: { max: 10, perMs: 1000 } });
    await sdk.admin.pause('sendEmail');
    // A worker holding a job, for `workq workers`.
    ids.held = (await sdk.enqueue.generateReport(report)).id;
    let started = false;
    worker = sdk.consume(
      'generateReport',
      async (_job, ctx) => {
        started = true;
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
        return { url: 'x', rows: 0 };
      },
      { host: 'cli-worker', closeGraceMs: 100 },
    );
    await until(() => started, 10_000);
  });

  afterAll(async () => {
    await worker?.close();
    await server?.close();
    await drop?.();
  });

  it('workq queues: counts by state per job type, as a table and as JSON', async () => {
    const table = await workq(['queues']);
    expect(table).toMatchObject({ code: 0, err: '' });
    const [header, ...rows] = table.out.trimEnd().split('\n');
    expect(header).toMatch(/^NAME\s+PAUSED\s+CONCURRENCY\s+RATE LIMIT\s+GROUP LIMIT\s+SCHEDULED\s+READY\s+ACTIVE/);
    const emailRow = rows.find((row) => row.startsWith('sendEmail '))?.split(/\s{2,}/);
    // Paused and limited; one job waits an hour, one completed, one died.
    expect(emailRow).toEqual(['sendEmail', 'yes', '3', '10/1000ms', 'none', '1', '0', '0', '1', '1', '0']);
    const listed = JSON.parse((await workq(['queues', '--json'])).out) as {
      name: string;
      paused: boolean;
      counts: Record<string, number>;
    }[];
    expect(listed.find((q) => q.name === 'sendEmail')).toMatchObject({
      paused: true,
      counts: { completed: 1, dead: 1, active: 0 },
    });
  });

  it('workq jobs list / show: a filtered page, and one job', async () => {
    const dead = await workq(['jobs', 'list', '--name', 'sendEmail', '--state', 'dead']);
    expect(dead.code).toBe(0);
    expect(dead.out).toMatch(/^ID\s+NAME\s+VERSION\s+STATE\s+ATTEMPTS\s+RUN AT\s+CREATED\s+ERROR\n/);
    expect(dead.out.trimEnd().split('\n').slice(1)).toEqual([
      expect.stringMatching(new RegExp(`^${ids.dead}\\s+sendEmail\\s+1\\s+dead\\s+1/8 .*mailbox gone$`)),
    ]);
    const page = JSON.parse((await workq(['jobs', 'list', '--limit', '2', '--json'])).out);
    expect(page.jobs).toHaveLength(2);
    expect(typeof page.nextCursor).toBe('string');

    const shown = await workq(['jobs', 'show', ids.dead]);
    expect(shown.code).toBe(0);
    expect(shown.out).toMatch(new RegExp(`^id: +${ids.dead}$`, 'm'));
    expect(shown.out).toMatch(/^state: +dead$/m);
    expect(shown.out).toMatch(/^payload: +\{.*"subject":"dead".*\}$/m);
    expect(shown.out).toMatch(/^workerId: +\S+$/m);
    expect(JSON.parse((await workq(['jobs', 'show', ids.completed, '--json'])).out)).toMatchObject({
      state: 'completed',
      result: { messageId: `m-${ids.completed}` },
    });
  });

  it('workq jobs retry / cancel / replay change one job each, and fail with exit 1 when they cannot', async () => {
    expect(await workq(['jobs', 'retry', ids.dead])).toMatchObject({ code: 0, out: `retried ${ids.dead}\n` });
    const again = await workq(['jobs', 'retry', ids.dead]);
    expect(again.code).toBe(1);
    expect(again.err).toMatch(new RegExp(`^workq: CONFLICT: Job ${ids.dead} is (ready|active|completed|dead)`));

    expect(await workq(['jobs', 'cancel', ids.waiting])).toMatchObject({ code: 0, out: `cancelled ${ids.waiting}\n` });
    const twice = await workq(['jobs', 'cancel', ids.waiting]);
    expect(twice).toMatchObject({ code: 1, out: '' });
    expect(twice.err).toBe(
      `workq: CONFLICT: Job ${ids.waiting} is cancelled already: only scheduled, ready or active jobs can be cancelled.\n`,
    );

    const replayed = await workq(['jobs', 'replay', ids.completed, '--json']);
    expect(replayed.code).toBe(0);
    const { replayedAs } = JSON.parse(replayed.out) as { replayedAs: string };
    expect(replayedAs).not.toBe(ids.completed);
    expect(JSON.parse((await workq(['jobs', 'show', replayedAs, '--json'])).out)).toMatchObject({ name: 'sendEmail' });

    const missing = await workq(['jobs', 'show', 'no-such-job']);
    expect(missing).toMatchObject({ code: 1, out: '' });
    expect(missing.err).toMatch(/^workq: NOT_FOUND: .*no-such-job/);
  });

  it('workq workers and workq schedules list the registry and both kinds of schedule', async () => {
    const workers = await workq(['workers']);
    expect(workers.code).toBe(0);
    expect(workers.out).toMatch(/^ID\s+HOST\s+PID\s+JOBS\s+VERSIONS\s+STARTED\s+LAST SEEN\s+ACTIVE\n/);
    expect(workers.out).toContain(`cli-worker  ${process.pid}  generateReport  1`);
    expect(workers.out).toContain(`1 (${ids.held})`);
    const listed = JSON.parse((await workq(['workers', '--json'])).out);
    // The sendEmail consumer closed within the presence window, so it is still listed, holding nothing.
    expect(listed.map((w: { names: string[] }) => w.names[0]).sort()).toEqual(['generateReport', 'sendEmail']);
    expect(listed.find((w: { host: string }) => w.host === 'cli-worker')).toMatchObject({
      pid: process.pid,
      activeJobIds: [ids.held],
    });

    const schedules = await workq(['schedules']);
    expect(schedules.code).toBe(0);
    const rows = schedules.out.trimEnd().split('\n');
    expect(rows[0]).toMatch(/^KEY\s+SOURCE\s+JOB\s+CRON\s+TIMEZONE\s+NEXT RUN\s+LAST RUN\s+LAST JOB\s+LAST STATE$/);
    expect(rows.slice(1)).toEqual([
      expect.stringMatching(
        /^nightly-report\s+crontab\s+generateReport\s+0 3 \* \* \*\s+UTC\s+\S+T03:00:00.000Z\s+-\s+-\s+-$/,
      ),
      expect.stringMatching(/^hourly-email\s+stored\s+sendEmail\s+0 \* \* \* \*\s+UTC\s+\S+:00:00.000Z\s+-\s+-\s+-$/),
    ]);
    expect(JSON.parse((await workq(['schedules', '--json'])).out).map((s: { key: string }) => s.key)).toEqual([
      'nightly-report',
      'hourly-email',
    ]);
  });

  it('takes the server and token from WORKQ_URL and WORKQ_TOKEN, and reports refused or missing access with exit 1', async () => {
    const fromEnv = await workq(['workers', '--json'], { WORKQ_URL: server.url, WORKQ_TOKEN: ADMIN });
    expect(fromEnv.code).toBe(0);
    const noToken = await workq(['queues'], { WORKQ_TOKEN: '' });
    expect(noToken.code).toBe(1);
    expect(noToken.err).toMatch(/^workq: UNAUTHORIZED: /);
    const producer = await workq(['workers', '--token', PRODUCER]);
    expect(producer.code).toBe(1);
    expect(producer.err).toMatch(/^workq: FORBIDDEN: .*admin/);
    const nowhere = await workq(['queues'], { WORKQ_URL: `http://127.0.0.1:${await freePort()}`, WORKQ_TOKEN: ADMIN });
    expect(nowhere.code).toBe(1);
    expect(nowhere.err).toMatch(/^workq: UNAVAILABLE: The queue server at http:\/\/127\.0\.0\.1:\d+ cannot be reached/);
  });

  it('answers a command line it cannot run with exit 2 and the usage text', async () => {
    for (const args of [
      ['frobnicate'],
      ['jobs'],
      ['jobs', 'show'],
      ['jobs', 'list', '--state', 'lost'],
      ['queues', '--nope'],
    ]) {
      const result = await workq(args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.out).toBe('');
      expect(result.err).toMatch(/^workq: .+\n\nOperating a queue server/);
    }
    const help = await workq(['--help']);
    expect(help.code).toBe(0);
    expect(help.out).toContain('workq jobs replay <id>');
  });
});
