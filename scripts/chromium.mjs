// Debian's headless chromium through playwright-core, launched one way for
// the browser tests (tests/browser/pages.test.mjs) and the page screenshots
// of the docs (scripts/screenshot_page.mjs). SURGE_CHROMIUM overrides the
// binary (default /usr/bin/chromium).
import { chromium } from 'playwright-core';

export function launchChromium() {
  return chromium.launch({
    executablePath: process.env.SURGE_CHROMIUM || '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
