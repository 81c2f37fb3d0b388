import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient } from '@workq/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectingLogger } from '../support/quiet-logger.ts';

const run = promisify(execFile);
const README = new URL('../../README.md', import.meta.url);
const HTTP_API_DOC = new URL('../../docs/http-api.md', import.meta.url);

/** The shell command in `doc`'s fenced block after `<!-- curl:<name> -->`, without its comment lines. */
async function docCommand(doc: URL, name: string): Promise<string> {
  const text = await readFile(doc, 'utf8');
  const block = new RegExp(`<!-- curl:${name} -->\\n\`\`\`sh\\n([\\s\\S]*?)\`\`\``).exec(text)?.[1];
  if (!block) throw new Error(`${doc.pathname} has no curl:${name} example`);
  return block
    .split('\n')
    .filter((line) => !line.startsWith('#'))
    .join('\n');
}

describe('the curl examples of the README and the HTTP API doc, run against a real server', () => {
  let server: QueueServer;
  const token = 'curl-example-token';

  beforeAll(async () => {
    server = await startServer({
      store: 'pglite://memory',
      port: 0,
      logger: collectingLogger(),
      tokens: [{ token, scopes: ['produce:*', 'consume:*', 'admin'] }],
    });
    // A client with the catalog registers its schemas, as the README says.
    await createClient({ url: server.url, jobs, token }).enqueue.sendEmail({
      to: 'a@example.com',
      subject: 'hi',
      body: '',
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  const curl = async (name: string, doc = README) => {
    const command = (await docCommand(doc, name)).replaceAll('http://127.0.0.1:4000', server.url);
    const { stdout } = await run('bash', ['-c', command], { env: { ...process.env, WORKQ_TOKEN: token } });
    return JSON.parse(stdout) as Record<string, unknown>;
  };

  it('enqueues a validated job over plain HTTP', async () => {
    const body = await curl('enqueue');
    expect(body).toMatchObject({ created: true, state: 'ready' });
    const status = await createClient({ url: server.url, jobs, token })
      .job('imageConvert', body.id as string)
      .status();
    expect(status).toMatchObject({ name: 'imageConvert', version: 2, state: 'ready' });
  });

  it('refuses an invalid payload with VALIDATION naming the fields, storing nothing', async () => {
    const before = await createClient({ url: server.url, jobs, token }).admin.list({ name: 'imageConvert' });
    const body = await curl('invalid', HTTP_API_DOC);
    expect(body.error).toMatchObject({ code: 'VALIDATION' });
    const message = (body.error as { message: string }).message;
    expect(message).toContain('output');
    expect(message).toContain('quality');
    const after = await createClient({ url: server.url, jobs, token }).admin.list({ name: 'imageConvert' });
    expect(after.jobs.length).toBe(before.jobs.length);
  });
});
