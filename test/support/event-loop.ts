import { monitorEventLoopDelay } from 'node:perf_hooks';

/**
 * Runs `call`, resolving to its outcome and the longest this process's event
 * loop was held meanwhile, in milliseconds (a queue server started in the
 * test's own process counts too): the loop's longest delay, or, when less,
 * the CPU time the process used, since a loop held up only because the
 * machine ran other processes was not held by this one.
 */
export async function blockedDuring<T>(call: () => Promise<T>): Promise<{ outcome: T; blockedMs: number }> {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const cpuBefore = process.cpuUsage();
  try {
    const outcome = await call();
    // One more sample after the call, so a block at its very end is seen.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const cpu = process.cpuUsage(cpuBefore);
    return { outcome, blockedMs: Math.min(delay.max / 1e6, (cpu.user + cpu.system) / 1e3) };
  } finally {
    delay.disable();
  }
}
