import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where the dashboard is served. */
export const DASHBOARD_PATH = '/ui';

/**
 * The dashboard's built files: `ui/` beside the bundled server in `dist/`
 * (the published package), or the package's `dist/ui/` when the server runs
 * from its sources. `undefined` when neither holds a built dashboard.
 */
function findDashboardRoot(): string | undefined {
  for (const candidate of ['./ui/', '../../dist/ui/']) {
    const dir = fileURLToPath(new URL(candidate, import.meta.url));
    if (existsSync(join(dir, 'index.html'))) return resolve(dir);
  }
  return undefined;
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

/**
 * The page reaches only its own origin; the token it holds is sent as a
 * header to the server's API, never put in a URL, never sent elsewhere.
 */
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

/** Vite names the files under `assets/` by their content's hash: they never change, so they are cached for good. */
const HASHED_ASSETS = `assets${sep}`;

let root: string | undefined;

/**
 * Serves the dashboard: `GET /ui/<file>` answers a built file with its
 * content type; any other path under `/ui/` without a file extension is a
 * client route and answers `index.html`. Paths that leave the dashboard's
 * folder (`..`, encoded or not) are refused. The files are public: every
 * figure on the page comes from the API, which asks the page's token for the
 * `admin` scope.
 */
export async function serveDashboard(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    return void res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('Method not allowed.');
  }
  if (path === DASHBOARD_PATH) return void res.writeHead(308, { location: `${DASHBOARD_PATH}/` }).end();
  root ??= findDashboardRoot();
  if (root === undefined) {
    return void res
      .writeHead(404, { 'content-type': 'text/plain; charset=utf-8' })
      .end(
        'The dashboard is not built into this server: build it with `pnpm build` (turbo builds it before the server).',
      );
  }
  let relative: string;
  try {
    relative = decodeURIComponent(path.slice(DASHBOARD_PATH.length + 1));
  } catch {
    return void res.writeHead(400, { 'content-type': 'text/plain' }).end('The path is not valid percent-encoding.');
  }
  const file = resolve(root, relative);
  if (relative.includes('\0') || (file !== root && !file.startsWith(root + sep))) {
    return void res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found.');
  }
  const found = await stat(file).then(
    (info) => info.isFile(),
    () => false,
  );
  if (found) return sendFile(req, res, file, file.startsWith(join(root, HASHED_ASSETS)));
  // A missing file is a 404; a path without an extension is one of the page's own routes.
  if (extname(relative) !== '') return void res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found.');
  return sendFile(req, res, join(root, 'index.html'), false);
}

async function sendFile(req: IncomingMessage, res: ServerResponse, file: string, immutable: boolean): Promise<void> {
  const body = await readFile(file);
  res.writeHead(200, {
    ...SECURITY_HEADERS,
    'content-type': CONTENT_TYPES[extname(file)] ?? 'application/octet-stream',
    'content-length': body.length,
    'cache-control': immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}
