/**
 * The dashboard's job rows (`admin.jobs`) read no job's result or error history, which no row shows, so a page
 * costs the server and its store the same whatever the jobs returned or however often they failed; `admin.list`,
 * whose jobs carry their results, still reads them. Seen in the `find` commands the real MongoDB driver sends
 * (its command monitoring), on the wire double.
 */
import { createMongoStore } from '@workq/core/mongodb';
import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { type MongoWireDouble, startMongoWireDouble, uniqueName } from '@workq/test-support';
import { type CommandStartedEvent, type Document, MongoClient } from 'mongodb';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawClient } from '../support/raw-client.ts';

const ROOT = 'root-token-admin-rows-0123456';

let double: MongoWireDouble;
let client: MongoClient;
let server: QueueServer;
/** The projections of the `find` commands sent to the jobs collection since it was last emptied. */
const jobFinds: (Document | undefined)[] = [];

beforeAll(async () => {
  double = await startMongoWireDouble({ database: uniqueName('admin_rows') });
  client = new MongoClient(double.url, { monitorCommands: true });
  client.on('commandStarted', (event: CommandStartedEvent) => {
    if (event.commandName === 'find' && String(event.command.find).endsWith('jobs')) {
      jobFinds.push(event.command.projection as Document | undefined);
    }
  });
  server = await startServer({
    store: await createMongoStore({ client }),
    port: 0,
    jobs,
    tokens: [{ token: ROOT, scopes: ['admin', 'produce:*', 'consume:*'] }],
    logger: collectingLogger(),
  });
});

afterAll(async () => {
  await server?.close();
  await client?.close();
  await double?.close();
});

it("reads neither results nor error histories for the dashboard's rows, and reads them for admin.list", async () => {
  const root = rawClient(server.url, ROOT);
  const { id } = await root.jobs.enqueue.mutate({
    name: 'imageConvert',
    version: 2,
    payload: { source: 'a.png', output: 'a.webp' },
  });
  const [held] = (await root.consumer.claim.mutate({ name: 'imageConvert', maxVersion: 2, limit: 1, workerId: 'w' }))
    .jobs;
  await root.consumer.complete.mutate({
    items: [{ id, leaseToken: held?.leaseToken as string, result: { bytes: 7 } }],
  });

  jobFinds.length = 0;
  const page = await root.admin.jobs.query({ name: 'imageConvert' });
  expect(page.jobs.map((row) => [row.id, row.state])).toEqual([[id, 'completed']]);
  expect(jobFinds).toEqual([{ payload: 0, result: 0, errors: 0 }]);

  jobFinds.length = 0;
  const listed = await root.admin.list.query({ name: 'imageConvert' });
  expect(listed.jobs.map((job) => [job.id, job.result])).toEqual([[id, { bytes: 7 }]]);
  expect(jobFinds).toEqual([{ payload: 0 }]);
});
