import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

/** Debian's Chromium: the browser tests drive it, never a downloaded one (`.ci/run` installs it). */
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-sync',
];

/**
 * Whether the browser tests of `suite` must be skipped: Chromium is missing
 * outside CI (in CI a missing browser fails them instead). Prints why.
 */
export function chromiumMissing(suite: string): boolean {
  const missing = !existsSync(CHROMIUM) && !process.env.CI;
  if (missing) console.log(`${suite}: skipped — ${CHROMIUM} is missing (apt-get install chromium)`);
  return missing;
}

/** Starts Chromium headless. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}
