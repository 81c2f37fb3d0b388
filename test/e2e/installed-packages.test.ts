import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, until } from '@workq/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleForBrowser, NODE_BUILTINS } from '../support/browser-bundle.ts';
import { repositoryCodeBlocks, SCRIPT_LANGS } from '../support/doc-code-blocks.ts';
import { ChildProcesses, exited, listeningUrl, REPO_ROOT } from '../support/processes.ts';

const run = promisify(execFile);
const PACKED = join(REPO_ROOT, 'packed');
const FIXTURE = join(REPO_ROOT, 'test', 'fixtures', 'foreign-project');
const PACKAGES = ['core', 'sdk', 'queue-server', 'cli'] as const;
const tarball = (name: (typeof PACKAGES)[number]) => join(PACKED, `workq-${name}-0.1.0.tgz`);
const bin = (name: string) => join(REPO_ROOT, 'node_modules', '.bin', name);

/** Runs a command to completion; rejects with its output when it exits non-zero. */
async function sh(file: string, args: readonly string[], cwd: string, timeoutMs = 120_000): Promise<string> {
  try {
    const { stdout, stderr } = await run(file, [...args], { cwd, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 });
    return `${stdout}${stderr}`;
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`${file} ${args.join(' ')} failed:\n${stdout}${stderr}`);
  }
}

/** Waits until the server at `url` answers /healthz. */
const untilHealthy = (url: string, timeoutMs: number) =>
  until(
    () =>
      fetch(`${url}/healthz`).then(
        (r) => r.ok,
        () => false,
      ),
    timeoutMs,
    100,
  );

