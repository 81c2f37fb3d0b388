/** The value of one unlabelled metric in Prometheus text; `undefined` when the text has none. */
export function metric(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}
