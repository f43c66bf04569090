// Browser test of the page of `surge compare` (compare.html,
// docs/COMPARE.md): opens it from disk in Debian's chromium through
// playwright-core and checks what a user sees: the traces of both figures,
// the numbers in the table, both certificates, the verdict or why there is
// none, and no console errors (the page works offline).
//
//   node --test tests/browser/compare_page.test.mjs
//
// Pages: env SURGE_COMPARE_PAGE (and SURGE_NO_VERDICT_PAGE), else sample
// pages written by the write_sample_compare_page tool (env
// SURGE_WRITE_SAMPLE_COMPARE_PAGE, else
// $SURGE_BUILD_DIR/tests/coordinator/report/write_sample_compare_page,
// default build dir: build). Screenshots go to env SURGE_ARTIFACTS (default
// test-artifacts/). Chromium: env SURGE_CHROMIUM (default /usr/bin/chromium).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium, openPage } from '../../scripts/chromium.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const artifacts = path.resolve(process.env.SURGE_ARTIFACTS || path.join(repo, 'test-artifacts'));

function resolvePages() {
  if (process.env.SURGE_COMPARE_PAGE) {
    return {
      verdict: process.env.SURGE_COMPARE_PAGE,
      noVerdict: process.env.SURGE_NO_VERDICT_PAGE,
      generated: false,
    };
  }
  const tool =
    process.env.SURGE_WRITE_SAMPLE_COMPARE_PAGE ||
    path.join(
      repo,
      process.env.SURGE_BUILD_DIR || 'build',
      'tests/coordinator/report/write_sample_compare_page',
    );
  assert.ok(fs.existsSync(tool), `no page given and ${tool} not built`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'surge-compare-'));
  execFileSync(tool, [dir], { stdio: 'inherit' });
  return {
    verdict: path.join(dir, 'verdict', 'compare.html'),
    noVerdict: path.join(dir, 'no_verdict', 'compare.html'),
    generated: dir,
  };
}

const pages = resolvePages();
let browser;

before(async () => {
  fs.mkdirSync(artifacts, { recursive: true });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  if (pages.generated) fs.rmSync(pages.generated, { recursive: true, force: true });
});

// Opens a page from disk (openPage) once plotly has drawn both figures.
function open(file) {
  return openPage(browser, file, ['surge-compare-diff', 'surge-compare-dist']);
}

// The rows of a table as arrays of cell texts (header cell first).
function tableRows(page, id) {
  return page.evaluate(
    (tableId) =>
      [...document.querySelectorAll(`#${tableId} tbody tr`)].map((tr) =>
        [...tr.children].map((c) => c.textContent.trim()),
      ),
    id,
  );
}

describe('compare page', () => {
  test('traces, numbers, certificates, verdict, no console errors', async () => {
    const { page, errors } = await open(pages.verdict);
    const diff = await page.evaluate(() =>
      document.getElementById('surge-compare-diff').data.map((t) => ({
        name: t.name,
        points: t.x.length,
        yaxis: t.yaxis,
      })),
    );
    assert.deepEqual(
      diff.map((t) => t.name),
      ['TTFT B − A', 'TPOT B − A', 'E2EL B − A'],
    );
    // 300 requests, one failed on both sides: 299 pairs drawn.
    for (const t of diff) assert.equal(t.points, 299);
    assert.deepEqual(
      diff.map((t) => t.yaxis),
      ['y', 'y2', 'y3'],
    );
    const dist = await page.evaluate(() =>
      document.getElementById('surge-compare-dist').data.map((t) => t.name),
    );
    assert.deepEqual(dist, ['TTFT A', 'TTFT B', 'TPOT A', 'TPOT B', 'E2EL A', 'E2EL B']);
    // Drawn: one marker group per difference trace in the SVG/WebGL layer.
    const drawnTraces = await page.evaluate(
      () => document.querySelectorAll('#surge-compare-dist .scatterlayer .trace').length,
    );
    assert.equal(drawnTraces, 6);

    const rows = await tableRows(page, 'surge-compare-table');
    assert.deepEqual(
      rows.map((r) => r[0]),
      ['TTFT', 'TPOT', 'E2EL'],
    );
    const ttft = rows[0];
    assert.equal(ttft[1], '299');
    // "A median / p99": about 20 ms; "B median / p99": about 60 ms.
    const [aMedian] = ttft[2].split(' / ').map(Number);
    const [bMedian] = ttft[3].split(' / ').map(Number);
    assert.ok(Math.abs(aMedian - 20) < 1.5, ttft[2]);
    assert.ok(Math.abs(bMedian - 60) < 1.5, ttft[3]);
    const m = ttft[4].match(/^(-?[0-9.]+) \[(-?[0-9.]+), (-?[0-9.]+)\]$/);
    assert.ok(m, ttft[4]);
    const [median, low, high] = m.slice(1).map(Number);
    assert.ok(low <= median && median <= high, ttft[4]);
    assert.ok(low < 40 + 1.5 && high > 40 - 1.5, ttft[4]);
    assert.equal(ttft[6], 'B slower');

    const certs = await tableRows(page, 'surge-certificates');
    assert.deepEqual(
      certs.map((r) => [r[0], r[2], r[3]]),
      [
        ['A', '0123456789abcdef', 'kept'],
        ['B', '0123456789abcdef', 'kept'],
      ],
    );
    const verdict = await page.textContent('#surge-verdict');
    assert.match(verdict, /Both runs kept their schedule; 299 pairs/);
    const bootstrap = await page.textContent('body');
    assert.match(bootstrap, /2000 resamples of the pairs, seed 0/);
    await page.screenshot({ path: path.join(artifacts, 'compare_page.png'), fullPage: true });
    assert.deepEqual(errors, []);
    await page.close();
  });

  test('without a verdict the page says why', { skip: !pages.noVerdict }, async () => {
    const { page, errors } = await open(pages.noVerdict);
    const verdict = await page.textContent('#surge-verdict');
    assert.match(
      verdict,
      /^No verdict: run B did not keep its schedule: send lateness p99 31\.5 ms is over the limit 10 ms/,
    );
    const rows = await tableRows(page, 'surge-compare-table');
    assert.equal(rows[0][6], '—');
    const certs = await tableRows(page, 'surge-certificates');
    assert.equal(certs[1][3], 'not kept');
    assert.match(certs[1][8], /over the limit 10 ms/);
    assert.deepEqual(errors, []);
    await page.close();
  });
});
