// compare.js: "Compare experiments" on the All experiments page in headless chromium
// (tests/e2e/68-webui-compare.sh):
//   node compare.js URL API ARTIFACTS ID...
// URL is one experiment's UI, API its GET /webui/compare, ID... the experiments to
// tick. Ticking them and pressing "Compare selected" shows the comparison: both charts
// drawn (labelled, not blank), by trial number and by time; the figures table equals
// the REST answer (trials, best, trial of the best, median); the config table has a row
// per key with exactly the REST answer's differing keys marked, and "only the
// differences" leaves those alone. Then 5 more trials of the second experiment (nnictl
// update trialnum): the comparison follows them without a reload of the page. No
// console error. Screenshots in ARTIFACTS.
'use strict';
const path = require('path');
const { execFileSync } = require('child_process');
const { runTest, assert, eq, until, fmtNum, getJson, pageErrors } = require('./lib');

const [url, api, artifacts, ...ids] = process.argv.slice(2);
const shot = (page, name) => page.screenshot({ path: path.join(artifacts, name + '.png'), fullPage: true });
const log = m => console.log('webui-compare: ' + m);
// pixels of the canvas that are not the background: a chart was drawn
const inked = (page, sel) => page.$eval(sel, c => {
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
  return n;
});
// pixels of one colour (a series) in the legend's band at the top of the canvas
const colored = (page, sel, rgb) => page.$eval(sel, (c, rgb) => {
  const d = c.getContext('2d').getImageData(0, 0, c.width, Math.round(24 * (window.devicePixelRatio || 1))).data;
  let n = 0;
  for (let i = 0; i < d.length; i += 4) if (Math.abs(d[i] - rgb[0]) < 8 && Math.abs(d[i + 1] - rgb[1]) < 8 && Math.abs(d[i + 2] - rgb[2]) < 8 && d[i + 3] > 200) n++;
  return n;
}, rgb);
const SERIES = [[0x0b, 0x5c, 0xad], [0xd1, 0x49, 0x5b], [0x1a, 0x7f, 0x37]];

