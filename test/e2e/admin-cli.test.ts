import { execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient, PermanentError, type Worker, type WorkqClient } from '@workq/sdk';
import { freePort, freshPostgresSchema, until } from '@workq/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdminCli } from '../../packages/cli/src/admin/admin-cli.ts';
import { REPO_ROOT } from '../support/processes.ts';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawClient } from '../support/raw-client.ts';

const WORKQ = join(REPO_ROOT, 'packages', 'cli', 'bin', 'workq.js');
const ADMIN = 'admin-cli-e2e-admin-secret';
const PRODUCER = 'admin-cli-e2e-producer-secret';
const REPORTS_ONLY = 'admin-cli-e2e-reports-secret';
const exec = promisify(execFile);

interface Run {
  code: number;
  out: string;
  err: string;
}

const email = (subject: string) => ({ to: 'ops@example.com', subject, body: 'hello' });
const report = { accountId: 'acct-1', kind: 'usage', from: '2026-03-01', to: '2026-03-31' } as const;
const pad = (hour: number) => String(hour).padStart(2, '0');
/** An hour of the day half a day from now: schedules at it cannot fire while the suite runs, so none shows a last run. */
const FAR_HOUR = (new Date().getUTCHours() + 12) % 24;
const NIGHTLY_CRON = `0 ${FAR_HOUR} * * *`;
const DAILY_EMAIL_CRON = `30 ${FAR_HOUR} * * *`;

