// tensorboard.js: NNI's TensorBoard in the trial table, in headless chromium
// (tests/e2e/64-webui-tensorboard.sh), with tests/e2e/fake/tensorboard on the api's PATH:
//   node tensorboard.js live URL DB EXP ARTIFACTS URL_B EXP_B
//        URL is the experiment's UI under its URL prefix; two trials selected, the
//        TensorBoard button (by keyboard): the task RUNNING with its link, the link's
//        TensorBoard serving exactly those trials' runs (read here, and opened in a new
//        tab), the same trials again the same task, Stop (STOPPED, the port closed),
//        Restart (keyboard), a second task, Stop all, the task list; every request to
//        the api inside the prefix. Then experiment B (URL_B), whose api has no
//        tensorboard on its PATH: the UI shows the api's "tensorboard is not installed".
//   node tensorboard.js view URL DB EXP ARTIFACTS
//        the same experiment under `nnictl view`: read-only, and TensorBoard still starts.
// No console errors (but the browser's own line for the expected 400), a 390 px
// window, a screenshot of each step in ARTIFACTS.
'use strict';
const http = require('http');
const path = require('path');
const { runTest, sql, assert, eq, until } = require('./lib');

const [mode, url, db, expId, artifacts, urlB, expB] = process.argv.slice(2);
const shot = (page, name) => page.screenshot({ path: path.join(artifacts, name + '.png'), fullPage: true });
const log = m => console.log('webui-tensorboard: ' + m);
const trialsOf = exp => sql(db, `SELECT id FROM trial WHERE experiment_id='${exp}' ORDER BY sequence`).split('\n').filter(Boolean);

