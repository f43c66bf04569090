// Browser test of the two RPS distribution pages (R-PLOT-2..7,
// R-ACT-3..5): opens them from disk in Debian's chromium through
// playwright-core and checks what a user sees.
//
//   node --test tests/browser/pages.test.mjs
//
// Pages: env SURGE_EXPECTED_PAGE and SURGE_ACTUAL_PAGE (optionally
// SURGE_INSTANT_PAGE, and SURGE_CLASSES_EXPECTED_PAGE and
// SURGE_CLASSES_ACTUAL_PAGE of a run with the traffic classes chat and
// batch), or the first two (three) arguments when the file is run directly
// (`node tests/browser/pages.test.mjs exp.html act.html`).
// Without them the test writes sample pages (ramped, bursty plan; two
// traffic classes) with the
// write_sample_pages tool: env SURGE_WRITE_SAMPLE_PAGES, else
// $SURGE_BUILD_DIR/tests/coordinator/report/write_sample_pages (default build
// dir: build). Screenshots go to env SURGE_ARTIFACTS (default
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

const ACTUAL = 'Actual RPS: After Excluding Anomalies';
const TIMING = 'Time Interval Caused Anomaly';
const EWMA = /^(20|50|100|200)-point EWMA$/;

// Resolves the pages to test; writes sample pages when none are given.
function resolvePages() {
  const args = process.argv.slice(2).filter((a) => a.endsWith('.html'));
  let expected = process.env.SURGE_EXPECTED_PAGE || args[0];
  let actual = process.env.SURGE_ACTUAL_PAGE || args[1];
  let instant = process.env.SURGE_INSTANT_PAGE || args[2];
  let classes = process.env.SURGE_CLASSES_EXPECTED_PAGE && {
    expected: process.env.SURGE_CLASSES_EXPECTED_PAGE,
    actual: process.env.SURGE_CLASSES_ACTUAL_PAGE,
  };
  if (expected && actual) return { expected, actual, instant, classes, generated: false };
  const tool =
    process.env.SURGE_WRITE_SAMPLE_PAGES ||
    path.join(
      repo,
      process.env.SURGE_BUILD_DIR || 'build',
      'tests/coordinator/report/write_sample_pages',
    );
  assert.ok(
    fs.existsSync(tool),
    `no pages given and ${tool} not built: set SURGE_EXPECTED_PAGE/SURGE_ACTUAL_PAGE, ` +
      'SURGE_WRITE_SAMPLE_PAGES or SURGE_BUILD_DIR',
  );
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'surge-pages-'));
  execFileSync(tool, [dir], { stdio: 'inherit' });
  expected = path.join(dir, 'synthetic_rps_distribution_plot.html');
  actual = path.join(dir, 'synthetic_rps_distribution_plot_with_actual_rps.html');
  instant = path.join(dir, 'instant_rps_distribution_plot_with_actual_rps.html');
  classes = {
    expected: path.join(dir, 'classes_rps_distribution_plot.html'),
    actual: path.join(dir, 'classes_rps_distribution_plot_with_actual_rps.html'),
  };
  return { expected, actual, instant, classes, generated: dir };
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

// Opens a page from disk (openPage) once plotly has drawn its figure.
function open(file) {
  return openPage(browser, file, ['surge-rps-plot']);
}

// Trace names per legend ('legend', 'legend2', …) from the plot's data.
function namesByLegend(page) {
  return page.evaluate(() => {
    const out = {};
    for (const t of document.getElementById('surge-rps-plot').data) {
      const legend = t.legend || 'legend';
      (out[legend] ||= []).push(t.name);
    }
    return out;
  });
}

// What the DOM shows: per legend group, its item texts.
function domLegends(page) {
  return page.evaluate(() => {
    const out = {};
    for (const g of document.querySelectorAll('g')) {
      const cls = g.getAttribute('class') || '';
      if (!/^legend\d*$/.test(cls)) continue;
      out[cls] = [...g.querySelectorAll(`text.${cls}text`)].map((t) => t.textContent);
    }
    return out;
  });
}