describe('the workq admin CLI, as a child process against a queue server', () => {
  let server: QueueServer;
  let drop: () => Promise<void>;
  let worker: Worker | undefined;
  let sdk: WorkqClient<typeof jobs>;
  const ids = { dead: '', completed: '', waiting: '', held: '' };

  /** `workq <args>` against the server (`--url` unless `env` names it), with the admin token unless given. */
  function commandLine(args: string[], env: Record<string, string>) {
    const withUrl = env.WORKQ_URL ? args : [...args, '--url', server.url];
    const token = env.WORKQ_TOKEN !== undefined || args.includes('--token') ? [] : ['--token', ADMIN];
    const options = { cwd: REPO_ROOT, env: { ...process.env, WORKQ_URL: '', WORKQ_TOKEN: '', ...env } };
    return { argv: [WORKQ, ...withUrl, ...token], options };
  }

  /** Runs `workq <args>` to its end (see `commandLine`). */
  async function workq(args: string[], env: Record<string, string> = {}): Promise<Run> {
    const { argv, options } = commandLine(args, env);
    try {
      const { stdout, stderr } = await exec(process.execPath, argv, options);
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
        { token: REPORTS_ONLY, scopes: ['consume:generateReport'] },
      ],
      crontab: [{ cron: NIGHTLY_CRON, name: 'generateReport', payload: report, key: 'nightly-report' }],
      // The closed sendEmail consumer stays listed for every test, however slowly a loaded machine runs them.
      presenceWindowMs: 30 * 60_000,
      logger: collectingLogger(),
    });
    sdk = createClient({ url: server.url, jobs, token: ADMIN });
    await sdk.ready();
    await sdk.admin.upsertSchedule({
      key: 'daily-email',
      cron: DAILY_EMAIL_CRON,
      name: 'sendEmail',
      payload: email('h'),
    });
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
    expect(header).toMatch(
      /^NAME\s+PAUSED\s+HELD UNTIL\s+CONCURRENCY\s+RATE LIMIT\s+GROUP LIMIT\s+GROUP ORDER\s+SCHEDULED\s+READY\s+WAITING-CHILDREN\s+ACTIVE/,
    );
    const emailRow = rows.find((row) => row.startsWith('sendEmail '))?.split(/\s{2,}/);
    // Paused and limited; one job waits an hour, one completed, one died.
    expect(emailRow).toEqual([
      'sendEmail',
      'yes',
      'none',
      '3',
      '10/1000ms',
      'none',
      'none',
      '1',
      '0',
      '0',
      '0',
      '1',
      '1',
      '0',
    ]);
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
        new RegExp(
          `^nightly-report\\s+crontab\\s+generateReport\\s+0 ${FAR_HOUR} \\* \\* \\*\\s+UTC\\s+\\S+T${pad(FAR_HOUR)}:00:00.000Z\\s+-\\s+-\\s+-$`,
        ),
      ),
      expect.stringMatching(
        new RegExp(
          `^daily-email\\s+stored\\s+sendEmail\\s+30 ${FAR_HOUR} \\* \\* \\*\\s+UTC\\s+\\S+T${pad(FAR_HOUR)}:30:00.000Z\\s+-\\s+-\\s+-$`,
        ),
      ),
    ]);
    expect(JSON.parse((await workq(['schedules', '--json'])).out).map((s: { key: string }) => s.key)).toEqual([
      'nightly-report',
      'daily-email',
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
    expect(nowhere.err).toMatch(
      /^workq: UNAVAILABLE: Cannot reach the queue server \(connect ECONNREFUSED 127\.0\.0\.1:\d+\)/,
    );
  });

  it('workq pause / resume / limits change flow control, and jobs retry --dead retries a whole type', async () => {
    const shown = await workq(['limits', 'sendEmail']);
    expect(shown).toMatchObject({ code: 0, err: '' });
    expect(shown.out.split('\n').map((line) => line.split(/:\s+/))).toEqual([
      ['name', 'sendEmail'],
      ['paused', 'yes'],
      ['concurrency', '3'],
      ['rate limit', '10/1000ms'],
      ['group concurrency', 'none'],
      ['group order', 'none'],
      [''],
    ]);

    expect(await workq(['resume', 'sendEmail'])).toMatchObject({ code: 0, out: 'resumed sendEmail\n', err: '' });
    // Resumed, a consumer claims the retried job again, which dies again.
    const consumer = sdk.consume('sendEmail', async (job) => {
      if (job.payload.subject === 'dead') throw new PermanentError('mailbox still gone');
      return { messageId: `m-${job.id}` };
    });
    await until(async () => (await sdk.admin.list({ name: 'sendEmail', state: 'dead' })).jobs.length === 1, 10_000);
    await consumer.close();
    const paused = await workq(['pause', 'sendEmail', '--json']);
    expect(paused.code).toBe(0);
    expect(JSON.parse(paused.out)).toEqual({ name: 'sendEmail', paused: true });
    expect(JSON.parse((await workq(['limits', 'sendEmail', '--json'])).out)).toEqual({
      name: 'sendEmail',
      paused: true,
      limits: { concurrency: 3, rateLimit: { max: 10, perMs: 1000 }, groupConcurrency: null, groupOrder: null },
    });

    const changed = await workq([
      'limits',
      'sendEmail',
      '--concurrency',
      'none',
      '--rate-limit',
      '5/2000',
      '--group-concurrency',
      '2',
    ]);
    expect(changed).toMatchObject({ code: 0, err: '' });
    expect(changed.out).toMatch(
      /^concurrency: +none\nrate limit: +5\/2000ms\ngroup concurrency: +2\ngroup order: +none\n$/m,
    );
    // Strict order needs groupConcurrency 1: the server's refusal is reported, and nothing changes.
    const refused = await workq(['limits', 'sendEmail', '--group-order', 'strict']);
    expect(refused).toMatchObject({ code: 1, out: '' });
    expect(refused.err).toMatch(/^workq: VALIDATION: groupOrder 'strict' needs groupConcurrency 1/);
    const strict = await workq(['limits', 'sendEmail', '--group-concurrency', '1', '--group-order', 'strict']);
    expect(strict.out).toMatch(/^group concurrency: +1\ngroup order: +strict\n$/m);
    expect(JSON.parse((await workq(['limits', 'sendEmail', '--rate-limit', 'none', '--json'])).out)).toEqual({
      name: 'sendEmail',
      limits: { concurrency: null, rateLimit: null, groupConcurrency: 1, groupOrder: 'strict' },
    });
    expect(JSON.parse((await workq(['limits', 'sendEmail', '--group-order', 'none', '--json'])).out)).toMatchObject({
      limits: { groupConcurrency: 1, groupOrder: null },
    });
    await workq(['limits', 'sendEmail', '--group-concurrency', '2']);
    const [queue] = (await sdk.admin.queues()).filter((q) => q.name === 'sendEmail');
    expect(queue).toMatchObject({
      paused: true,
      limits: { concurrency: null, rateLimit: null, groupConcurrency: 2, groupOrder: null },
    });

    const invalid = await workq(['pause', 'no such type']);
    expect(invalid).toMatchObject({ code: 1, out: '' });
    expect(invalid.err).toMatch(/^workq: VALIDATION: .*not a valid job name/);

    expect(await workq(['jobs', 'retry', '--dead', '--name', 'sendEmail'])).toMatchObject({
      code: 0,
      out: 'retried 1 dead sendEmail job\n',
    });
    expect((await sdk.admin.list({ name: 'sendEmail', state: 'ready' })).jobs.map((j) => j.id)).toContain(ids.dead);
    const none = await workq(['jobs', 'retry', '--dead', '--name', 'sendEmail', '--json']);
    expect(JSON.parse(none.out)).toEqual({ name: 'sendEmail', retried: 0 });
  });

  it('workq schedules add / remove keep and drop a stored schedule, and report what the server refuses', async () => {
    const payload = JSON.stringify(email('daily'));
    const args = ['schedules', 'add', '--key', 'cli-daily', '--cron', '30 6 * * *', '--name', 'sendEmail'];
    const added = await workq([...args, '--payload', payload, '--timezone', 'Europe/Paris', '--version', '1']);
    expect(added).toMatchObject({ code: 0, err: '' });
    expect(added.out).toMatch(/^key: +cli-daily\nsource: +stored\ncron: +30 6 \* \* \*\ntimezone: +Europe\/Paris\n/);
    expect(added.out).toMatch(/^version: +1\nnextRunAt: +\S+T0[45]:30:00.000Z\n$/m);
    const listed = JSON.parse((await workq(['schedules', '--json'])).out) as { key: string; timezone: string }[];
    expect(listed.find((s) => s.key === 'cli-daily')).toMatchObject({ timezone: 'Europe/Paris', name: 'sendEmail' });

    const refused = await workq([...args, '--payload', JSON.stringify({ to: 1 })]);
    expect(refused).toMatchObject({ code: 1, out: '' });
    expect(refused.err).toMatch(/^workq: VALIDATION: /);
    const unknown = await workq(['schedules', 'add', '--key', 'k', '--cron', '* * * * *', '--name', 'noSuchJob']);
    expect(unknown).toMatchObject({ code: 1, out: '' });
    expect(unknown.err).toMatch(/^workq: UNKNOWN_JOB: .*noSuchJob/);

    expect(await workq(['schedules', 'remove', 'cli-daily'])).toMatchObject({
      code: 0,
      out: 'removed schedule cli-daily\n',
    });
    expect(await workq(['schedules', 'remove', 'cli-daily'])).toMatchObject({
      code: 1,
      out: '',
      err: 'workq: NOT_FOUND: No stored schedule "cli-daily" (crontab entries change only with the crontab).\n',
    });
    expect((await sdk.admin.schedules()).map((s) => s.key)).toEqual(['nightly-report', 'daily-email']);
  });

  it('workq events prints live events one a line until SIGTERM, and exits 1 when the stream is refused or the server shuts down', async () => {
    const watch = (args: string[], env: Record<string, string> = {}) => {
      const { argv, options } = commandLine(args, env);
      const child = spawn(process.execPath, argv, options);
      const run = { out: '', err: '' };
      child.stdout.on('data', (chunk) => {
        run.out += chunk;
      });
      child.stderr.on('data', (chunk) => {
        run.err += chunk;
      });
      const code = new Promise<number | null>((resolve) => child.on('exit', resolve));
      return { child, run, code };
    };
    const oneType = watch(['events', 'sendEmail']);
    const every = watch(['events', '--json']);
    const slowLoop = join(REPO_ROOT, 'test', 'fixtures', 'slow-event-loop.mjs');
    const slow = watch(['events', '--json'], {
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${slowLoop}`.trim(),
    });
    // Each watcher connects some time after it starts: enqueue until both have seen one of these jobs.
    const enqueued: string[] = [];
    const seen = (out: string) => enqueued.some((id) => out.includes(id));
    await until(async () => {
      enqueued.push((await sdk.enqueue.sendEmail(email('watched'))).id);
      return seen(oneType.run.out) && seen(every.run.out) && seen(slow.run.out);
    }, 20_000);
    oneType.child.kill('SIGTERM');
    every.child.kill('SIGTERM');
    slow.child.kill('SIGTERM');
    expect(await oneType.code).toBe(0);
    expect(await every.code).toBe(0);
    // A command whose event loop takes the signal late (a loaded machine) still ends by its own shutdown.
    expect(await slow.code).toBe(0);
    expect(oneType.run.err + every.run.err).toBe('');
    const lines = oneType.run.out.trimEnd().split('\n');
    const id = enqueued.find((candidate) => oneType.run.out.includes(candidate));
    expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^\\S+Z  enqueued  sendEmail v1  ${id}$`)));
    const events = every.run.out
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(events).toContainEqual({
      type: 'enqueued',
      id: enqueued.find((candidate) => every.run.out.includes(candidate)),
      name: 'sendEmail',
      version: 1,
      at: expect.any(String),
    });

    const forbidden = await workq(['events', 'sendEmail', '--token', REPORTS_ONLY]);
    expect(forbidden).toMatchObject({ code: 1, out: '' });
    expect(forbidden.err).toMatch(/^workq: FORBIDDEN: .*"sendEmail"/);
    const anonymous = await workq(['events'], { WORKQ_TOKEN: '' });
    expect(anonymous).toMatchObject({ code: 1, out: '' });
    expect(anonymous.err).toMatch(/^workq: UNAUTHORIZED: /);

    // It does not reconnect: a server shutting down ends the command with exit 1 (in this process: a child's
    // start is slow).
    const closing = await startServer({ store: 'pglite://memory', port: 0, logger: collectingLogger() });
    const out: string[] = [];
    const err: string[] = [];
    const watching = runAdminCli(['events', '--url', closing.url], {
      out: (text) => void out.push(text),
      err: (text) => void err.push(text),
      env: {},
      untilInterrupted: () => new AbortController().signal,
    });
    try {
      const producer = createClient({ url: closing.url, jobs });
      await until(async () => {
        await producer.enqueue.sendEmail(email('before shutdown'));
        return out.length > 0;
      }, 10_000);
    } finally {
      await closing.close();
    }
    expect(await watching).toBe(1);
    expect(err.join('')).toMatch(/^workq: UNAVAILABLE: /);
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
    // The same path in this process (a child's start is slow): each is refused before any call to the server.
    for (const args of [
      ['jobs', 'retry', '--dead'],
      ['jobs', 'remove', '--name', 'sendEmail'],
      ['jobs', 'restore'],
      ['pause'],
      ['resume', 'a', 'b'],
      ['limits', 'sendEmail', '--concurrency', '0'],
      ['limits', 'sendEmail', '--rate-limit', '5'],
      ['limits', 'sendEmail', '--group-concurrency', 'many'],
      ['limits', 'sendEmail', '--group-order', 'fifo'],
      ['schedules', 'add', '--key', 'k', '--name', 'sendEmail'],
      ['schedules', 'add', '--key', 'k', '--cron', '* * * * *', '--name', 'sendEmail', '--payload', '{nope'],
      ['schedules', 'add', '--key', 'k', '--cron', '* * * * *', '--name', 'sendEmail', '--version', '1.5'],
      ['schedules', 'remove'],
      ['events', 'a', 'b'],
    ]) {
      const result = { out: '', err: '' };
      const io = {
        out: (text: string) => {
          result.out += text;
        },
        err: (text: string) => {
          result.err += text;
        },
        env: { WORKQ_URL: server.url, WORKQ_TOKEN: ADMIN },
        untilInterrupted: () => new AbortController().signal,
      };
      expect(await runAdminCli(args, io), args.join(' ')).toBe(2);
      expect(result.out).toBe('');
      expect(result.err).toMatch(/^workq: .+\n\nOperating a queue server/);
    }
    const help = await workq(['--help']);
    expect(help.code).toBe(0);
    expect(help.out).toContain('workq jobs replay <id>');
    expect(help.out).toContain('workq jobs remove --name <type> --key <key>');
    expect(help.out).toContain('workq events [<type>]');
  });

  it('workq jobs retry reruns a completed job; promote, restore and remove change one job, exit 1 when they cannot', async () => {
    // The type is paused: each job stays where the command put it.
    expect(await workq(['jobs', 'retry', ids.completed])).toMatchObject({ code: 0, out: `retried ${ids.completed}\n` });
    expect(await sdk.admin.job(ids.completed)).toMatchObject({ state: 'ready', attempts: 0 });

    const later = await sdk.enqueue.sendEmail(email('promote me'), { delayMs: 3_600_000 });
    expect(await workq(['jobs', 'promote', later.id])).toMatchObject({
      code: 0,
      out: `promoted ${later.id}: ready now\n`,
    });
    const twice = await workq(['jobs', 'promote', later.id]);
    expect(twice).toMatchObject({ code: 1, out: '' });
    expect(twice.err).toBe(`workq: CONFLICT: Job ${later.id} is ready: only scheduled jobs can be run early.\n`);

    const cancelled = await sdk.enqueue.sendEmail(email('restore me'), { delayMs: 3_600_000 });
    await sdk.admin.cancel(cancelled.id);
    const restored = await workq(['jobs', 'restore', cancelled.id, '--json']);
    expect(JSON.parse(restored.out)).toEqual({ id: cancelled.id, restored: true, state: 'scheduled' });
    const held = await workq(['jobs', 'restore', ids.held]);
    expect(held).toMatchObject({
      code: 1,
      err: `workq: CONFLICT: Job ${ids.held} is active: only cancelled jobs can be restored.\n`,
    });

    const keyed = await sdk.enqueue.sendEmail(email('remove me'), { idempotencyKey: 'cli-remove', delayMs: 60_000 });
    const removed = await workq(['jobs', 'remove', '--name', 'sendEmail', '--key', 'cli-remove']);
    expect(removed).toMatchObject({ code: 0, out: 'removed the waiting sendEmail job with key cli-remove\n' });
    await expect(sdk.admin.job(keyed.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const gone = await workq(['jobs', 'remove', '--name', 'sendEmail', '--key', 'cli-remove']);
    expect(gone.code).toBe(1);
    expect(gone.err).toMatch(/^workq: CONFLICT: No waiting sendEmail job holds the key "cli-remove"/);
  });

  it('workq queues shows when a hold ends; workq resume lifts it as well as a pause', async () => {
    // Last: the claim that holds the type registers a worker, which `workq workers` would list.
    // imageConvert held as a handler's ctx.rateLimited holds it (an upstream said 429); its job goes back to ready.
    const { id } = await sdk.enqueue.imageConvert({ source: 'held.png', output: 'held.webp' });
    const consumer = rawClient(server.url, ADMIN).consumer;
    const [held] = (await consumer.claim.mutate({ name: 'imageConvert', maxVersion: 2, limit: 1, workerId: 'h' })).jobs;
    expect(held?.id).toBe(id);
    const { heldUntil } = await consumer.rateLimited.mutate({ id, leaseToken: held?.leaseToken ?? '', holdMs: 60_000 });
    const rowOf = (out: string) =>
      out
        .split('\n')
        .find((row) => row.startsWith('imageConvert '))
        ?.split(/\s{2,}/);
    expect(rowOf((await workq(['queues'])).out)?.slice(0, 3)).toEqual(['imageConvert', 'no', heldUntil.toISOString()]);
    const listed = JSON.parse((await workq(['queues', '--json'])).out) as { name: string; heldUntil?: string }[];
    expect(listed.find((q) => q.name === 'imageConvert')?.heldUntil).toBe(heldUntil.toISOString());

    expect(await workq(['resume', 'imageConvert'])).toMatchObject({ code: 0, out: 'resumed imageConvert\n' });
    expect(rowOf((await workq(['queues'])).out)?.slice(0, 3)).toEqual(['imageConvert', 'no', 'none']);
    expect((await sdk.admin.queues()).find((q) => q.name === 'imageConvert')).not.toHaveProperty('heldUntil');
    expect(await sdk.admin.cancel(id)).toBe(true);
  });
});
