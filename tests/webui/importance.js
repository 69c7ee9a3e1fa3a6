// importance.js: the Importance tab of the trials page in headless chromium
// (tests/e2e/65-webui-importance.sh):
//   node importance.js URL API ARTIFACTS
// URL is the experiment's UI, API its GET /webui/importance. The tab draws its bars
// and their table; the table equals the REST answer (names in its order, importance
// and divergence in the UI's number format, trials, top), for the default metric and
// for the dict key "other" chosen in the tab's menu. No console error. Screenshots of
// both in ARTIFACTS.
'use strict';
const path = require('path');
const { runTest, assert, eq, fmtNum, getJson, pageErrors } = require('./lib');

const [url, api, artifacts] = process.argv.slice(2);
const shot = (page, name) => page.screenshot({ path: path.join(artifacts, name + '.png'), fullPage: true });
const log = m => console.log('webui-importance: ' + m);

async function checkTable(page, want, what) {
  const rows = await page.$$eval('#impTable tbody tr', trs => trs.map(tr => Array.from(tr.cells).map(c => c.textContent)));
  eq(rows.length, want.params.length, what + ': rows');
  want.params.forEach((p, i) => {
    eq(rows[i].join('|'), [p.name, p.type, fmtNum(p.importance), fmtNum(p.divergence), p.trials, p.top].join('|'), what + ': row ' + i);
  });
  const note = await page.textContent('#chartNote');
  assert(note.includes('PED-ANOVA') && note.includes('Over ' + want.sample.trials + ' trials'), what + ': the note says the method and the sample: ' + note);
}

runTest(artifacts, '99-failure', async (ctx, page) => {
  const errors = pageErrors(page);
  await page.goto(url + 'detail');
  await page.waitForSelector('body[data-table-ready]');
  await page.click('[data-tab=importance]');
  await page.waitForSelector('body[data-importance-ready]');
  assert(await page.isVisible('#impTable'), 'the table is shown');
  eq(await page.getAttribute('#detailChart', 'aria-label'), 'Importance of 3 parameters for the default metric', 'the chart');
  const want = await getJson(api);
  await checkTable(page, want, 'default metric');
  eq(want.params[want.params.length - 1].name, 'z', 'z ranks last');
  await shot(page, '01-importance-default');
  log('default metric: ' + want.params.map(p => p.name + ' ' + fmtNum(p.importance)).join(', '));

  assert(await page.isVisible('#impKey'), 'the metric menu (the trials have dict metrics)');
  await page.selectOption('#impKey', 'other');
  await page.waitForFunction(() => (document.querySelector('#detailChart').getAttribute('aria-label') || '').includes('other'));
  const other = await getJson(api + '?metric=other');
  await checkTable(page, other, 'key other');
  eq(other.params[0].name, 'z', 'z ranks first for "other"');
  await shot(page, '02-importance-other');
  log('key other: ' + other.params.map(p => p.name + ' ' + fmtNum(p.importance)).join(', '));

  await page.click('[data-tab=metric]');
  assert(!(await page.isVisible('#impTable')), 'the table goes with its tab');
  eq(errors.length, 0, 'console errors: ' + errors.join(' | '));
});
