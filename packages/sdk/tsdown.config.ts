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
  // The server's API types are inlined from its built declarations, so the SDK's types need no server installed.
  tsconfig: 'tsconfig.build.json',
  dts: { resolve: ['@workq/queue-server'] },
  sourcemap: true,
  clean: true,
});
