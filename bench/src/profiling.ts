import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { percentile } from './stats.ts';
import { roundTripTimings } from './systems/round-trips.ts';

/** Starts a V8 CPU profile of this process; the returned function writes it (a `.cpuprofile` file). */
export async function startCpuProfile(): Promise<(path: string) => Promise<void>> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  return async (path) => {
    const { profile } = await session.post('Profiler.stop');
    await writeFile(path, JSON.stringify(profile));
    session.disconnect();
  };
}

/** The per-round-trip timings gathered with `--profile`, as a markdown table. */
export function roundTripsMarkdown(): string {
  const lines = [
    '# Round-trip timings (--profile)',
    '',
    '| round trip | calls | total ms | mean ms | p50 ms | p99 ms |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
  ];
  const entries = [...roundTripTimings()].sort((a, b) => b[1].totalMs - a[1].totalMs);
  for (const [key, t] of entries) {
    lines.push(
      `| ${key} | ${t.calls} | ${t.totalMs.toFixed(0)} | ${(t.totalMs / t.calls).toFixed(3)} | ${percentile(t.samples, 50).toFixed(3)} | ${percentile(t.samples, 99).toFixed(3)} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}