const npmInstall = (cwd: string, specs: readonly string[]) =>
  sh('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...specs], cwd);

beforeAll(async () => {
  await sh('sh', [join(REPO_ROOT, 'scripts', 'pack-all.sh')], REPO_ROOT);
});

describe('the packed packages', () => {
  it('pack:all writes one tarball per publishable package', () => {
    expect(readdirSync(PACKED).sort()).toEqual(PACKAGES.map((name) => `workq-${name}-0.1.0.tgz`).sort());
  });

  it.each(PACKAGES)('@workq/%s passes publint and arethetypeswrong', async (name) => {
    const publint = await sh(bin('publint'), ['run', '--strict', tarball(name)], REPO_ROOT);
    expect(publint).toContain('All good!');
    // ESM only: CommonJS `require` and the pre-exports `node10` resolution are out of scope.
    await sh(bin('attw'), [tarball(name), '--profile', 'esm-only', '--no-emoji', '--no-color'], REPO_ROOT);
  });

  it.each(PACKAGES)('@workq/%s has no workspace ranges and no TypeScript sources', async (name) => {
    const listing = await sh('tar', ['tzf', tarball(name)], REPO_ROOT);
    expect(listing.split('\n').filter((file) => /\.ts$/.test(file) && !file.endsWith('.d.ts'))).toEqual([]);
    const manifest = JSON.parse(await sh('tar', ['xzf', tarball(name), '-O', 'package/package.json'], REPO_ROOT));
    expect(JSON.stringify(manifest)).not.toMatch(/workspace:|\.\/src\//);
    expect(manifest.private).toBeUndefined();
    expect(Object.keys(manifest.dependencies ?? {})).not.toContain('tsx');
  });

  it.each([
    ['core', 'packages/core'],
    ['sdk', 'packages/sdk'],
    ['queue-server', 'apps/queue-server'],
  ])("the repository's @workq/%s exports its build alone: JavaScript with types, no TypeScript source", (_, dir) => {
    const root = join(REPO_ROOT, dir);
    const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    const entries = Object.entries(manifest.exports as Record<string, string | Record<string, string>>).filter(
      ([subpath]) => subpath !== './package.json',
    );
    expect(entries.length).toBeGreaterThan(0);
    for (const [subpath, conditions] of entries) {
      // The order is what a resolver walks: types first, then the JavaScript.
      expect(Object.keys(conditions), subpath).toEqual(['types', 'default']);
      const { types, default: built } = conditions as Record<string, string>;
      expect(types, subpath).toMatch(/^\.\/dist\/.+\.d\.ts$/);
      expect(built, subpath).toMatch(/^\.\/dist\/.+\.js$/);
      // pack:all built them (beforeAll).
      for (const file of [types, built]) expect(existsSync(join(root, String(file))), file).toBe(true);
    }
    // Nor do the package's own imports, its types or its bin name a source: the repository reaches its sources
    // through tsconfig paths, not through the manifest.
    const { exports: _exports, ...rest } = manifest;
    expect(JSON.stringify(rest)).not.toMatch(/\.\/src\//);
  });

  it('@workq/queue-server ships the built dashboard', async () => {
    const listing = (await sh('tar', ['tzf', tarball('queue-server')], REPO_ROOT)).split('\n');
    expect(listing).toContain('package/dist/ui/index.html');
    expect(listing.filter((file) => /^package\/dist\/ui\/assets\/index-[\w-]+\.js$/.test(file))).toHaveLength(1);
  });
});

describe('a service outside the repository', () => {
  const processes = new ChildProcesses();
  let project: string;
  let serverUrl: string;

  beforeAll(async () => {
    project = mkdtempSync(join(tmpdir(), 'workq-foreign-'));
    cpSync(FIXTURE, project, { recursive: true });
    // First as a producer service would: the SDK, core and zod, without the server.
    await npmInstall(project, [tarball('core'), tarball('sdk'), 'zod@4.6.7', 'typescript@5.9.3', '@types/node@20']);
  });

  afterAll(async () => {
    await processes.killAll();
    if (project) rmSync(project, { recursive: true, force: true });
  });

  it('type-checks a producer against the SDK without the server installed, and its types bite', async () => {
    expect(existsSync(join(project, 'node_modules', '@workq', 'queue-server'))).toBe(false);
    // skipLibCheck is off in the fixture: the packages' own declarations are checked too.
    await sh(join(project, 'node_modules', '.bin', 'tsc'), ['-p', '.', '--noEmit'], project);
    // tsc refuses an unused @ts-expect-error, so passing means each wrong call below one is a compile error.
    const producerSource = readFileSync(join(project, 'src', 'producer.ts'), 'utf8');
    expect(producerSource.match(/@ts-expect-error/g)).toHaveLength(4);
  });

  it('installs the server, compiles, and runs a producer and a worker with plain node against npx workq-server', async () => {
    await npmInstall(project, [tarball('queue-server')]);
    expect(existsSync(join(project, 'node_modules', 'tsx'))).toBe(false);
    await sh(join(project, 'node_modules', '.bin', 'tsc'), ['-p', '.'], project);

    const server = processes.spawn('npx', ['workq-server', '--port', '0', '--store', 'pglite://memory'], {
      cwd: project,
    });
    serverUrl = await listeningUrl(server);
    await untilHealthy(serverUrl, 60_000);
    // The dashboard, from the installed package's own files: the page, its client routes and its hashed assets.
    const page = await fetch(`${serverUrl}/ui/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await page.text();
    expect(html).toContain('<div id="app"></div>');
    const script = /src="(\/ui\/assets\/index-[\w-]+\.js)"/.exec(html)?.[1];
    const asset = await fetch(`${serverUrl}${script}`);
    expect(asset.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(asset.headers.get('cache-control')).toContain('immutable');
    expect(await (await fetch(`${serverUrl}/ui/jobs/some-id`)).text()).toBe(html);

    const worker = processes.spawn(process.execPath, ['dist/worker.js', serverUrl], { cwd: project });
    const producer = processes.spawn(process.execPath, ['dist/producer.js', serverUrl], { cwd: project });
    const outcome = await exited(producer);
    expect(outcome, producer.output()).toEqual({ code: 0, signal: null });
    expect(JSON.parse(producer.output().trim())).toEqual({ bytes: [8051, 8052, 8053] });

    processes.signal(worker, 'SIGTERM');
    expect(await exited(worker)).toEqual({ code: 0, signal: null });
    processes.signal(server, 'SIGTERM', { group: true });
    await exited(server);
    expect(server.output()).toMatch(/workq queue server listening/);
  });

  it('runs the workq command with plain node on the compiled catalog, and says what a TypeScript catalog needs', async () => {
    await npmInstall(project, [tarball('cli')]);
    const snapshot = await sh(
      'npx',
      ['workq', 'schemas', 'snapshot', '--catalog', 'dist/catalog.js', '--snapshot', 's.json'],
      project,
    );
    expect(snapshot).toMatch(/wrote s\.json: 1 job types, 2 versions/);
    const check = await sh(
      'npx',
      ['workq', 'schemas', 'check', '--catalog', 'dist/catalog.js', '--snapshot', 's.json'],
      project,
    );
    expect(check).toMatch(/compatible/);
    await expect(
      sh('npx', ['workq', 'schemas', 'check', '--catalog', 'src/catalog.ts', '--snapshot', 's.json'], project),
    ).rejects.toThrow(/is TypeScript.*install tsx/);
  });

  it('bundles the installed SDK and the catalog for a browser with no Node built-in or driver', async () => {
    const { inputs } = await bundleForBrowser(join(project, 'src', 'browser-entry.ts'), { cwd: project });
    expect(inputs.some((input) => input.includes('node_modules/@workq/sdk/dist/'))).toBe(true);
    expect(inputs.some((input) => input.includes('http/default-fetch.js'))).toBe(true);
    expect(inputs.filter((input) => input.includes('node-fetch') || NODE_BUILTINS.has(input))).toEqual([]);
    for (const driver of ['mongodb', 'pg', 'mysql2', '@electric-sql/pglite'])
      expect(inputs.filter((input) => input.includes(`node_modules/${driver}/`))).toEqual([]);
  });
});

describe('the README, followed literally in a new npm project', () => {
  const processes = new ChildProcesses();
  const blocks = repositoryCodeBlocks(REPO_ROOT);
  const readme = blocks.filter((block) => block.doc === 'README.md');
  const claimed = (kind: string) => readme.filter((block) => block.claim?.kind === kind);
  let parent: string;
  let project: string;
  let port: number;

  beforeAll(async () => {
    parent = mkdtempSync(join(tmpdir(), 'workq-readme-'));
    // The README's setup commands, run as written with $WORKQ at this clone, by an npm whose cache is warm
    // and that skips the audit; its first, `pack:all`, is the same script the file's beforeAll ran.
    const [setup] = claimed('run');
    if (!setup) throw new Error('README has no <!-- code: run sh --> block');
    const commands = setup.code.split('\n').filter((line) => line.trim() && !line.includes('pack:all'));
    const npmConfig = 'export npm_config_prefer_offline=true npm_config_audit=false npm_config_fund=false';
    const script = [`export WORKQ='${REPO_ROOT}'`, npmConfig, ...commands].join('\n');
    await sh('bash', ['-ec', script], parent, 180_000).catch((error: Error) => {
      throw new Error(`README setup failed:\n${error.message}`);
    });
    const [made] = readdirSync(parent);
    project = join(parent, made ?? '');
    port = await freePort();
    for (const block of readme) {
      const code = block.code.replaceAll('http://127.0.0.1:4000', `http://127.0.0.1:${port}`);
      if (block.claim?.kind === 'file') writeInto(project, block.claim.path, code);
      if (block.claim?.kind === 'check') writeInto(project, `snippets/readme-${block.line}.ts`, code);
    }
  }, 240_000);

  afterAll(async () => {
    await processes.killAll();
    if (parent) rmSync(parent, { recursive: true, force: true });
  });

  it('marks every TypeScript block of the README and docs as checked, a file, or a fragment', () => {
    const unmarked = blocks.filter((block) => SCRIPT_LANGS.has(block.lang) && block.claim === undefined);
    expect(unmarked.map((block) => `${block.doc}:${block.line}`)).toEqual([]);
    expect(claimed('file').map((block) => block.claim)).toEqual([
      { kind: 'file', path: 'src/catalog.ts' },
      { kind: 'file', path: 'src/worker.ts' },
      { kind: 'file', path: 'src/producer.ts' },
    ]);
    expect(claimed('check').length).toBeGreaterThan(0);
  });

  it('compiles every block that claims to, under the tsconfig tsc --init writes', async () => {
    const manifest = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8'));
    expect(manifest.type).toBe('module');
    // stdout alone: npm may add a notice on stderr (CI sets CI=true), which is no part of the JSON.
    const { stdout: shown } = await run('npx', ['tsc', '--showConfig'], { cwd: project, timeout: 120_000 });
    const config = JSON.parse(shown);
    expect(config.compilerOptions).toMatchObject({
      strict: true,
      exactOptionalPropertyTypes: true,
      noUncheckedIndexedAccess: true,
      verbatimModuleSyntax: true,
      module: 'nodenext',
      types: ['node'],
    });
    await sh('npx', ['tsc', '--noEmit'], project);
  });

  it('runs its terminals: the server on its embedded store, a worker left running, and a producer it serves', async () => {
    const [terminals] = claimed('terminals');
    const [serverLine, workerLine, producerLine] = (terminals?.code ?? '').split('\n').map(withoutComment);
    if (!serverLine || !workerLine || !producerLine) throw new Error('README has no three terminals');
    const url = `http://127.0.0.1:${port}`;
    const server = processes.spawn('bash', ['-c', `exec ${serverLine} --port ${port}`], { cwd: project });
    await untilHealthy(url, 90_000);
    expect(server.output()).toContain(`"dashboard":"${url}/ui/"`);
    const dataDir = join(project, '.workq');
    // No MongoDB binary can be had on these machines: the fallback line says so, and where the data is.
    expect(server.output()).toMatch(
      server.output().includes('embedded MongoDB store')
        ? dataDir
        : `so the embedded store is PostgreSQL (PGlite), its data under ${join(dataDir, 'pglite')}.`,
    );
    const root = await fetch(`${url}/`, { redirect: 'manual' });
    expect(root.headers.get('location')).toBe('/ui/');

    const worker = processes.spawn('bash', ['-c', `exec ${workerLine}`], { cwd: project });
    const producer = processes.spawn('bash', ['-c', `exec ${producerLine}`], { cwd: project });
    expect(await exited(producer), producer.output()).toEqual({ code: 0, signal: null });
    expect(producer.output()).toContain('{ bytes: 1024 }');
    expect(worker.output()).toContain('converting in.png');
    // The worker keeps running after its job, until Ctrl-C (SIGINT to its terminal's process group).
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(worker.exitCode, worker.output()).toBeNull();
    processes.signal(worker, 'SIGINT', { group: true });
    await exited(worker);
    expect(worker.output()).not.toMatch(/error/i);
    processes.signal(server, 'SIGTERM', { group: true });
    await exited(server);
  }, 150_000);
});

/** Writes `code` at `path` inside `dir`, making its folders. */
function writeInto(dir: string, path: string, code: string): void {
  mkdirSync(dirname(join(dir, path)), { recursive: true });
  writeFileSync(join(dir, path), code);
}

/** A shell line without its trailing `# comment`. */
function withoutComment(line: string): string {
  return line.replace(/\s+#.*$/, '').trim();
}
