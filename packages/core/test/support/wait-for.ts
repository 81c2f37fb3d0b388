/** Polls `read` until it gives a value other than `undefined`, and resolves to it; fails after `timeoutMs`. */
export async function waitFor<T>(read: () => T | undefined | Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`nothing to read within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Polls `predicate` until it holds; fails after `timeoutMs`. */
export async function until(predicate: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  await waitFor(async () => ((await predicate()) ? true : undefined), timeoutMs);
}