function chartCount(page) {
  return page.evaluate(
    () =>
      Object.keys(document.getElementById('surge-rps-plot')._fullLayout).filter((k) =>
        /^xaxis\d*$/.test(k),
      ).length,
  );
}

function legendKey(chart) {
  return chart === 0 ? 'legend' : `legend${chart + 1}`;
}

function assertNames(actual, expected, what) {
  assert.equal(actual.length, expected.length, `${what}: ${JSON.stringify(actual)}`);
  expected.forEach((want, i) => {
    if (want instanceof RegExp) assert.match(actual[i], want, what);
    else assert.equal(actual[i], want, what);
  });
}

// The explanation table: six columns, one row per trace, in trace order.
async function checkTable(page) {
  const table = await page.evaluate(() => {
    const t = document.getElementById('legend-explanation');
    return {
      heads: [...t.querySelectorAll('thead th')].map((th) => th.textContent),
      rows: [...t.querySelectorAll('tbody tr')].map((tr) =>
        [...tr.querySelectorAll('td')].map((td) => td.textContent),
      ),
      traces: document.getElementById('surge-rps-plot').data.map((d) => d.name),
    };
  });
  assert.deepEqual(table.heads, [
    'Group',
    'Legend Item',
    'Meaning',
    'Computation',
    'Criterion',
    'Visual Appearance',
  ]);
  assert.equal(table.rows.length, table.traces.length, 'one row per trace');
  table.rows.forEach((cells, i) => {
    assert.equal(cells.length, 6, `row ${i} has six cells`);
    assert.equal(cells[1], table.traces[i], `row ${i} names trace ${i}`);
    for (const c of cells) assert.ok(c.trim().length > 0, `row ${i} has an empty cell`);
  });
}

// The run context block above the charts: every field there, none
// empty, the server without credentials; the same block on both pages.
const CONTEXT_LABELS = [
  'Model',
  'Server',
  'Endpoint',
  'Dataset',
  'Requests (N)',
  'Seed',
  'Request rate',
  'Burstiness (β)',
  'Ramp-up',
  'Workers',
  'Assignment',
  'Max concurrency',
  'Run started',
  'surge version',
];

async function readContext(page) {
  return page.evaluate(() => {
    const t = document.getElementById('surge-context');
    if (!t) return null;
    const box = t.getBoundingClientRect();
    return {
      visible: box.width > 0 && box.height > 0 && getComputedStyle(t).display !== 'none',
      // Above the charts: the user sees it before scrolling.
      aboveCharts: box.top < document.getElementById('surge-rps-plot').getBoundingClientRect().top,
      // Label/value pairs in reading order (two pairs per table row).
      rows: [...t.querySelectorAll('th')].map((th) => [
        th.textContent,
        th.nextElementSibling.textContent,
      ]),
    };
  });
}

function checkContext(ctx) {
  assert.ok(ctx, 'a #surge-context table');
  assert.ok(ctx.visible, 'the context block is visible');
  assert.ok(ctx.aboveCharts, 'the context block is above the charts');
  assert.deepEqual(
    ctx.rows.map((r) => r[0]),
    CONTEXT_LABELS,
  );
  for (const [label, value] of ctx.rows) assert.ok(value.trim().length > 0, `${label} is empty`);
  const server = ctx.rows.find((r) => r[0] === 'Server')[1];
  assert.doesNotMatch(server, /@|\?/, 'no credentials or query in the server');
}

// Expected trace names per chart, from the page title (ramp or not).
async function expectedCharts(page) {
  const title = await page.title();
  const ramp = /Ramp-up: /.test(title);

  return [
    [
      'Normal RPS',
      TIMING,
      'Burstiness Caused Anomaly',
      EWMA,
      ...(ramp ? ['Theoretical Ramp-up'] : []),
    ],
    ['Normal Request Count', TIMING],
    ['Normal Intervals', TIMING],
  ];
}

