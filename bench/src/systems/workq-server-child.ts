/**
 * The workq queue server as a child process of the bench: starts on a free
 * port over the store URL in argv[2], prints `{"url": …}` on one line, and
 * stops when its stdin closes (so it never outlives the bench).
 */
import { startServer } from '@workq/queue-server';

const store = process.argv[2];
const quiet = { info: () => undefined, warn: () => undefined, error: (m: string, f?: object) => console.error(m, f) };
const server = await startServer({ store, port: 0, host: '127.0.0.1', logger: quiet });
process.stdout.write(`${JSON.stringify({ url: server.url })}\n`);
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await server.close();
  process.exit(0);
};
process.stdin.on('end', stop);
process.stdin.on('close', stop);
process.on('SIGTERM', stop);
process.stdin.resume();
