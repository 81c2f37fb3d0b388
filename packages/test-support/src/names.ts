/** A database URL as a test may print it: any password replaced by `***`. */
export function shownUrl(url: string): string {
  return url.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@');
}

/** A name no other test run uses: `prefix` and eight random characters. */
export function uniqueName(prefix: string): string {
  return `${prefix}_${Math.random().toString(36).slice(2, 10)}`;
}
