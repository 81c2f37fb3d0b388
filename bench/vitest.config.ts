import { defineConfig } from 'vitest/config';

/** The bench's own tests (`pnpm --filter @workq/bench test`): the repository's suite leaves the bench out. */
export default defineConfig({
  // The workspace packages resolve to their sources, as in the repository's suite (see its vitest.config.ts).
  ssr: { resolve: { conditions: ['workq-source', 'node', 'development|production'] } },
  test: {
    include: ['src/**/*.test.ts'],
    testTimeout: 120_000,
  },
});