async function checkLegends(page, charts) {
  assert.equal(await chartCount(page), charts.length, 'chart count');
  const byData = await namesByLegend(page);
  const byDom = await domLegends(page);
  assert.deepEqual(
    Object.keys(byDom).sort(),
    charts.map((_, i) => legendKey(i)).sort(),
    'one legend per chart',
  );
  charts.forEach((names, i) => {
    assertNames(byData[legendKey(i)] || [], names, `traces of chart ${i + 1}`);
    assertNames(byDom[legendKey(i)] || [], names, `legend of chart ${i + 1}`);
  });
  const layout = await page.evaluate(() => document.getElementById('surge-rps-plot').layout);
  assert.equal(layout.showlegend, true);
}

describe('expected page', () => {
  test('charts, legends, table, no console errors', async () => {
    const { page, errors } = await open(pages.expected);
    const title = await page.title();
    assert.match(
      title,
      /^Request Per Second\(RPS\) Distribution Analysis \| Target Rate: [0-9.]+ RPS.* — expected$/,
    );
    const figTitle = await page.evaluate(
      () => document.getElementById('surge-rps-plot').layout.title.text,
    );
    // The chart title is R-PLOT-2's; the tab title adds which page it is.
    assert.equal(`${figTitle} — expected`, title);
    checkContext(await readContext(page));
    const annotations = await page.evaluate(() =>
      document.getElementById('surge-rps-plot').layout.annotations.map((a) => a.text),
    );
    assert.ok(annotations.includes('<b>Time vs RPS - Distribution</b>'));
    assert.ok(annotations.includes('<b>Expected: RPS vs Request Count - Distribution</b>'));
    const gamma = /^<b>Expected: Gamma Distribution \(burstiness: [0-9.]+\)<\/b>$/;
    assert.ok(annotations.some((a) => gamma.test(a)));
    await checkLegends(page, await expectedCharts(page));
    await checkTable(page);
    const names = (await namesByLegend(page)).legend;
    assert.ok(!names.includes(ACTUAL), 'no actual trace before the run');
    await page.screenshot({ path: path.join(artifacts, 'expected_page.png'), fullPage: true });
    assert.deepEqual(errors, []);
    await page.close();
  });
});

