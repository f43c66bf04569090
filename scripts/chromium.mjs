// Debian's headless chromium through playwright-core, launched one way for
// the browser tests (tests/browser/pages.test.mjs) and the page screenshots
// of the docs (scripts/screenshot_page.mjs). SURGE_CHROMIUM overrides the
// binary (default /usr/bin/chromium).
import path from 'node:path';
import { pathToFileURL } from 'node:url';
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

// Opens the HTML file `file` in a new page of `browser`, collecting console
// errors, page errors and failed requests into `errors`, and waits until
// plotly has drawn into every element whose id is in `plotIds`.
export async function openPage(browser, file, plotIds, viewport = { width: 1400, height: 900 }) {
  const page = await browser.newPage({ viewport });
  const errors = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('requestfailed', (r) => errors.push(`request failed: ${r.url()}`));
  await page.goto(pathToFileURL(path.resolve(file)).href);
  await page.waitForFunction(
    (ids) =>
      ids.every((id) => {
        const gd = document.getElementById(id);
        return gd && gd._fullLayout && gd.querySelector('.main-svg');
      }),
    plotIds,
  );
  return { page, errors };
}
