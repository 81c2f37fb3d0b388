import { defineConfig } from 'vitest/config';
import repositorySuite from '../vitest.config.ts';

/** The bench's own tests (`pnpm --filter @workq/bench test`): the repository's suite leaves the bench out. */
export default defineConfig({
  // The workspace packages resolve to their sources, as in the repository's suite (see its vitest.config.ts).
  resolve: repositorySuite.resolve,
  test: {
    include: ['src/**/*.test.ts'],
    testTimeout: 120_000,
  },
});
