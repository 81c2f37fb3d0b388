/**
 * The process the bench runs workq queue servers in, one at a time: each
 * line `{"start": storeUrl}` on stdin starts a server on a free port and
 * answers `{"url": …}`; `{"stop": true}` closes it and answers
 * `{"stopped": true}`. The process stays up for the whole run, so its code
 * is as warm as the peers' code in the bench process, while every scenario
 * still gets a fresh server on a fresh queue. It exits when stdin closes
 * (so it never outlives the bench).
 */
import { createInterface } from 'node:readline';
import { type QueueServer, startServer } from '@workq/queue-server';

const quiet = { info: () => undefined, warn: () => undefined, error: (m: string, f?: object) => console.error(m, f) };
const answer = (message: object) => process.stdout.write(`${JSON.stringify(message)}\n`);
let server: QueueServer | undefined;

async function handle(command: { start?: string; stop?: boolean }): Promise<void> {
  if (command.start !== undefined) {
    await server?.close();
    server = await startServer({ store: command.start, port: 0, host: '127.0.0.1', logger: quiet });
    answer({ url: server.url });
  } else if (command.stop) {
    await server?.close();
    server = undefined;
    answer({ stopped: true });
  }
}

let work = Promise.resolve();
createInterface({ input: process.stdin })
  .on('line', (line) => {
    work = work
      .then(() => handle(JSON.parse(line)))
      .catch((error: unknown) => {
        answer({ error: String(error) });
      });
  })
  .on('close', () => {
    work.then(async () => {
      await server?.close();
      process.exit(0);
    });
  });
process.on('SIGTERM', () => process.stdin.destroy());
