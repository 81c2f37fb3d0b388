/**
 * Import rules the tree must keep (run by `pnpm lint`): no cycles, and
 * dependencies that point one way — transport → application → core.
 */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Modules form no cycles, type-only imports included.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'core-stands-alone',
      severity: 'error',
      comment: 'The engine knows nothing of the SDK or the server.',
      from: { path: '^packages/core/src' },
      to: { path: '^(packages/sdk|packages/schemas|apps)/' },
    },
    {
      name: 'core-root-is-browser-safe',
      severity: 'error',
      comment: "@workq/core's root entry (the contract DSL) loads no engine, store or driver.",
      from: { path: '^packages/core/src/(contract/|errors\\.ts|jobs\\.ts|wire-transformer\\.ts|index\\.ts)' },
      to: { path: '^packages/core/src/(engine|stores)/' },
    },
    {
      name: 'stores-do-not-reach-each-other',
      severity: 'error',
      comment: 'Each store imports only its own driver and what stores share.',
      from: { path: '^packages/core/src/stores/([^/]+)/' },
      to: { path: '^packages/core/src/stores/([^/]+)/', pathNot: '^packages/core/src/stores/($1|shared)/' },
    },
    {
      name: 'server-is-not-a-client',
      severity: 'error',
      comment: 'The server depends on core only: never on the SDK or a catalog.',
      from: { path: '^apps/queue-server/src' },
      to: { path: '^packages/(sdk|schemas)/' },
    },
    {
      name: 'sdk-needs-only-server-types',
      severity: 'error',
      comment: "The SDK may name the server's API types, never load its code.",
      from: { path: '^packages/sdk/src' },
      to: { path: '^apps/queue-server/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'cli-is-an-sdk-client',
      severity: 'error',
      comment: 'The workq command reaches the server through the SDK: it imports no server code, nor its types.',
      from: { path: '^packages/cli/src' },
      to: { path: '^(apps|packages/schemas)/' },
    },
    {
      name: 'nothing-imports-the-cli',
      severity: 'error',
      comment: 'The workq command sits on top: no package builds on it.',
      from: { path: '^(packages/(core|sdk|schemas)|apps)/' },
      to: { path: '^packages/cli/' },
    },
    {
      name: 'application-does-not-import-transport',
      severity: 'error',
      comment: "The server's transport (router/, http/) calls its application modules, never the other way.",
      from: { path: '^apps/queue-server/src/(?!router/|http/|start-server\\.ts|index\\.ts|cli\\.ts)' },
      to: { path: '^apps/queue-server/src/(router|http)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist)/|\\.test\\.ts$|\\.test-d\\.ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.base.json' },
    combinedDependencies: true,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'types', 'node', 'default'],
    },
  },
};
