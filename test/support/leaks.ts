import { expect } from 'vitest';

/** Stack frames, source paths and database wording (PostgreSQL's and MySQL's) that must never reach a client. */
export const LEAKS: readonly RegExp[] = [
  /\bat [\w.<>]+ \(/,
  /\bat (file:|\/|node:)/,
  /\/work\//,
  /node_modules/,
  /\.ts:\d+/,
  /"stack"/,
  /SQLSTATE|syntax error|violates|relation "|invalid byte sequence|unsupported Unicode|jsonb|postgres/i,
  // MySQL's error codes are upper case (ER_DUP_ENTRY): matched as written, so a path a client sent, echoed back, is not one.
  /\bER_[A-Z_]+/,
  /sqlMessage|mysql|mariadb/i,
];

/** Fails when `text` carries any of the `LEAKS`. */
export function expectNoLeak(text: string): void {
  for (const leak of LEAKS) expect(text).not.toMatch(leak);
}
