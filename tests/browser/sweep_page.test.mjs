// Browser test of the sweep page (sweep.html): opens it from disk in
// Debian's chromium through playwright-core and checks what a user sees:
// the charts drawn offline without errors, the invalid point hollow and
// the saturated one a diamond, the answer line, the points table.
//
//   node --test tests/browser/sweep_page.test.mjs
//
// Page: env SURGE_SWEEP_PAGE (a real sweep's sweep.html, with its
// sweep.json beside it), else the sample sweep written by the
// write_sample_sweep_page tool (env SURGE_WRITE_SAMPLE_SWEEP_PAGE, else
// $SURGE_BUILD_DIR/tests/coordinator/report/write_sample_sweep_page).
// Screenshot to env SURGE_ARTIFACTS (default test-artifacts/).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium, openPage } from '../../scripts/chromium.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const artifacts = path.resolve(process.env.SURGE_ARTIFACTS || path.join(repo, 'test-artifacts'));

function resolvePage() {
  if (process.env.SURGE_SWEEP_PAGE) return { page: process.env.SURGE_SWEEP_PAGE, dir: null };
  const tool =
    process.env.SURGE_WRITE_SAMPLE_SWEEP_PAGE ||
    path.join(
      repo,
      process.env.SURGE_BUILD_DIR || 'build',
      'tests/coordinator/report/write_sample_sweep_page',
    );
  assert.ok(fs.existsSync(tool), `no SURGE_SWEEP_PAGE and ${tool} not built`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'surge-sweep-page-'));
  execFileSync(tool, [dir], { stdio: 'inherit' });
  return { page: path.join(dir, 'sweep.html'), dir };
}

const target = resolvePage();
const sweep = JSON.parse(fs.readFileSync(path.join(path.dirname(target.page), 'sweep.json')));
let browser;

before(async () => {
  fs.mkdirSync(artifacts, { recursive: true });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  if (target.dir) fs.rmSync(target.dir, { recursive: true, force: true });
});

function open() {
  return openPage(browser, target.page, ['sweep-latency'], { width: 1400, height: 1000 });
}

const drawn = sweep.points.filter((p) => ['ok', 'saturated', 'invalid'].includes(p.status));
const symbolOf = { ok: 'circle', invalid: 'circle-open', saturated: 'diamond' };

test('the charts are drawn offline, without errors', async () => {
  const { page, errors } = await open();
  const charts = await page.evaluate(() =>
    [...document.querySelectorAll('.plot')].map((d) => ({
      id: d.id,
      drawn: Boolean(d._fullLayout && d.querySelector('.main-svg')),
      traces: (d.data || []).map((t) => t.name),
    })),
  );
  const ids = charts.map((c) => c.id);
  for (const id of ['sweep-latency', 'sweep-throughput', 'sweep-certificate']) {
    assert.ok(ids.includes(id), `${id} in ${ids}`);
  }
  for (const c of charts) assert.ok(c.drawn, `${c.id} drawn`);
  const latency = charts.find((c) => c.id === 'sweep-latency');
  assert.deepEqual(latency.traces, [
    'TTFT p50',
    'TTFT p99',
    'TPOT p50',
    'TPOT p99',
    'E2EL p50',
    'E2EL p99',
  ]);
  const waiting = drawn.some((p) => p.metrics.peak_waiting !== null);
  assert.equal(ids.includes('sweep-waiting'), waiting);
  await page.screenshot({ path: path.join(artifacts, 'sweep_page.png'), fullPage: true });
  assert.deepEqual(errors, []);
  await page.close();
});

test('invalid points are hollow, saturated ones diamonds, and the answer is a line', async () => {
  const { page } = await open();
  const got = await page.evaluate(() => {
    const gd = document.getElementById('sweep-latency');
    return {
      x: gd.data[0].x,
      symbols: gd.data[0].marker.symbol,
      shapes: (gd.layout.shapes || []).map((s) => s.x0),
      // The markers plotly drew for the first trace.
      markers: gd.querySelectorAll('.scatterlayer .trace:first-child .points path').length,
    };
  });
  assert.deepEqual(
    got.x,
    drawn.map((p) => p.rate_rps),
  );
  assert.deepEqual(
    got.symbols,
    drawn.map((p) => symbolOf[p.status]),
  );
  assert.equal(got.markers, drawn.filter((p) => p.metrics.ttft_p50_ms !== null).length);
  if (sweep.max_rate_rps !== undefined && sweep.max_rate_rps !== null) {
    assert.deepEqual(got.shapes, [sweep.max_rate_rps]);
  }
  await page.close();
});

test('the answer and one table row per point', async () => {
  const { page } = await open();
  const got = await page.evaluate(() => ({
    answer: document.getElementById('sweep-answer').textContent,
    rows: [...document.querySelectorAll('#sweep-points tbody tr')].map((tr) => ({
      cls: tr.className,
      cells: [...tr.querySelectorAll('td')].map((td) => td.textContent),
    })),
  }));
  if (sweep.answer) assert.equal(got.answer, sweep.answer.text);
  assert.equal(got.rows.length, sweep.points.length);
  sweep.points.forEach((p, i) => {
    assert.equal(got.rows[i].cls, `sweep-${p.status}`);
    assert.equal(got.rows[i].cells[2], p.status);
    if (p.status === 'invalid') assert.ok(got.rows[i].cells[14].length > 0, 'why is said');
  });
  await page.close();
});