describe('actual page', () => {
  test('expected figure plus actual trace and R-ACT-5 charts', async () => {
    const { page, errors } = await open(pages.actual);
    const title = await page.title();
    assert.match(title, /Target Rate: [0-9.]+ RPS.* — actual$/);
    const figTitle = await page.evaluate(
      () => document.getElementById('surge-rps-plot').layout.title.text,
    );
    assert.equal(`${figTitle} — actual`, title);
    checkContext(await readContext(page));
    const charts = await expectedCharts(page);
    charts[0].push(ACTUAL);
    charts.push(['Send Lateness'], ['Achieved Rate', 'Intended Rate']);
    await checkLegends(page, charts);
    await checkTable(page);
    const annotations = await page.evaluate(() =>
      document.getElementById('surge-rps-plot').layout.annotations.map((a) => a.text),
    );
    const lateness = /Send Lateness Distribution \(p50 .* ms, p90 .* ms, p99 .* ms, max .* ms\)/;
    assert.ok(annotations.some((a) => lateness.test(a)));
    assert.ok(annotations.some((a) => /KS distance of intervals: [0-9.]+/.test(a)));
    const summary = await page.evaluate(() => document.getElementById('surge-summary').textContent);
    assert.match(summary, /KS distance/);
    assert.match(summary, /Send lateness p50 \/ p90 \/ p99 \/ max/);
    const color = await page.evaluate(
      (n) => document.getElementById('surge-rps-plot').data.find((t) => t.name === n).line.color,
      ACTUAL,
    );
    assert.equal(color, '#ff7f0e', 'orange');
    await page.screenshot({ path: path.join(artifacts, 'actual_page.png'), fullPage: true });
    assert.deepEqual(errors, []);
    await page.close();
  });

  // A worker lost mid-run is a red vertical line on the time axes
  // (Time vs RPS, Achieved vs Intended Rate) with a label naming the worker
  // and the counts, drawn by plotly, and the sentence in the list above the
  // charts. The pages' JSON says how many losses to expect (run events); the
  // sample page has one.
  // TTFT and E2EL from actual vs from planned send, a small
  // table between the run context and the charts; its cells are the
  // stats.latency numbers in ms. The sample page's numbers are fixed.
  test('the latency table shows TTFT and E2EL from actual vs from planned send', async () => {
    const { page, errors } = await open(pages.actual);
    const got = await page.evaluate(() => {
      const t = document.getElementById('surge-latency');
      if (!t) return null;
      const box = t.getBoundingClientRect();
      return {
        visible: box.width > 0 && box.height > 0,
        belowContext:
          document.getElementById('surge-context').getBoundingClientRect().bottom <= box.top,
        aboveCharts:
          box.bottom <= document.getElementById('surge-rps-plot').getBoundingClientRect().top,
        header: [...t.querySelectorAll('thead th')].map((th) => th.textContent),
        rows: [...t.querySelectorAll('tbody tr')].map((tr) =>
          [...tr.children].map((c) => c.textContent),
        ),
        stats: surgeFigure.stats.latency,
      };
    });
    assert.ok(got, 'a #surge-latency table');
    assert.ok(got.visible && got.belowContext && got.aboveCharts, 'between context and charts');
    assert.deepEqual(got.header, [
      'Latency (ms), OK requests',
      'N',
      'from actual send p50 / p90 / p99',
      'from planned send p50 / p90 / p99',
    ]);
    assert.deepEqual(
      got.rows.map((r) => r[0]),
      ['TTFT', 'E2EL'],
    );
    const ms = (p) =>
      [p.p50_s, p.p90_s, p.p99_s]
        .map((v) => (v === null ? 'n/a' : (v * 1e3).toFixed(3)))
        .join(' / ');
    got.stats.forEach((v, i) => {
      const want = [v.metric, String(v.count), ms(v.from_actual_send), ms(v.from_planned_send)];
      assert.deepEqual(got.rows[i], want);
    });
    if (pages.generated) {
      assert.deepEqual(got.rows, [
        ['TTFT', '400', '20.200 / 21.100 / 21.900', '20.400 / 31.200 / 58.700'],
        ['E2EL', '400', '274.300 / 274.800 / 275.800', '274.500 / 284.900 / 312.600'],
      ]);
    }
    await page.screenshot({
      path: path.join(artifacts, 'actual_page_latency.png'),
      clip: { x: 0, y: 0, width: 1400, height: 700 },
    });
    assert.deepEqual(errors, []);
    await page.close();
  });

  test('a lost worker is marked on the time axes and listed above the charts', async () => {
    const { page, errors } = await open(pages.actual);
    const fig = await page.evaluate(() => surgeFigure.stats.events || []);
    if (pages.generated) assert.equal(fig.length, 1, 'the sample page has one worker loss');
    const drawn = await page.evaluate(() => {
      const gd = document.getElementById('surge-rps-plot');
      const texts = [...gd.querySelectorAll('g.annotation-text-g text')].map((t) => t.textContent);
      const lines = gd._fullLayout.shapes
        .filter((s) => s.line.color === '#b22222')
        .map((s) => ({ xref: s.xref, x: s.x0 }));
      // The lines as drawn: SVG paths stroked in #b22222 = rgb(178, 34, 34).
      const shapeCount = [...gd.querySelectorAll('.shapelayer path')].filter(
        (p) => getComputedStyle(p).stroke === 'rgb(178, 34, 34)',
      ).length;
      const items = [...document.querySelectorAll('#surge-events li')].map((li) => li.textContent);
      return { texts, lines, shapeCount, items };
    });
    for (const e of fig) {
      const labels = drawn.texts.filter((t) => t === e.label);
      assert.equal(labels.length, 2, `label drawn on both time axes: ${e.label}`);
      assert.deepEqual(
        drawn.lines.filter((l) => l.x === e.at_s).map((l) => l.xref).sort(),
        ['x', 'x5'],
        `a line at ${e.at_s} s on both time axes`,
      );
      assert.ok(drawn.items.includes(e.text), `listed: ${e.text}`);
    }
    assert.equal(drawn.items.length, fig.length);
    assert.equal(drawn.shapeCount, 2 * fig.length, 'red lines drawn as SVG paths');
    if (fig.length > 0) {
      const label = /^worker \d+ lost: [\d,]+ send_unknown, [\d,]+ not sent, [\d,]+ moved$/;
      assert.match(fig[0].label, label);
      const box = await page.evaluate(() => {
        const r = document.getElementById('surge-events').getBoundingClientRect();
        const plot = document.getElementById('surge-rps-plot').getBoundingClientRect();
        return { h: r.height, top: r.top, plot: plot.top };
      });
      assert.ok(box.h > 0 && box.top < box.plot, 'the list is visible above the charts');
      await page.screenshot({
        path: path.join(artifacts, 'actual_page_worker_lost.png'),
        clip: { x: 0, y: 0, width: 1400, height: 900 },
      });
    }
    assert.deepEqual(errors, []);
    await page.close();
  });

  test('clicking the actual legend item toggles the trace', async () => {
    const { page, errors } = await open(pages.actual);
    const visible = () =>
      page.evaluate((n) => {
        const t = document.getElementById('surge-rps-plot').data.find((d) => d.name === n);
        return t.visible === undefined ? true : t.visible;
      }, ACTUAL);
    const item = page.locator('g.legend g.traces', {
      has: page.locator('text.legendtext', { hasText: ACTUAL }),
    });
    assert.equal(await item.count(), 1);
    const toggle = item.locator('rect.legendtoggle');
    assert.equal(await visible(), true);
    await toggle.click();
    await page.waitForFunction(
      (n) =>
        document.getElementById('surge-rps-plot').data.find((d) => d.name === n).visible ===
        'legendonly',
      ACTUAL,
    );
    assert.equal(await visible(), 'legendonly');
    // The other traces of the chart stay visible.
    const others = await page.evaluate((n) =>
      document.getElementById('surge-rps-plot').data
        .filter((d) => (d.legend || 'legend') === 'legend' && d.name !== n)
        .map((d) => (d.visible === undefined ? true : d.visible)),
    ACTUAL);
    assert.ok(others.every((v) => v === true));
    await page.screenshot({
      path: path.join(artifacts, 'actual_page_actual_hidden.png'),
      clip: { x: 0, y: 0, width: 1400, height: 650 },
    });
    await page.waitForTimeout(400);  // two clicks in quick succession would be a double click
    await toggle.click();
    await page.waitForFunction(
      (n) =>
        document.getElementById('surge-rps-plot').data.find((d) => d.name === n).visible === true,
      ACTUAL,
    );
    assert.equal(await visible(), true);
    // A legend item of another chart toggles its own trace only.
    const hist = page.locator('g.legend2 g.traces', {
      has: page.locator('text.legend2text', { hasText: 'Normal Request Count' }),
    });
    await page.waitForTimeout(400);
    await hist.locator('rect.legend2toggle').click();
    await page.waitForFunction(() =>
      document.getElementById('surge-rps-plot').data.some(
        (d) => d.name === 'Normal Request Count' && d.visible === 'legendonly',
      ),
    );
    const states = await page.evaluate(() =>
      document.getElementById('surge-rps-plot').data.map((d) => [d.name, d.legend, d.visible]),
    );
    for (const [name, legend, v] of states) {
      if (legend === 'legend2' && name === 'Normal Request Count') assert.equal(v, 'legendonly');
      else assert.notEqual(v, 'legendonly', `${legend} ${name}`);
    }
    assert.deepEqual(errors, []);
    await page.close();
  });
});

