import { defineConfig } from 'vitest/config';

/** The bench's own tests (`pnpm --filter @workq/bench test`): the repository's suite leaves the bench out. */
export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    testTimeout: 120_000,
  },
});
