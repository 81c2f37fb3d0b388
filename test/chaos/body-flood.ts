import { parseArgs } from 'node:util';
import { catalogJsonSchemas } from '@workq/core';
import { jobs } from '@workq/schemas';
import { freshPostgresSchema } from '@workq/test-support';
import { rawClient } from '../support/raw-client.ts';
import { NodeProcesses, residentBytes } from './node-processes.ts';
import { startProbeServer } from './queue-server-process.ts';

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
const server = await startProbeServer('body-flood', { store, token: TOKEN, processes, args: budgetArgs });
const { url } = server;
try {
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
  console.log(
    JSON.stringify({
      requests,
      bodyMiB: Number((body.length / 2 ** 20).toFixed(2)),
      budget: values.budget ?? 'default',
      seconds: (Date.now() - startedAt) / 1000,
      answers,
      peakResidentMiB: Math.round(peakBytes / 2 ** 20),
      serving: await server.serving(),
    }),
  );
} finally {
  await server.stop();
  await ownSchema?.drop();
}
