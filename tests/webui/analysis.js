// analysis.js: the analysis tabs of the trials page in headless chromium
// (tests/e2e/67-webui-analysis.sh):
//   node analysis.js URL API ARTIFACTS EXPERIMENT_ID
// URL is the experiment's UI, API its /api/v1/nni/webui. Each of Slice, Contour,
// Distribution and Early stopping draws (the canvas says how many points, cells, steps
// or curves it drew: the REST answer's), its table equals the REST answer in the UI's
// number format, and pointing at a contour cell or an ECDF step shows the answer's
// number; the metric menu (a dict key) and the contour's x menu read the view again. No
// console error. Screenshots of each in ARTIFACTS. Last, the experiment (DONE) is given
// 8 more trials (nnictl update trialnum): the Distribution tab follows them without a
// reload of the page.
'use strict';
const path = require('path');
const { runTest, assert, eq, until, fmtNum: fmt, getJson, pageErrors } = require('./lib');

const { execFileSync } = require('child_process');
const [url, api, artifacts, expId] = process.argv.slice(2);
const shot = (page, name) => page.screenshot({ path: path.join(artifacts, name + '.png'), fullPage: true });
const log = m => console.log('webui-analysis: ' + m);
const tableRows = page => page.$$eval('#anaTable tbody tr', trs => trs.map(tr => Array.from(tr.cells).map(c => c.textContent).join('|')));

async function open(page, tab, match) {
  await page.click('[data-tab=' + tab + ']');
  await page.waitForFunction(([t, m]) => (document.body.dataset.analysisReady || '').startsWith(t + ':') &&
    (document.querySelector('#detailChart').getAttribute('aria-label') || '').includes(m), [tab, match || '']);
}

async function checkSlice(page, want, what) {
  const rows = await tableRows(page);
  eq(rows.length, want.params.length, what + ': rows');
  want.params.forEach((p, i) => {
    const num = p.scale !== 'category' && p.trials;
    eq(rows[i], [p.name, p.type, p.scale, p.trials, num ? fmt(Math.min(...p.x)) : p.trials ? '' : '—',
      num ? fmt(Math.max(...p.x)) : p.trials ? '' : '—'].join('|'), what + ': row ' + i);
  });
  eq(await page.getAttribute('#detailChart', 'data-drawn'), want.params.reduce((s, p) => s + p.x.length, 0), what + ': points drawn');
  const note = await page.textContent('#chartNote');
  assert(note.includes('Over ' + want.sample.trials + ' trials') && note.includes('at most 5,000'), what + ': the note says the sample: ' + note);
}

// points at the centre of the grid's cell (i, j) and returns the tooltip
async function tipAtCell(page, i, j) {
  const g = JSON.parse(await page.getAttribute('#detailChart', 'data-grid'));
  const box = await page.locator('#detailChart').boundingBox();
  await page.mouse.move(box.x + g.x + (i + 0.5) * g.w / g.n, box.y + g.y + g.h - (j + 0.5) * g.h / g.n);
  return page.textContent('#tip');
}

async function checkContour(page, want, what) {
  eq(await page.getAttribute('#detailChart', 'data-drawn'), want.filled, what + ': cells drawn');
  const rows = await tableRows(page);
  eq(rows.join('\n'), ['x', 'y'].map(k => [k, want[k].name, want[k].scale, fmt(want[k].lo), fmt(want[k].hi), fmt(want[k].bandwidth)].join('|')).join('\n'), what + ': axes');
  const cells = [];
  want.z.forEach((row, j) => row.forEach((z, i) => { if (z !== null) cells.push([i, j, z]); }));
  assert(cells.length > 3, what + ': some cells have a value');
  for (const [i, j, z] of [cells[0], cells[Math.floor(cells.length / 2)], cells[cells.length - 1]]) {
    const tip = await tipAtCell(page, i, j);
    eq(tip, want.x.name + ' ' + fmt(want.x.centres[i]) + ' · ' + want.y.name + ' ' + fmt(want.y.centres[j]) + ' · fit ' + fmt(z), what + ': cell ' + i + ',' + j);
  }
  const note = await page.textContent('#chartNote');
  assert(note.includes('Nadaraya–Watson') && note.includes(want.fit.grid + '×' + want.fit.grid) && note.includes(want.filled + ' cells') &&
    note.includes('the ' + want.trials + ' trials with both'), what + ': the note says the fit and the sample: ' + note);
}

