// Browser test of the server telemetry on the actual page (docs/METRICS.md
// "Server telemetry"): a short `surge run --server-metrics` against the
// built-in server above its capacity, and its actual page opened from disk
// in Debian's chromium through playwright-core: the server's running and
// waiting requests are drawn on the Time vs RPS chart against a secondary
// y axis, listed in its legend and in the legend explanation table.
//
//   SURGE_BINARY=build/surge node --test tests/browser/server_metrics_page.test.mjs
//
// The page: env SURGE_SERVER_METRICS_PAGE, else a run of env SURGE_BINARY
// (default build/surge). Chromium: env SURGE_CHROMIUM (default
// /usr/bin/chromium).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium, openPage } from '../../scripts/chromium.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const RUNNING = 'Server: running requests';
const WAITING = 'Server: waiting requests';

// The page to test: given, or written by a run of about 1.5 times the
// built-in server's capacity (~27 RPS) for 3 s, scraped every 0.25 s.
function resolvePage() {
  if (process.env.SURGE_SERVER_METRICS_PAGE) {
    return { page: process.env.SURGE_SERVER_METRICS_PAGE, dir: null };
  }
  const surge = process.env.SURGE_BINARY || path.join(repo, 'build', 'surge');
  assert.ok(fs.existsSync(surge), `${surge} not built: set SURGE_BINARY`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'surge-server-metrics-'));
  const out = execFileSync(
    surge,
    [
      'run', '--num-prompts', '120', '--request-rate', '40', '--workers', '1',
      '--random-input-len', '200', '--random-output-len', '20',
      '--sim-max-num-seqs', '8', '--sim-decode-ms-base', '10',
      '--sim-decode-ms-per-seq', '0.5', '--sim-prefill-ms-per-token', '0.01',
      '--server-metrics', '--server-metrics-interval-s', '0.25',
      '--output-dir', dir,
    ],
    { encoding: 'utf8', timeout: 120000, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const folders = [...out.matchAll(/results: (\S+)/g)].map((m) => m[1]);
  assert.ok(folders.length > 0, `no results line in:\n${out}`);
  const folder = folders[folders.length - 1];
  const page = fs
    .readdirSync(folder)
    .find((f) => f.endsWith('_rps_distribution_plot_with_actual_rps.html'));
  assert.ok(page, `no actual page in ${folder}`);
  return { page: path.join(folder, page), dir };
}

const target = resolvePage();
let browser;

before(async () => {
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  if (target.dir) fs.rmSync(target.dir, { recursive: true, force: true });
});

test('the server traces on a secondary y axis of the Time vs RPS chart', async () => {
  const { page, errors } = await openPage(browser, target.page, ['surge-rps-plot']);
  const seen = await page.evaluate(
    ([running, waiting]) => {
      const gd = document.getElementById('surge-rps-plot');
      const trace = (name) => gd._fullData.find((t) => t.name === name);
      const describe = (t) =>
        t && {
          xaxis: t.xaxis,
          yaxis: t.yaxis,
          legend: t.legend,
          visible: t.visible,
          points: t.x.length,
          max: Math.max(...t.y),
          increasing: t.x.every((x, i) => i === 0 || x > t.x[i - 1]),
        };
      const axis = gd._fullLayout.yaxis101;
      const legend = document.querySelector('g.legend');
      return {
        running: describe(trace(running)),
        waiting: describe(trace(waiting)),
        axis: axis && { overlaying: axis.overlaying, side: axis.side, top: axis.range[1] },
        legendItems: legend ? [...legend.querySelectorAll('text.legendtext')].map((t) => t.textContent) : [],
        tableItems: [...document.querySelectorAll('#legend-explanation tbody tr')].map(
          (tr) => tr.querySelectorAll('td')[1].textContent,
        ),
        // The right axis is drawn: its tick labels are in the DOM.
        rightTicks: document.querySelectorAll('.yaxislayer-above .y101tick, g.y101tick').length,
      };
    },
    [RUNNING, WAITING],
  );
  for (const [name, t] of [[RUNNING, seen.running], [WAITING, seen.waiting]]) {
    assert.ok(t, `${name} is drawn`);
    assert.equal(t.xaxis, 'x', `${name} shares the plan's time axis`);
    assert.equal(t.yaxis, 'y101', `${name} is on the secondary y axis`);
    assert.equal(t.legend, 'legend', `${name} is in the Time vs RPS legend`);
    assert.equal(t.visible, true);
    assert.ok(t.points >= 8, `${name}: ${t.points} points`);
    assert.ok(t.increasing, `${name}: times increase`);
  }
  assert.ok(seen.running.max <= 8, `running ${seen.running.max} <= max-num-seqs 8`);
  assert.ok(seen.waiting.max > 5, `the queue grew: ${seen.waiting.max}`);
  assert.deepEqual({ overlaying: seen.axis.overlaying, side: seen.axis.side }, {
    overlaying: 'y',
    side: 'right',
  });
  assert.ok(seen.axis.top >= seen.waiting.max, 'the right axis holds the queue');
  assert.ok(seen.rightTicks > 0, 'the right axis has tick labels');
  assert.ok(seen.legendItems.includes(RUNNING), JSON.stringify(seen.legendItems));
  assert.ok(seen.legendItems.includes(WAITING), JSON.stringify(seen.legendItems));
  assert.ok(seen.tableItems.includes(RUNNING), 'a legend explanation row for running');
  assert.ok(seen.tableItems.includes(WAITING), 'a legend explanation row for waiting');
  assert.deepEqual(errors, []);
  await page.close();
});
