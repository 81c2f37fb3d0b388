/**
 * Whether a `content-type` header names JSON: `application/json` in any
 * case, with or without parameters such as `charset=utf-8`. Bodies are read
 * as UTF-8 whatever the charset says, as JSON requires.
 */
export function isJsonContentType(header: string | undefined): boolean {
  if (header === undefined) return false;
  const semicolon = header.indexOf(';');
  return (semicolon === -1 ? header : header.slice(0, semicolon)).trim().toLowerCase() === 'application/json';
}
