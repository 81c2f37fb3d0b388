import { defineConfig } from 'vitest/config';

/**
 * The workspace packages export their built `dist` first; `workq-source`, ahead of it in each package's `exports`,
 * points the suite at their TypeScript sources instead, so tests that import a package by name and tests that
 * import its sources by path share one copy of each module, and a test needs no build to see a change. The rest
 * are Vitest's own server conditions: it passes these to Node in its workers too, where `module` would load
 * packages' bundler-only builds.
 */
const SOURCE_CONDITIONS = ['workq-source', 'node', 'development|production'];

export default defineConfig({
  ssr: { resolve: { conditions: SOURCE_CONDITIONS } },
  test: {
    include: ['packages/*/{src,test}/**/*.test.ts', 'apps/*/{src,test}/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['**/node_modules/**', 'bench/**'],
    reporters: ['default', ['json', { outputFile: '.vitest-report.json' }]],
    // Two test files at a time: most files wait on databases and child processes, so a second one
    // fills the idle core; the suite's timing checks measure CPU time, not the wall clock.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
    typecheck: {
      enabled: true,
      include: ['packages/*/{src,test}/**/*.test-d.ts', 'apps/*/{src,test}/**/*.test-d.ts', 'test/**/*.test-d.ts'],
      tsconfig: './tsconfig.typetests.json',
      ignoreSourceErrors: true,
    },
  },
});