runTest(artifacts, '99-failure', async (ctx, page) => {
  const errors = pageErrors(page);
  await page.goto(url + 'experiment');
  await page.waitForSelector('body[data-experiments-ready]');
  assert(await page.isDisabled('#cmpBtn'), 'nothing ticked: the button is disabled');
  for (const id of ids) await page.check('input[data-cmp="' + id + '"]');
  eq(await page.textContent('#cmpBtn'), 'Compare selected (' + ids.length + ')', 'the button counts the ticked rows');
  await page.click('#cmpBtn');
  await page.waitForSelector('body[data-compare-ready]');
  const want = await getJson(api + '?ids=' + ids.join(','));
  eq(await page.getAttribute('#cmpBest', 'aria-label'), 'Best final metric so far by trial number of ' + ids.length + ' experiments', 'the curves');
  eq(await page.getAttribute('#cmpDist', 'aria-label'), 'Distribution of the final metric of ' + ids.length + ' experiments', 'the distributions');
  for (const sel of ['#cmpBest', '#cmpDist']) {
    for (let i = 0; i < ids.length; i++) assert(await colored(page, sel, SERIES[i]) > 50, sel + ': series ' + i + ' in the legend');
    assert(await inked(page, sel) > 5000, sel + ': drawn');
  }
  eq(await page.getAttribute('#cmpBest', 'data-points'), want.experiments.map(e => e.bestBySeq.length).join(','), 'the curves\' points');
  eq(await page.getAttribute('#cmpDist', 'data-points'), want.experiments.map(() => want.bins.n).join(','), 'the distributions\' points');
  // the figures
  const rows = await page.$$eval('#cmpStats tbody tr', trs => trs.map(tr => ({ id: tr.dataset.cexp, cells: Array.from(tr.cells).map(c => c.textContent) })));
  eq(rows.map(r => r.id).join(','), ids.join(','), 'one row per experiment, in order');
  want.experiments.forEach((e, i) => {
    const c = rows[i].cells;
    eq([c[1], c[2], c[3], c[4], c[5], c[6], c[8]].join('|'),
      [e.tuner, e.optimizeMode, e.trials, fmtNum(e.best.value), e.best.seq, fmtNum(e.distribution.median), 'every trial'].join('|'), 'figures of ' + e.id);
  });
  const note = await page.textContent('#cmpNote');
  assert(note.includes('sample') && note.includes(String(want.sample.spread)), 'the note says the sample: ' + note);
  assert(note.includes('Mixed optimize modes') === want.mixedModes, 'the note says the modes are mixed: ' + note);
  // the configs: every key, the differing ones marked
  const cfg = await page.$$eval('#cmpConfig tbody tr', trs => trs.map(tr => ({ differs: tr.classList.contains('differs'), mark: !!tr.querySelector('.dmark'), key: tr.querySelector('th').textContent.replace(/^≠\s*/, ''), vals: Array.from(tr.cells).slice(1).map(c => c.textContent) })));
  eq(cfg.length, want.config.rows.length, 'config rows');
  want.config.rows.forEach((r, i) => {
    eq(cfg[i].key, r.key, 'config row ' + i);
    eq(cfg[i].differs + '|' + cfg[i].mark, r.differs + '|' + r.differs, 'marked iff it differs: ' + r.key);
    eq(cfg[i].vals.join('|'), r.values.map(v => (v === null ? 'absent' : v)).join('|'), 'values of ' + r.key);
  });
  const marked = cfg.filter(r => r.differs).map(r => r.key);
  assert(marked.includes('tuner.name') && !marked.includes('trialConcurrency'), 'the tuner differs, the concurrency does not: ' + marked.join(', '));
  eq(await page.textContent('#cmpDiffInfo'), want.config.differing + ' of ' + want.config.rows.length + ' config keys differ (marked ≠).', 'the count of differences');
  await shot(page, '01-compare-by-trial');
  log(want.experiments.map(e => e.tuner + ' best ' + fmtNum(e.best.value)).join(', ') + '; ' + marked.length + ' config keys differ');

  await page.click('#cmpExps [data-cview=time]');
  eq(await page.getAttribute('#cmpBest', 'aria-label'), 'Best final metric so far by time of ' + ids.length + ' experiments', 'by time');
  assert(await inked(page, '#cmpBest') > 1000, 'the curves by time are drawn');
  await page.check('#cmpOnlyDiff');
  eq(await page.$$eval('#cmpConfig tbody tr', trs => trs.length), want.config.differing, 'only the differences');
  await page.locator('#cmpExps').screenshot({ path: path.join(artifacts, '02-compare-by-time-differences.png') });
  // live: the second experiment runs 5 more trials while the comparison is shown
  await page.evaluate(() => { window.__sameDocument = 1; });
  const before = want.experiments[1].trials;
  execFileSync('nnictl', ['update', 'trialnum', ids[1], '--value', String(before + 5)]);
  await until('the comparison to count the new trials', async () =>
    (await page.textContent('#cmpStats tbody tr[data-cexp="' + ids[1] + '"] .ctrials')) === String(before + 5), 120000, 500);
  assert(await page.evaluate(() => window.__sameDocument === 1), 'the page was not reloaded');
  const now = await getJson(api + '?ids=' + ids.join(','));
  eq(now.experiments[1].trials, before + 5, 'the REST answer counts them too');
  eq(await page.textContent('#cmpStats tbody tr[data-cexp="' + ids[1] + '"] .cmedian'), fmtNum(now.experiments[1].distribution.median), 'the median follows');
  log('live: ' + ids[1] + ' ' + before + ' -> ' + (before + 5) + ' trials without a reload');
  eq(errors.length, 0, 'console errors: ' + errors.join(' | '));
});