// GET from node (not the browser): {status, body}; throws when nothing listens
function fetchText(u) {
  return new Promise((resolve, reject) => {
    http.get(u, res => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', c => { body += c; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    }).on('error', reject);
  });
}
const apiTasks = async base => JSON.parse((await fetchText(base + 'api/v1/nni/tensorboard-tasks')).body);
// an element's text, or null when there is none (no waiting)
const text = (page, sel) => page.evaluate(s => { const e = document.querySelector(s); return e ? e.textContent : null; }, sel);
const sameSet = (x, y) => x.slice().sort().join(',') === y.slice().sort().join(',');

// the TensorBoard at a link shows exactly these trials' runs (each trial's
// tensorboard/ and tensorboard/eval); a task is RUNNING from its start, before its
// server listens
async function checkRuns(link, ids) {
  const home = await until(link + ' answering', () => fetchText(link), 10000);
  eq(home.status, 200, 'GET ' + link);
  assert(home.body.includes('<title>TensorBoard</title>'), link + ' is a TensorBoard: ' + home.body);
  const runs = JSON.parse((await fetchText(link + 'data/runs')).body);
  eq(runs.join(' '), ids.flatMap(id => [id, id + '/eval']).sort().join(' '), 'the runs of ' + link);
}

async function closed(link) {
  try { await fetchText(link); } catch (e) { return e.code === 'ECONNREFUSED'; }
  return false;
}

async function fits(page, what) {
  await page.waitForTimeout(200);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert(overflow <= 0, what + ' fits a 390 px window (overflow ' + overflow + ' px)');
  const inner = await page.evaluate(() => { const d = document.querySelector('dialog[open]'); return d ? d.scrollWidth - d.clientWidth : 0; });
  assert(inner <= 0, what + ': the dialog does not scroll sideways (' + inner + ' px)');
}

async function select(page, ids, on) {
  for (const id of ids) await page.setChecked(`tr[data-id="${id}"] input[type=checkbox]`, on);
}

// the launched task as the dialog shows it, equal to the api's task over these trials
async function current(page, base, ids, status) {
  await page.waitForSelector('#tbDialog[open]');
  const task = await until('the TensorBoard of ' + ids + ' shown ' + status, async () => {
    if (await page.isHidden('#tbCurrent')) return false;
    if ((await text(page, '#tbCurrent .st')) !== status) return false;
    const t = (await apiTasks(base)).find(x => sameSet(x.trialJobIdList, ids));
    return t && t.status === status && t;
  }, 20000);
  eq(await page.getAttribute(`#tbTable tr[data-task="${task.id}"]`, 'class'), 'current', 'the launched task\'s row is marked');
  return task;
}

// a task's row in the list, once it shows this status; its link (or null)
async function row(page, id, status) {
  await until('task ' + id + ' listed ' + status, async () =>
    (await text(page, `#tbTable tr[data-task="${id}"] .st`)) === status, 20000);
  const a = await page.$(`#tbTable tr[data-task="${id}"] a`);
  return a ? { href: await a.getAttribute('href'), target: await a.getAttribute('target') } : null;
}

async function closeDialog(page) {
  await page.keyboard.press('Escape');
  await page.waitForFunction(() => !document.querySelector('#tbDialog').open);
}

const linkOf = (base, port) => new URL(base).protocol + '//' + new URL(base).hostname + ':' + port + '/';

async function live(ctx, page) {
  const origin = new URL(url).origin, pfx = new URL(url).pathname.replace(/\/$/, '');
  const outside = [];
  page.on('request', r => { const u = new URL(r.url()); if (u.origin === origin && u.pathname !== pfx && !u.pathname.startsWith(pfx + '/')) outside.push(u.pathname); });
  await page.goto(url + 'detail');
  await page.waitForSelector('body[data-table-ready]');
  const [a, b, c, d] = trialsOf(expId);
  assert(d, 'four trials');
  eq((await apiTasks(url)).length, 0, 'no task before');

  // nothing selected: the UI says what to do
  await page.click('#tbLaunch');
  await until('the hint to select trials', async () => (await text(page, '#tableMsg')).includes('Select trials') &&
    (await page.getAttribute('#tableMsg', 'class')).includes('err'), 5000);
  assert(!(await page.$('#tbDialog[open]')), 'no dialog without a selection');

  // two trials, the button by keyboard
  await select(page, [a, b], true);
  await page.focus('#tbLaunch');
  await page.keyboard.press('Enter');
  const t1 = await current(page, url, [a, b], 'RUNNING');
  const link1 = linkOf(url, t1.port);
  eq(await page.getAttribute('#tbOpen', 'href'), link1, 'the link of the launched task');
  eq(await page.getAttribute('#tbOpen', 'target'), '_blank', 'the link opens a new tab');
  eq(JSON.stringify(await row(page, t1.id, 'RUNNING')), JSON.stringify({ href: link1, target: '_blank' }), 'the task\'s row and link');
  await checkRuns(link1, [a, b]);
  const [tab] = await Promise.all([ctx.waitForEvent('page'), page.click('#tbOpen')]);
  await tab.waitForLoadState();
  eq(await tab.title(), 'TensorBoard', 'the link opened in a new tab');
  eq(tab.url(), link1, 'the new tab\'s address');
  await tab.close();
  await shot(page, '01-tensorboard-running');
  await page.setViewportSize({ width: 390, height: 800 });
  await fits(page, 'the TensorBoard dialog');
  await shot(page, '02-tensorboard-narrow');
  await page.setViewportSize({ width: 1280, height: 800 });
  await closeDialog(page);
  log('trials ' + a + ', ' + b + ': task ' + t1.id + ' RUNNING, its link serves exactly their runs (node and a new tab), 390 px');

  // the same trials again: the same task, no other
  await page.click('#tbLaunch');
  eq((await current(page, url, [a, b], 'RUNNING')).id, t1.id, 'the same trials give the same task');
  eq((await apiTasks(url)).length, 1, 'one task');
  eq((await page.$$('#tbTable tr[data-task]')).length, 1, 'one task listed');

  // Stop: STOPPED, no link, its port closed; the focus stays on the row (now Restart)
  await page.click(`#tbTable tr[data-task="${t1.id}"] button[data-tb=DELETE]`);
  eq(await row(page, t1.id, 'STOPPED'), null, 'no link once stopped');
  eq((await apiTasks(url)).find(t => t.id === t1.id).status, 'STOPPED', 'the api\'s status');
  assert(await until('the port of ' + t1.id + ' closed', () => closed(link1), 10000), 'closed');
  eq(await page.textContent('#tbCurrent .st'), 'STOPPED', 'the launched task shown STOPPED');
  await until('the focus on Restart', () => page.evaluate(() => document.activeElement.dataset.tb === 'PUT'), 5000);
  await shot(page, '03-tensorboard-stopped');

  // Restart by keyboard: RUNNING again, a new process, the same runs
  await page.keyboard.press('Enter');
  const link2 = await row(page, t1.id, 'RUNNING');
  const t1b = (await apiTasks(url)).find(t => t.id === t1.id);
  eq(t1b.status, 'RUNNING', 'restarted in the api');
  assert(t1b.pid !== t1.pid, 'a new tensorboard process');
  eq(link2.href, linkOf(url, t1b.port), 'the restarted task\'s link');
  await checkRuns(link2.href, [a, b]);
  log('stop: STOPPED and its port closed; restart (keyboard): RUNNING on port ' + t1b.port + ' with the same runs');

  // another pair of trials: a second task; Stop all stops both
  await closeDialog(page);
  await select(page, [a, b], false);
  await select(page, [c, d], true);
  await page.click('#tbLaunch');
  const t2 = await current(page, url, [c, d], 'RUNNING');
  assert(t2.id !== t1.id, 'a second task');
  await checkRuns(linkOf(url, t2.port), [c, d]);
  eq((await page.$$('#tbTable tr[data-task]')).length, 2, 'two tasks listed');
  await shot(page, '04-tensorboard-two');
  await page.click('#tbStopAll');
  for (const t of [t1b, t2]) {
    eq(await row(page, t.id, 'STOPPED'), null, 'task ' + t.id + ' stopped by Stop all');
    assert(await until('the port of ' + t.id + ' closed', () => closed(linkOf(url, t.port)), 10000), 'closed');
  }
  assert((await apiTasks(url)).every(t => t.status === 'STOPPED'), 'every task STOPPED in the api');
  assert(await page.isDisabled('#tbStopAll'), 'Stop all is disabled with nothing running');
  await shot(page, '05-tensorboard-stopped-all');
  await closeDialog(page);

  // the list on its own (the tasks button): both tasks, no launched one
  await page.click('#tbTasks');
  await page.waitForSelector('#tbDialog[open]');
  await until('two tasks listed', async () => (await page.$$('#tbTable tr[data-task]')).length === 2, 5000);
  assert(await page.isHidden('#tbCurrent'), 'no launched task shown');
  await closeDialog(page);
  assert(outside.length === 0, 'requests outside the prefix: ' + outside.join(' '));
  log('a second task over ' + c + ', ' + d + '; Stop all: both STOPPED, ports closed; the task list; all requests inside ' + pfx);
}

// experiment B's api has no tensorboard on its PATH: the 400's message, shown as an error
async function missing(page) {
  await page.goto(urlB + 'detail');
  await page.waitForSelector('body[data-table-ready]');
  const [x] = trialsOf(expB);
  await select(page, [x], true);
  await page.click('#tbLaunch');
  await page.waitForSelector('#tbDialog[open]');
  await until('the error shown', async () => (await page.getAttribute('#tbMsg', 'class')) === 'msg err', 10000);
  const msg = await page.textContent('#tbMsg');
  assert(msg.includes('tensorboard is not installed'), 'the api\'s message: ' + msg);
  assert((await page.textContent('#tbTable tbody')).includes('No TensorBoard yet'), 'no task listed');
  eq((await apiTasks(urlB)).length, 0, 'no task in B');
  await shot(page, '06-tensorboard-not-installed');
  await closeDialog(page);
  log('without tensorboard: "' + msg + '"');
}

// under nnictl view: read-only, TensorBoard still starts and stops
async function view(page) {
  await page.goto(url + 'detail');
  await page.waitForSelector('body[data-table-ready]');
  await until('VIEWED', async () => (await text(page, '#expStatus')) === 'VIEWED', 10000);
  assert(await page.isVisible('#readonly'), 'the read-only note is shown');
  assert(await page.$$eval('#trials button[data-act=rerun]', bs => bs.length > 0 && bs.every(x => x.disabled)), 're-run is disabled');
  assert(await page.isEnabled('#tbLaunch'), 'TensorBoard is enabled in view mode');
  const [a, , c] = trialsOf(expId);
  await select(page, [a, c], true);
  await page.click('#tbLaunch');
  const t = await current(page, url, [a, c], 'RUNNING');
  await checkRuns(linkOf(url, t.port), [a, c]);
  await shot(page, '07-view-tensorboard');
  await page.click('#tbStopAll');
  eq(await row(page, t.id, 'STOPPED'), null, 'stopped in view mode');
  log('view: read-only, TensorBoard over ' + a + ', ' + c + ' RUNNING with their runs, then stopped');
}

runTest(artifacts, 'failure-' + mode, async (ctx, page) => {
  const errors = [];
  let expected400 = 0;
  page.on('console', m => {
    if (m.type() !== 'error') return;
    // the browser's own line for the 400 the missing-tensorboard case must get
    if (mode === 'live' && /status of 400/.test(m.text()) && /\/api\/v1\/nni\/tensorboard$/.test(m.location().url)) expected400++;
    else errors.push('console: ' + m.text());
  });
  page.on('pageerror', e => errors.push('page error: ' + e.message));
  if (mode === 'live') {
    await live(ctx, page);
    eq(expected400, 0, 'no failed request before the missing-tensorboard case');
    await missing(page);
    eq(expected400, 1, 'the one 400 of the missing-tensorboard case');
  } else if (mode === 'view') {
    await view(page);
  } else throw new Error('mode: live or view');
  assert(errors.length === 0, 'no console errors: ' + errors.join('; '));
  log('no console errors');
});
