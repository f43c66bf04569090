// Screenshots a surge page (or any URL) in Debian's chromium through
// playwright-core, as the browser tests open the pages
// (tests/browser/pages.test.mjs). Used for the pictures in docs/images/.
//
//   node scripts/screenshot_page.mjs PAGE OUT.png [SELECTOR] [options]
//
// PAGE      an HTML file (a run folder's page) or an http(s):// URL (e.g. the
//           live http://127.0.0.1:9464/metrics of `--metrics-port`).
// OUT.png   the PNG to write (its folder must exist).
// SELECTOR  optional CSS selector: only that element is shot (e.g.
//           '#surge-latency'); without it, the top of the page in the viewport.
// Options:
//   --width PX, --height PX   viewport (default 1400 x 900)
//   --from CSS                shoot a viewport-wide band of --clip-height px
//                             starting at the top of that element
//   --from-text TEXT          the same, starting at the first SVG text (a
//                             plotly chart or subplot title) containing TEXT,
//                             e.g. 'Achieved vs Intended Rate over Time'
//   --clip-height PX          height of the band (default: the viewport's)
//   --full-page               the whole page instead of the viewport
// Chromium: env SURGE_CHROMIUM (default /usr/bin/chromium). playwright-core
// comes from the repository's node_modules (npm install; the worktree's
// node_modules may be a symlink to it).
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { launchChromium } from './chromium.mjs';

function usage(msg) {
  if (msg) console.error(`screenshot_page: ${msg}`);
  console.error(
    'usage: node scripts/screenshot_page.mjs PAGE OUT.png [SELECTOR] [--width PX] [--height PX] ' +
      '[--from CSS | --from-text TEXT] [--clip-height PX] [--full-page]',
  );
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { width: 1400, height: 900, fullPage: false, positional: [] };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    const px = (name) => {
      const v = Number(value());
      if (!Number.isInteger(v) || v < 100 || v > 10000) usage(`${name} must be an integer 100..10000`);
      return v;
    };
    if (a === '--width') opts.width = px('--width');
    else if (a === '--height') opts.height = px('--height');
    else if (a === '--clip-height') opts.clipHeight = px('--clip-height');
    else if (a === '--from') opts.from = value();
    else if (a === '--from-text') opts.fromText = value();
    else if (a === '--full-page') opts.fullPage = true;
    else if (a.startsWith('--')) usage(`unknown option ${a}`);
    else opts.positional.push(a);
  }
  if (opts.positional.length < 2 || opts.positional.length > 3) usage('PAGE and OUT.png are required');
  [opts.page, opts.out, opts.selector] = opts.positional;
  if (opts.from && opts.fromText) usage('--from and --from-text exclude each other');
  return opts;
}

const opts = parseArgs(process.argv.slice(2));
let url = opts.page;
if (!/^https?:\/\//.test(url)) {
  if (!fs.existsSync(url)) usage(`no such page: ${url}`);
  url = pathToFileURL(path.resolve(url)).href;
}

const browser = await launchChromium();
try {
  const page = await browser.newPage({ viewport: { width: opts.width, height: opts.height } });
  await page.goto(url, { waitUntil: 'load' });
  // A surge page draws its chart after load; wait for plotly's SVG when there is a chart.
  if (await page.$('#surge-rps-plot')) {
    await page.waitForSelector('#surge-rps-plot .main-svg', { timeout: 30000 });
    await page.waitForTimeout(500);
  }
  if (opts.selector) {
    const el = await page.$(opts.selector);
    if (!el) throw new Error(`no element matches ${opts.selector}`);
    await el.screenshot({ path: opts.out });
  } else if (opts.from || opts.fromText) {
    const top = await page.evaluate(
      ([css, text]) => {
        let el = null;
        if (css) el = document.querySelector(css);
        else el = [...document.querySelectorAll('svg text')].find((t) => t.textContent.includes(text));
        if (!el) return null;
        return el.getBoundingClientRect().top + window.scrollY;
      },
      [opts.from, opts.fromText],
    );
    if (top === null) throw new Error(`nothing matches ${opts.from || JSON.stringify(opts.fromText)}`);
    const y = Math.max(0, Math.floor(top) - 10);
    await page.screenshot({
      path: opts.out,
      fullPage: true,
      clip: { x: 0, y, width: opts.width, height: opts.clipHeight || opts.height },
    });
  } else {
    await page.screenshot({ path: opts.out, fullPage: opts.fullPage });
  }
  console.log(`${opts.out}: ${fs.statSync(opts.out).size} bytes`);
} finally {
  await browser.close();
}
