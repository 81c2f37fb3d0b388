/**
 * Polls `read` every `everyMs` until it gives a value other than `undefined`, and resolves to it;
 * rejects after `timeoutMs` ("condition not met").
 */
export async function waitFor<T>(
  read: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 10_000,
  everyMs = 10,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** Resolves once `predicate()` holds, polling every `everyMs`; rejects after `timeoutMs`. */
export async function until(
  predicate: () => boolean | Promise<boolean>,
  timeoutMs = 5_000,
  everyMs = 10,
): Promise<void> {
  await waitFor(async () => ((await predicate()) ? true : undefined), timeoutMs, everyMs);
}
