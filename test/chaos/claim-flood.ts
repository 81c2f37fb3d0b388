import { parseArgs } from 'node:util';
import { catalogJsonSchemas } from '@workq/core';
import { jobs } from '@workq/schemas';
import { freshPostgresSchema } from '@workq/test-support';
import { rawClient } from '../support/raw-client.ts';
import { NodeProcesses, residentBytes } from './node-processes.ts';
import { startProbeServer } from './queue-server-process.ts';

const TOKEN = 'claim-flood-admin-token-0123456789';
/** Jobs per enqueue request: 60 payloads of ~250 KB stay under the default `maxRequestBytes` (16 MiB). */
const PER_REQUEST = 60;
const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '2000' },
    claims: { type: 'string', default: '2' },
    store: { type: 'string' },
  },
});
const jobCount = Number(values.jobs);
const claims = Number(values.claims);
const ownSchema = values.store === undefined ? freshPostgresSchema('claim_flood') : undefined;
const store = values.store ?? (ownSchema?.url as string);

const processes = new NodeProcesses();
const server = await startProbeServer('claim-flood', { store, token: TOKEN, processes });
const { url } = server;
const post = (path: string, json: unknown) =>
  fetch(`${url}/trpc/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ json }),
  });
try {
  await rawClient(url, TOKEN).schemas.register.mutate({ schemas: catalogJsonSchemas(jobs) });

  const source = 'x'.repeat(250_000);
  for (let first = 0; first < jobCount; first += PER_REQUEST) {
    const payloads = Array.from({ length: Math.min(PER_REQUEST, jobCount - first) }, (_, i) => ({
      source: `${source}${first + i}`,
      output: 'out.webp',
    }));
    const answer = await post('jobs.enqueueMany', { name: 'imageConvert', version: 2, payloads });
    if (!answer.ok) throw new Error(`enqueue answered ${answer.status}: ${(await answer.text()).slice(0, 300)}`);
  }

  let peakBytes = residentBytes(server.pid as number) ?? 0;
  const sampler = setInterval(() => {
    peakBytes = Math.max(peakBytes, residentBytes(server.pid as number) ?? 0);
  }, 50);
  const startedAt = Date.now();
  const answers = await Promise.all(
    Array.from({ length: claims }, (_, worker) =>
      post('consumer.claim', { name: 'imageConvert', maxVersion: 2, limit: 1_000, workerId: `flood-${worker}` }).then(
        async (response) =>
          `${response.status}, ${Math.round((await response.arrayBuffer()).byteLength / 2 ** 20)} MiB`,
        (error: Error) => error.message,
      ),
    ),
  );
  clearInterval(sampler);
  console.log(
    JSON.stringify({
      jobs: jobCount,
      claims,
      answers,
      seconds: (Date.now() - startedAt) / 1000,
      peakResidentMiB: Math.round(peakBytes / 2 ** 20),
      serving: await server.serving(),
    }),
  );
} finally {
  await server.stop();
  await ownSchema?.drop();
}
