/** The value of one unlabelled metric in Prometheus text; `undefined` when the text has none. */
export function metric(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

/** One unlabelled metric of the server at `url`'s `/metrics`, read with `token`; `NaN` when it shows none. */
export async function scrapedMetric(url: string, token: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
  return metric(text, name) ?? Number.NaN;
}
