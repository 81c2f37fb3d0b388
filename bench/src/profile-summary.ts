/** Prints the functions with the most self time in a `.cpuprofile` (V8 CPU profile): `tsx src/profile-summary.ts FILE [N]`. */
import { readFile } from 'node:fs/promises';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
const [file, top = '25'] = process.argv.slice(2);
if (!file) throw new Error('usage: tsx src/profile-summary.ts FILE.cpuprofile [N]');
const profile = JSON.parse(await readFile(file, 'utf8')) as {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
};
const selfMs = new Map<number, number>();
profile.samples.forEach((id, i) => {
  selfMs.set(id, (selfMs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
});
const byFunction = new Map<string, number>();
let totalMs = 0;
for (const node of profile.nodes) {
  const ms = selfMs.get(node.id) ?? 0;
  totalMs += ms;
  const where = node.callFrame.url
    .replace(/^.*node_modules\/(\.pnpm\/)?/, '')
    .replace(/^file:\/\/.*\/work\/main\//, '');
  const key = `${node.callFrame.functionName || '(anonymous)'} ${where}:${node.callFrame.lineNumber + 1}`;
  byFunction.set(key, (byFunction.get(key) ?? 0) + ms);
}
console.log(`total sampled ${totalMs.toFixed(0)} ms`);
for (const [key, ms] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, Number(top))) {
  console.log(`${ms.toFixed(0).padStart(7)} ms ${((ms / totalMs) * 100).toFixed(1).padStart(5)}%  ${key}`);
}
