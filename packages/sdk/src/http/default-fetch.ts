/** Outside Node (browsers, workers, other runtimes) the SDK uses the platform's own `fetch`. */
export const defaultFetch: typeof fetch | undefined = undefined;