runTest(artifacts, '99-failure', async (ctx, page) => {
  const errors = pageErrors(page);
  await page.goto(url + 'detail');
  await page.waitForSelector('body[data-table-ready]');

  await open(page, 'slice', 'Slice');
  const slice = await getJson(api + '/slice');
  await checkSlice(page, slice, 'slice');
  await shot(page, '01-slice');
  log('slice: ' + slice.params.map(p => p.name + ' ' + p.trials).join(', '));
  assert(await page.isVisible('#anaKey'), 'the metric menu (the trials have dict metrics)');
  await page.selectOption('#anaKey', 'loss');
  await page.waitForFunction(() => (document.querySelector('#detailChart').getAttribute('aria-label') || '').includes('"loss"'));
  const sliceLoss = await getJson(api + '/slice?metric=loss');
  await checkSlice(page, sliceLoss, 'slice of loss');
  await shot(page, '02-slice-loss');
  await page.selectOption('#anaKey', '');
  await page.waitForFunction(() => !(document.querySelector('#detailChart').getAttribute('aria-label') || '').includes('"loss"'));

  await open(page, 'contour', 'Contour');
  const contour = await getJson(api + '/contour');
  await checkContour(page, contour, 'contour');
  await shot(page, '03-contour');
  log('contour ' + contour.x.name + ' x ' + contour.y.name + ': ' + contour.filled + ' cells');
  await page.selectOption('#anaX', 'model[0].w');
  await page.waitForFunction(() => (document.querySelector('#detailChart').getAttribute('aria-label') || '').includes('over model[0].w'));
  const contourW = await getJson(api + '/contour?x=' + encodeURIComponent('model[0].w') + '&y=' + encodeURIComponent(contour.y.name));
  await checkContour(page, contourW, 'contour of model[0].w');
  await shot(page, '04-contour-w');

  await open(page, 'ecdf', 'Empirical distribution');
  const ecdf = await getJson(api + '/ecdf');
  eq((await tableRows(page)).join('\n'), [ecdf.n, fmt(ecdf.min), fmt(ecdf.median), fmt(ecdf.max), ecdf.x.length].join('|'), 'ecdf: table');
  eq(await page.getAttribute('#detailChart', 'data-drawn'), ecdf.x.length, 'ecdf: steps drawn');
  await shot(page, '05-ecdf');
  log('ecdf: ' + ecdf.n + ' trials, median ' + fmt(ecdf.median));

  await open(page, 'curves', 'coloured by the assessor');
  const curves = await getJson(api + '/curves');
  const group = s => curves.curves.filter(c => c.stopped === s);
  const med = a => { const s = a.slice().sort((x, y) => x - y); return s[Math.floor((s.length - 1) / 2)]; };
  eq((await tableRows(page)).join('\n'), [['stopped early', group(true), curves.counts.EARLY_STOPPED], ['not stopped', group(false), curves.counts.others]]
    .map(([n, l, t]) => [n, l.length, t, med(l.map(c => c.results))].join('|')).join('\n'), 'curves: table');
  eq(await page.getAttribute('#detailChart', 'data-drawn'), curves.curves.filter(c => c.points.length).length, 'curves: drawn');
  assert((await page.textContent('#chartNote')).includes('Assessor: Medianstop'), 'curves: the note names the assessor');
  assert(!(await page.isVisible('#anaKey')), 'no metric menu for the curves');
  await shot(page, '06-curves');
  log('curves: ' + group(true).length + ' stopped early, ' + group(false).length + ' others');

  // live: more trials run while the Distribution tab is shown; the page is not reloaded
  await open(page, 'ecdf', 'Empirical distribution');
  await page.evaluate(() => { window.tqSamePage = 1; });
  const ecdfRow = r => [r.n, fmt(r.min), fmt(r.median), fmt(r.max), r.x.length].join('|');
  execFileSync('nnictl', ['update', 'trialnum', expId, '--value', String(curves.curves.length + 8)]);
  const live = await until('the Distribution tab to show the new trials', async () => {
    const r = await getJson(api + '/ecdf');
    return r.n > ecdf.n && (await tableRows(page)).join('\n') === ecdfRow(r) ? r : null;
  }, 120000, 500);
  assert(await page.evaluate(() => window.tqSamePage === 1), 'the page was not reloaded');
  eq(await page.getAttribute('#detailChart', 'data-drawn'), live.x.length, 'ecdf (live): steps drawn');
  log('live: the Distribution tab went from ' + ecdf.n + ' to ' + live.n + ' trials');
  await shot(page, '07-ecdf-live');

  await page.click('[data-tab=metric]');
  assert(!(await page.isVisible('#anaTable')) && !(await page.isVisible('#anaCtl')), 'the table and controls go with their tabs');
  eq(errors.length, 0, 'console errors: ' + errors.join(' | '));
});
