import { defineConfig } from 'tsdown';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    'http/node-fetch': 'src/http/node-fetch.ts',
    'http/default-fetch': 'src/http/default-fetch.ts',
  },
  format: 'esm',
  platform: 'neutral',
  target: 'es2022',
  // `#default-fetch` is resolved by the installing project through the package's `imports`: Node gets the
  // node:http client, browsers and other runtimes their own fetch.
  deps: { neverBundle: ['#default-fetch', /^node:/] },
  // The server's API types (the router the admin types are inferred from) are inlined from its built
  // declarations (`tsconfig.build.json` maps the import to them), so the SDK's types need no server installed.
  tsconfig: 'tsconfig.build.json',
  dts: { resolve: ['@workq/queue-server'] },
  // A declaration that cannot be inlined is only a warning to the bundler, and would ship a `.d.ts` naming a
  // type it never declares: any warning fails the build instead.
  failOnWarn: true,
  checks: { pluginTimings: false },
  sourcemap: true,
  clean: true,
});
