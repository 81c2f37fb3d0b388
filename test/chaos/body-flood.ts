/**
 * A flood of large request bodies from one token allowed to enqueue, against a queue server in its own process:
 * `requests` `jobs.enqueueMany` calls of 1,000 emails (~16 MiB each, under the default `maxRequestBytes`) sent
 * at once, with no retries. Prints how each was answered, how long the flood took, and the server's peak
 * resident memory, sampled from `/proc` every 50 ms. Compare `--budget off` (a budget no flood reaches) with the
 * default `limits.maxBodyBytesInFlight`.
 *
 *   pnpm --filter @workq/e2e exec tsx chaos/body-flood.ts [--requests 100] [--budget <bytes>|off] [--store <url>]
 *
 * The default store is a schema of its own on the tests' PostgreSQL server (`WORKQ_TEST_POSTGRES_URL`, else the
 * local one), dropped at the end; everything goes to 127.0.0.1 and stops by itself.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { catalogJsonSchemas } from '@workq/core';
import { jobs } from '@workq/schemas';
import { freePort, freshPostgresSchema } from '@workq/test-support';
import { exited, REPO_ROOT } from '../support/processes.ts';
import { rawClient } from '../support/raw-client.ts';
import { NodeProcesses, residentBytes } from './node-processes.ts';

const TOKEN = 'body-flood-admin-token-0123456789';
const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '100' },
    budget: { type: 'string' },
    store: { type: 'string' },
  },
});
const requests = Number(values.requests);
const budgetArgs =
  values.budget === undefined ? [] : ['--max-body-bytes-in-flight', values.budget === 'off' ? '1e15' : values.budget];
// Without --store, a schema of its own on the test PostgreSQL server, dropped at the end.
const ownSchema = values.store === undefined ? freshPostgresSchema('body_flood') : undefined;
const store = values.store ?? (ownSchema?.url as string);

const processes = new NodeProcesses();
const port = await freePort();
const url = `http://127.0.0.1:${port}`;
const logFile = join(mkdtempSync(join(tmpdir(), 'workq-body-flood-')), 'server.log');
const server = processes.start(
  join(REPO_ROOT, 'apps', 'queue-server', 'src', 'cli.ts'),
  ['--store', store, '--port', String(port), '--token', `${TOKEN}=admin`, ...budgetArgs],
  { logFile },
);
try {
  const startedBy = Date.now() + 60_000;
  while (
    !(await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    ))
  ) {
    if (Date.now() > startedBy || server.exitCode !== null) throw new Error(`the server did not start; see ${logFile}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await rawClient(url, TOKEN).schemas.register.mutate({ schemas: catalogJsonSchemas(jobs) });

  const payloads = Array.from({ length: 1_000 }, (_, i) => ({
    to: 'a@example.com',
    subject: `s${i}`,
    body: 'x'.repeat(16_500),
  }));
  const body = Buffer.from(JSON.stringify({ json: { name: 'sendEmail', version: 1, payloads } }));
  let peakBytes = residentBytes(server.pid as number) ?? 0;
  const sampler = setInterval(() => {
    peakBytes = Math.max(peakBytes, residentBytes(server.pid as number) ?? 0);
  }, 50);
  const answers: Record<string, number> = {};
  const startedAt = Date.now();
  await Promise.all(
    Array.from({ length: requests }, async () => {
      const answer = await fetch(`${url}/trpc/jobs.enqueueMany`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body,
      }).then(
        async (response) => {
          const text = await response.text();
          // A tRPC error names the workq code as `workqCode`, a plain HTTP error (a 408) as `code`.
          const code = (/"workqCode":"([A-Z_]+)"/.exec(text) ?? /"code":"([A-Z_]+)"/.exec(text))?.[1] ?? '';
          return `${response.status} ${code}${text.includes('maxBodyBytesInFlight') ? ' (maxBodyBytesInFlight)' : ''}`;
        },
        (error: Error) => error.message,
      );
      answers[answer] = (answers[answer] ?? 0) + 1;
    }),
  );
  clearInterval(sampler);
  const serving =
    (await fetch(`${url}/healthz`).then(
      (r) => r.status,
      () => 0,
    )) === 200;
  console.log(
    JSON.stringify({
      requests,
      bodyMiB: Number((body.length / 2 ** 20).toFixed(2)),
      budget: values.budget ?? 'default',
      seconds: (Date.now() - startedAt) / 1000,
      answers,
      peakResidentMiB: Math.round(peakBytes / 2 ** 20),
      serving,
    }),
  );
} finally {
  processes.signal(server, 'SIGTERM');
  await exited(server);
  await ownSchema?.drop();
}
