import { existsSync } from 'node:fs';

/** The Chromium the console's browser tests drive (Debian's package; `CHROMIUM_PATH` moves it). */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const HAS_CHROMIUM = existsSync(CHROMIUM);

/** Without the background-networking flags Chromium dials out, and a closed network refuses it. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Says on the run's output why `what` is skipped on a machine without Chromium. */
export function sayIfNoChromium(what: string): void {
  if (!HAS_CHROMIUM) console.warn(`${what}, no Chromium at ${CHROMIUM} (install chromium or set CHROMIUM_PATH)`);
}