describe('both pages', () => {
  test('distinct titles, the same run context', async () => {
    const a = await open(pages.expected);
    const b = await open(pages.actual);
    const [ta, tb] = [await a.page.title(), await b.page.title()];
    assert.notEqual(ta, tb, 'the two pages have different <title>s');
    assert.equal(ta.replace(/ — expected$/, ''), tb.replace(/ — actual$/, ''));
    assert.deepEqual(await readContext(a.page), await readContext(b.page));
    await a.page.close();
    await b.page.close();
  });
});

describe('instant-mode actual page', { skip: !pages.instant && 'no instant page given' }, () => {
  test('only the actual Time vs RPS chart', async () => {
    const { page, errors } = await open(pages.instant);
    assert.match(await page.title(), /Instant Mode — actual$/);
    checkContext(await readContext(page));
    await checkLegends(page, [[ACTUAL]]);
    await checkTable(page);
    await page.screenshot({ path: path.join(artifacts, 'instant_page.png'), fullPage: true });
    assert.deepEqual(errors, []);
    await page.close();
  });
});

// A run with traffic classes (chat, batch): each class is a named trace in
// its own colour on both pages, drawn by plotly into the chart's legend,
// and the classes' achieved rates add up to the total's in every bin.
const CLASSES = ['chat', 'batch'];
const ALL_CLASSES = 'All classes: intended rate';

