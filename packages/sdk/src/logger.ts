/**
 * Where a client and its workers say what happens to them: connection trouble and its end, a worker that
 * stops, each failed attempt. The queue server's `logger` option has the same shape, so one logger can serve
 * both. `fields` carry what a log pipeline may index (URL, job id, attempt, the error itself).
 */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** Prints nothing: for `logger: false`. */
export const silentLogger: Logger = { info() {}, warn() {}, error() {} };

type Level = keyof Logger;

/**
 * The default logger: one line per event on the platform console, `workq <level>: <message>`, the fields
 * after it as `key=value`, and an `error` field's stack (the handler's own, for a failed attempt) below it.
 */
export const consoleLogger: Logger = {
  info: (message, fields) => print('info', message, fields),
  warn: (message, fields) => print('warn', message, fields),
  error: (message, fields) => print('error', message, fields),
};

function print(level: Level, message: string, fields: Record<string, unknown> | undefined): void {
  const { error, ...rest } = fields ?? {};
  const pairs = Object.entries(rest)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
  const line = [`workq ${level}: ${message}`, ...pairs].join(' ');
  const stack = error instanceof Error && typeof error.stack === 'string' ? `\n${indent(error.stack)}` : '';
  // The console's method of the same level, which a browser's devtools filter by.
  console[level](line + stack);
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `    ${line.trimStart()}`)
    .join('\n');
}
