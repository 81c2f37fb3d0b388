import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const POLL_MS = 250;

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Runs `run` while holding a machine-wide lock named `name`, so timing
 * measurements of different test files (run in parallel by vitest) do not
 * compete for the same CPU cores. A lock left by a process that died is taken over.
 */
export async function runExclusive<T>(name: string, run: () => Promise<T>): Promise<T> {
  const dir = join(tmpdir(), `${name}.lock`);
  for (;;) {
    try {
      await mkdir(dir);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = Number(await readFile(join(dir, 'pid'), 'utf8').catch(() => ''));
      if (owner > 0 && !isAlive(owner)) await rm(dir, { recursive: true, force: true });
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }
  try {
    await writeFile(join(dir, 'pid'), String(process.pid));
    return await run();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