describe('traffic-classes pages', { skip: !pages.classes && 'no classes pages given' }, () => {
  // name → line colour of every trace of the plot.
  const colours = (page) =>
    page.evaluate(() =>
      Object.fromEntries(
        document.getElementById('surge-rps-plot').data.map((t) => [t.name, t.line?.color]),
      ),
    );

  test('expected page: a line per class and their sum on Time vs RPS', async () => {
    const { page, errors } = await open(pages.classes.expected);
    assert.match(await page.title(), /Traffic classes: chat .* \+ batch .* — expected$/);
    const byData = (await namesByLegend(page)).legend;
    const byDom = (await domLegends(page)).legend;
    const want = [...CLASSES, ALL_CLASSES];
    assert.deepEqual(byData.slice(-want.length), want, 'the class lines end the chart');
    for (const name of want) assert.ok(byDom.includes(name), `legend shows ${name}`);
    const c = await colours(page);
    assert.notEqual(c.chat, c.batch, 'one colour per class');
    await checkTable(page);
    await page.screenshot({ path: path.join(artifacts, 'classes_expected_page.png') });
    assert.deepEqual(errors, []);
    await page.close();
  });

  test('actual page: each class achieved vs intended in the total\'s bins', async () => {
    const expected = await open(pages.classes.expected);
    const expectedColours = await colours(expected.page);
    await expected.page.close();
    const { page, errors } = await open(pages.classes.actual);
    const rate = legendKey(4);
    const want = ['Achieved Rate', 'Intended Rate'];
    for (const name of CLASSES) want.push(`${name}: achieved`, `${name}: intended`);
    assertNames((await namesByLegend(page))[rate], want, 'traces of the rate chart');
    assertNames((await domLegends(page))[rate], want, 'legend of the rate chart');
    const c = await colours(page);
    for (const name of CLASSES) {
      assert.equal(c[`${name}: achieved`], expectedColours[name], `${name}: the same colour`);
      assert.equal(c[`${name}: intended`], expectedColours[name], `${name}: the same colour`);
      assert.equal(c[name], expectedColours[name], `${name} on the actual page's Time vs RPS`);
    }
    const ys = await page.evaluate(() =>
      Object.fromEntries(document.getElementById('surge-rps-plot').data.map((t) => [t.name, t.y])),
    );
    for (const kind of ['achieved', 'intended']) {
      const total = ys[kind === 'achieved' ? 'Achieved Rate' : 'Intended Rate'];
      assert.ok(total.length > 2, `${kind}: bins drawn`);
      total.forEach((y, k) => {
        const sum = CLASSES.reduce((acc, name) => acc + ys[`${name}: ${kind}`][k], 0);
        assert.ok(Math.abs(sum - y) < 1e-9 * Math.max(1, y), `${kind} bin ${k}: ${sum} vs ${y}`);
      });
    }
    await checkTable(page);
    await page.screenshot({ path: path.join(artifacts, 'classes_actual_page.png'), fullPage: true });
    assert.deepEqual(errors, []);
    await page.close();
  });
});
