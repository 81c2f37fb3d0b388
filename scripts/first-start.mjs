#!/usr/bin/env node
// Measures the first start of the queue server on its embedded default store: a fresh data directory, as a
// new user's `.workq/` is, timed from spawning the command until /healthz answers, with the time of each log
// line on the way. Runs it `--runs n` times (default 3), each in a new directory, and prints the median.
//
//   node scripts/first-start.mjs [--runs n] [-- <command…>]
//
// The default command is this repository's `workq-server` (apps/queue-server/bin, through tsx); give another,
// e.g. `-- npx workq-server` inside a project that installed the packed package. `--data-dir` and `--port`
// are appended to it.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const separator = args.indexOf('--');
const command =
  separator >= 0
    ? args.slice(separator + 1)
    : [process.execPath, join(repoRoot, 'apps/queue-server/bin/workq-server.js')];
const runsAt = args.indexOf('--runs');
const runs = runsAt >= 0 && runsAt < (separator >= 0 ? separator : args.length) ? Number(args[runsAt + 1]) : 3;

function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

async function healthy(url) {
  try {
    return (await fetch(`${url}/healthz`)).ok;
  } catch {
    return false;
  }
}

/** One first start: milliseconds until /healthz answers, and each log line with its offset. */
async function firstStart() {
  const dataDir = mkdtempSync(join(tmpdir(), 'workq-first-start-'));
  const port = await freePort();
  const started = performance.now();
  const child = spawn(command[0], [...command.slice(1), '--data-dir', dataDir, '--port', String(port)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const lines = [];
  const note = (chunk) => {
    for (const line of String(chunk).split('\n').filter(Boolean)) {
      lines.push(`${String(Math.round(performance.now() - started)).padStart(6)} ms  ${line.slice(0, 200)}`);
    }
  };
  child.stdout.on('data', note);
  child.stderr.on('data', note);
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  try {
    while (!(await healthy(`http://127.0.0.1:${port}`))) {
      if (exited) throw new Error(`the server exited before it was ready:\n${lines.join('\n')}`);
      if (performance.now() - started > 120_000) throw new Error('the server was not ready within 120 s');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return { readyMs: Math.round(performance.now() - started), lines };
  } finally {
    if (!exited) {
      process.kill(-child.pid, 'SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const times = [];
for (let run = 1; run <= runs; run++) {
  const { readyMs, lines } = await firstStart();
  times.push(readyMs);
  console.log(`run ${run}: ready after ${readyMs} ms\n${lines.join('\n')}\n`);
}
times.sort((a, b) => a - b);
console.log(`first start, median of ${runs}: ${times[Math.floor(times.length / 2)]} ms (${times.join(', ')} ms)`);
