/** A JSON answer of the plain HTTP API, read field by field by the assertions. */
// biome-ignore lint/suspicious/noExplicitAny: each answer's shape is what the assertions check.
export type JsonAnswer = any;

/** One call of the plain HTTP API over `fetch` with a bearer token: a JSON body when given, the answer parsed. */
export async function jsonCall(
  baseUrl: string,
  token: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: JsonAnswer }> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as JsonAnswer };
}
