// e2e.js: the web UI of a real experiment in headless chromium (tests/e2e/60-webui.sh).
//   node e2e.js live URL DB EXP_ID ARTIFACTS   a running experiment: overview numbers
//        against the database, sort, filter, a trial's detail, concurrency change
//        followed by the scheduler, kill; no console errors; narrow window
//   node e2e.js view URL DB EXP_ID ARTIFACTS   a stopped experiment under `nnictl view`
//        (read-only); then the api goes away (the caller stops it when told on stdout)
//        and the UI must say it is unreachable
//   node e2e.js prefix URL DB EXP_ID ARTIFACTS   the UI under a URL prefix (URL ends
//        with it): pages, files, logs and API calls stay inside it
// A screenshot of each page goes to ARTIFACTS.
'use strict';
const path = require('path');
const readline = require('readline');
const { runTest, sql, assert, eq, until } = require('./lib');

const [mode, url, db, expId, artifacts] = process.argv.slice(2);
const shot = (page, name) => page.screenshot({ path: path.join(artifacts, name + '.png'), fullPage: true });
const log = m => console.log('webui: ' + m);

function watchConsole(page) {
  const errors = [];
  page.on('console', m => { if (m.type() === 'error') errors.push('console: ' + m.text()); });
  page.on('pageerror', e => errors.push('page error: ' + e.message));
  return errors;
}

const num = s => Number(String(s).replace(/[^0-9.eE+-]/g, ''));

// a refresh that has ended (the UI counts its polls in body[data-ticks])
async function refresh(page) {
  const n = Number(await page.getAttribute('body', 'data-ticks'));
  await page.click('#refreshNow');
  await page.waitForFunction(n => Number(document.body.dataset.ticks) > n, n);
}

// the UI's counts as shown
async function shownCounts(page) {
  return page.$$eval('#counts b[data-count]', els => Object.fromEntries(els.map(e => [e.dataset.count, Number(e.textContent.replace(/,/g, ''))])));
}

function dbCounts() {
  const out = { WAITING: 0, RUNNING: 0, SUCCEEDED: 0, FAILED: 0, USER_CANCELED: 0, SYS_CANCELED: 0, EARLY_STOPPED: 0 };
  for (const line of sql(db, `SELECT status, count(*) FROM trial WHERE experiment_id='${expId}' GROUP BY status`).split('\n')) {
    if (!line) continue;
    const [s, n] = line.split('|');
    out[s] = Number(n);
  }
  return out;
}

// the overview equals the database: the trial counts are read until both agree (the
// experiment runs meanwhile), the rest once
async function checkOverview(page, maximize) {
  await until('overview counts equal to the database', async () => {
    await refresh(page);
    const shown = await shownCounts(page);
    const want = dbCounts();
    for (const k of Object.keys(want)) if (shown[k] !== want[k]) return false;
    return true;
  }, 60000, 300);
  await until('the best metric of the database shown', async () => {
    await refresh(page);
    const [id, val] = sql(db, `SELECT id || '|' || final_metric FROM trial WHERE experiment_id='${expId}' AND status='SUCCEEDED'` +
      ` AND final_metric IS NOT NULL ORDER BY final_metric ${maximize ? 'DESC' : 'ASC'}, sequence LIMIT 1`).split('|');
    return num(await page.textContent('#bestValue')) === Number(val) && (await page.textContent('#best button')).includes(id);
  }, 30000, 300);
  const [name, conc, maxTrials] = sql(db, `SELECT name, concurrency, max_trial_number FROM experiment WHERE id='${expId}'`).split('|');
  const info = await page.textContent('#info');
  assert(info.includes(expId), 'the experiment id is shown');
  assert(info.includes(name), 'the experiment name is shown');
  eq(await page.inputValue('#concurrency'), conc, 'concurrency field');
  eq(await page.inputValue('#maxTrials'), maxTrials, 'max trial number field');
  const trialsText = await page.textContent('#trialsText');
  assert(trialsText.includes('/ ' + Number(maxTrials).toLocaleString('en-US')), 'progress shows max trials: ' + trialsText);
}

async function tableIds(page) {
  return page.$$eval('#trials tbody tr[data-id]', trs => trs.map(t => t.dataset.id));
}
async function tableColumn(page, cls) {
  return page.$$eval('#trials tbody tr[data-id] td.' + cls, tds => tds.map(t => t.textContent));
}
async function waitTable(page, pred, what) {
  return until(what, async () => pred(await tableIds(page)), 20000, 150);
}

async function live(page, errors) {
  const maximize = sql(db, `SELECT json_extract(config, '$.tuner.classArgs.optimize_mode') FROM experiment WHERE id='${expId}'`) === 'maximize';
  await page.goto(url + 'oview');
  await page.waitForSelector('body[data-overview-ready]');
  await checkOverview(page, maximize);
  await shot(page, '01-overview');
  log('overview numbers equal the database');

  // trials detail: first page, sort by metric, filter by status and by text
  await page.click('nav a[data-page=detail]');
  await page.waitForSelector('body[data-table-ready]');
  eq(new URL(page.url()).pathname.endsWith('/detail'), true, 'the address says /detail');
  const total = Number(sql(db, `SELECT count(*) FROM trial WHERE experiment_id='${expId}'`));
  assert((await tableIds(page)).length > 0, 'the table has rows');
  await shot(page, '02-trials');

  await page.click('th[data-sort=metric] button'); // ascending
  await page.click('th[data-sort=metric] button'); // descending
  await until('sorted by metric, descending', async () => (await page.getAttribute('th[data-sort=metric]', 'aria-sort')) === 'descending' &&
    (await tableColumn(page, 'metric')).length > 0, 10000);
  await until('the first row is the best trial of the database', async () => {
    await refresh(page);
    const metrics = (await tableColumn(page, 'metric')).map(m => (m === '—' ? null : Number(m)));
    const vals = metrics.filter(v => v !== null);
    for (let i = 1; i < vals.length; i++) if (vals[i] > vals[i - 1]) return false;
    // trials without a metric come last
    const firstNull = metrics.indexOf(null);
    if (firstNull >= 0 && metrics.slice(firstNull).some(v => v !== null)) return false;
    const top = Number(sql(db, `SELECT max(final_metric) FROM trial WHERE experiment_id='${expId}' AND status='SUCCEEDED'`));
    return vals[0] === top;
  }, 30000, 300);
  log('sort by metric: descending, and the first row is the best of the database');

  await page.selectOption('#fStatus', 'SUCCEEDED');
  await until('only SUCCEEDED rows, as many as the database has', async () => {
    await refresh(page);
    const st = await tableColumn(page, 'st');
    const n = Number(sql(db, `SELECT count(*) FROM trial WHERE experiment_id='${expId}' AND status='SUCCEEDED'`));
    const info = await page.textContent('#pageInfo');
    return st.length > 0 && st.every(s => s === 'SUCCEEDED') && info.endsWith(' of ' + n.toLocaleString('en-US'));
  }, 30000, 300);
  const someId = (await tableIds(page))[0];
  await page.fill('#fText', someId);
  await waitTable(page, ids => ids.length === 1 && ids[0] === someId, 'the text filter finds exactly trial ' + someId);
  await shot(page, '03-trials-filtered');
  await page.fill('#fText', '');
  await page.selectOption('#fStatus', '');
  await page.click('th[data-sort=sequence] button');
  await waitTable(page, ids => ids.length === Math.min(50, Number(sql(db, `SELECT count(*) FROM trial WHERE experiment_id='${expId}'`))), 'the whole first page again');
  log('filter by status and by text');

  // chart tabs
  for (const tab of ['params', 'duration', 'intermediate', 'metric']) {
    await page.click(`[data-tab=${tab}]`);
    await page.waitForFunction(t => document.querySelector(`[data-tab=${t}]`).getAttribute('aria-selected') === 'true', tab);
    await page.waitForTimeout(300);
    await shot(page, '04-chart-' + tab);
  }

  // a trial's detail: parameters equal the database, curve, stdout
  const done = sql(db, `SELECT id FROM trial WHERE experiment_id='${expId}' AND status='SUCCEEDED' ORDER BY sequence LIMIT 1`);
  await page.fill('#fText', done);
  await waitTable(page, ids => ids.length === 1 && ids[0] === done, 'trial ' + done + ' alone');
  await page.click(`tr[data-id="${done}"] button[data-act=open]`);
  await page.waitForSelector('#trialDialog[open]');
  await until('the dialog shows the trial', async () => (await page.textContent('#dlgTitle')).includes(done), 10000);
  const shown = JSON.parse(await page.$eval('#dlgParams', e => e.textContent.split('\n(source')[0]));
  const stored = JSON.parse(sql(db, `SELECT parameters FROM trial WHERE id='${done}'`));
  eq(JSON.stringify(shown), JSON.stringify(stored), 'parameters in the dialog');
  await until('stdout shown', async () => (await page.textContent('#dlgLog')).includes('done'), 10000);
  const want = sql(db, `SELECT count(*) FROM metric WHERE trial_id='${done}' AND type='PERIODICAL'`);
  await until('the curve has the trial\'s intermediate metrics', async () =>
    (await page.getAttribute('#dlgChart', 'aria-label')) === want + ' intermediate results of trial ' + done, 10000);
  await shot(page, '05-trial-detail');
  await page.keyboard.press('Escape'); // keyboard closes the dialog
  await page.waitForFunction(() => !document.querySelector('#trialDialog').open);
  await page.fill('#fText', '');
  log('trial detail: parameters, curve, stdout');

  // concurrency: the scheduler follows the UI's change
  await page.click('nav a[data-page=oview]');
  await page.waitForSelector('#page-oview:not([hidden])');
  await page.fill('#concurrency', '3');
  await page.press('#concurrency', 'Enter'); // a keyboard submit
  await until('concurrency 3 stored', async () => sql(db, `SELECT concurrency FROM experiment WHERE id='${expId}'`) === '3', 10000);
  await until('three trials running, in the database and in the UI', async () => {
    await refresh(page);
    const running = Number(sql(db, `SELECT count(*) FROM trial WHERE experiment_id='${expId}' AND status='RUNNING'`));
    const c = await shownCounts(page);
    return running === 3 && c.RUNNING === 3;
  }, 60000, 300);
  await shot(page, '06-overview-concurrency-3');
  log('concurrency 3: three trials run');

  // the other live settings
  await page.fill('#maxTrials', '70');
  await page.click('form[data-update=MAX_TRIAL_NUM] button');
  await until('max trial number 70 stored', async () => sql(db, `SELECT max_trial_number FROM experiment WHERE id='${expId}'`) === '70', 10000);
  await page.fill('#maxDuration', '2h');
  await page.click('form[data-update=MAX_EXEC_DURATION] button');
  await until('max duration 2h stored', async () => sql(db, `SELECT max_exec_seconds FROM experiment WHERE id='${expId}'`) === '7200', 10000);
  await until('the UI shows the new limits', async () => {
    await refresh(page);
    return (await page.textContent('#trialsText')).includes('/ 70') && (await page.textContent('#timeText')).includes('/ 2h 00m 00s');
  }, 10000);
  log('max trial number and max duration set from the UI');

  // kill a running trial from the table: a customized trial that holds on after its
  // final metric (trialCommand of 60-webui.sh), so it surely runs when the click comes
  page.on('dialog', d => d.accept());
  const posted = await fetch(url + 'api/v1/nni/trial-jobs', { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ x: 7, lr: 0.001, opt: 'sgd', hold: 1 }) });
  eq(posted.status, 200, 'POST /trial-jobs');
  const victim = (await posted.json()).trialJobId;
  await until('the holding trial runs', async () => sql(db, `SELECT status FROM trial WHERE id='${victim}'`) === 'RUNNING', 60000);
  await page.click('nav a[data-page=detail]');
  await page.selectOption('#fStatus', 'RUNNING');
  await page.fill('#fText', victim);
  await waitTable(page, ids => ids.length === 1 && ids[0] === victim, 'the running trial ' + victim + ' in the table');
  await page.click(`tr[data-id="${victim}"] button[data-act=kill]`);
  await until('the killed trial is USER_CANCELED in the database', async () => sql(db, `SELECT status FROM trial WHERE id='${victim}'`) === 'USER_CANCELED', 30000);
  await page.selectOption('#fStatus', 'USER_CANCELED');
  await waitTable(page, ids => ids.includes(victim), 'the killed trial listed as USER_CANCELED');
  await shot(page, '07-trials-killed');
  log('kill: ' + victim + ' is USER_CANCELED');

  // re-run a finished trial: a new trial with the same parameters
  await page.selectOption('#fStatus', '');
  await page.fill('#fText', done);
  await waitTable(page, ids => ids.length === 1 && ids[0] === done, 'trial ' + done + ' alone');
  // reruns only: the tuner queues trials of its own meanwhile
  const reruns = () => Number(sql(db, `SELECT count(*) FROM trial WHERE experiment_id='${expId}' AND parameter_source='rerun'`));
  const before = reruns();
  await page.click(`tr[data-id="${done}"] button[data-act=rerun]`);
  await until('a rerun of ' + done + ' in the database', async () =>
    sql(db, `SELECT count(*) FROM trial WHERE experiment_id='${expId}' AND parameter_source='rerun'` +
      ` AND parameters=(SELECT parameters FROM trial WHERE id='${done}')`) === '1', 10000);
  eq(reruns(), before + 1, 'one rerun more');
  // the row is committed before the answer reaches the page: wait for the page too
  await until('the table says where the rerun went', async () =>
    /Re-run queued as trial #\d+/.test(await page.textContent('#tableMsg')), 10000);
  await page.fill('#fText', '');
  log('re-run of ' + done);

  // a narrow window: nothing wider than the window but the table's own scroller
  await page.setViewportSize({ width: 390, height: 800 });
  await page.click('nav a[data-page=oview]');
  await page.waitForTimeout(300);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert(overflow <= 0, 'the overview fits a 390 px window (overflow ' + overflow + ' px)');
  await shot(page, '08-overview-narrow');
  await page.setViewportSize({ width: 1280, height: 800 });

  // keyboard: Tab reaches the controls
  await page.focus('#interval');
  let reached = false;
  for (let i = 0; i < 40 && !reached; i++) {
    await page.keyboard.press('Tab');
    reached = await page.evaluate(() => document.activeElement && document.activeElement.id === 'concurrency');
  }
  assert(reached, 'Tab reaches the concurrency field');
  assert(errors.length === 0, 'no console errors: ' + errors.join('; '));
  log('no console errors');
}

async function view(page, errors) {
  await page.goto(url);
  await page.waitForSelector('body[data-overview-ready]');
  eq(await page.textContent('#expStatus'), 'VIEWED', 'status badge');
  assert(await page.isVisible('#readonly'), 'the read-only note is shown');
  assert(await page.isDisabled('#concurrency'), 'concurrency cannot be edited');
  assert(await page.isDisabled('#stopExp'), 'stop is disabled');
  const shown = await shownCounts(page);
  const want = dbCounts();
  for (const k of Object.keys(want)) eq(shown[k], want[k], 'count of ' + k);
  await shot(page, '10-view-overview');
  await page.click('nav a[data-page=detail]');
  await page.waitForSelector('body[data-table-ready]');
  const ids = await tableIds(page);
  eq(ids.length, Math.min(50, Number(sql(db, `SELECT count(*) FROM trial WHERE experiment_id='${expId}'`))), 'rows of the first page');
  assert(await page.$$eval('#trials button[data-act=kill]', bs => bs.every(b => b.disabled)), 'kill is disabled in view mode');
  assert(await page.$$eval('#trials button[data-act=custom]', bs => bs.length > 0 && bs.every(b => b.disabled)), 'customized trial is disabled in view mode');
  await shot(page, '11-view-trials');
  assert(errors.length === 0, 'no console errors: ' + errors.join('; '));
  log('view: read-only, numbers equal the database');

  // nothing changes in a view: the polls read the experiment and the changes since
  // the cursor, and nothing else (no refresh storm)
  const seen = [];
  const onReq = r => seen.push(new URL(r.url()).pathname.replace(/.*\/api\/v1\/nni\//, '') + new URL(r.url()).search);
  page.on('request', onReq);
  await page.selectOption('#interval', '3000');
  await page.waitForTimeout(7000);
  page.off('request', onReq);
  const polls = seen.filter(p => p.startsWith('trial-jobs?since=')).length;
  assert(polls >= 2, 'at least two polls in 7 s at 3 s: ' + seen.join(' '));
  assert(seen.every(p => p === 'experiment' || p === 'check-status' || p.startsWith('trial-jobs?since=')),
    'idle polls read only experiment, check-status and trial-jobs?since=: ' + seen.join(' '));
  log('idle polls: ' + seen.length + ' requests in 7 s, only what can change');

  // the api goes away: the caller stops it, the UI says so
  console.log('STOP-API');
  const rl = readline.createInterface({ input: process.stdin });
  await new Promise(r => rl.once('line', r));
  rl.close();
  await page.waitForSelector('#banner:not([hidden])', { timeout: 30000 });
  const banner = await page.textContent('#banner');
  assert(/not reachable/.test(banner), 'the banner says the api is unreachable: ' + banner);
  assert(await page.evaluate(() => document.body.classList.contains('offline')), 'the page is marked offline');
  // the data already shown stays
  eq((await tableIds(page)).length, ids.length, 'rows stay visible');
  await shot(page, '12-api-unreachable');
  log('api unreachable: banner shown, data kept');
}

// the UI under a URL prefix, opened at the prefix without its slash (the address
// nnictl prints): every page, file and API call must stay inside the prefix
async function prefix(page, errors) {
  const outside = [];
  const pfx = new URL(url).pathname.replace(/\/$/, '');
  page.on('request', r => { const p = new URL(r.url()).pathname; if (p !== pfx && !p.startsWith(pfx + '/')) outside.push(p); });
  await page.goto(url.replace(/\/$/, ''));
  await page.waitForSelector('body[data-overview-ready]');
  eq(new URL(page.url()).pathname, pfx + '/', 'redirected to the prefix with its slash');
  const shown = await shownCounts(page);
  const want = dbCounts();
  for (const k of Object.keys(want)) eq(shown[k], want[k], 'count of ' + k);
  await shot(page, '20-prefix-overview');
  await page.click('nav a[data-page=detail]');
  await page.waitForSelector('body[data-table-ready]');
  eq(new URL(page.url()).pathname, pfx + '/detail', 'the trials page address');
  const ids = await tableIds(page);
  eq(ids.length, Number(sql(db, `SELECT count(*) FROM trial WHERE experiment_id='${expId}'`)), 'rows');
  await page.click(`tr[data-id="${ids[0]}"] button[data-act=open]`);
  await until('stdout of the trial', async () => (await page.textContent('#dlgLog')).includes('done'), 10000);
  await shot(page, '21-prefix-trial');
  await page.keyboard.press('Escape');
  // the log panel and All experiments stay inside the prefix too
  await page.click('#logBtn');
  await until('the log under the prefix', async () => (await page.textContent('#panelText')).includes(expId), 10000);
  eq(new URL(await page.$eval('#logDownload', a => a.href)).pathname, pfx + '/logs/nnictl_stderr.log', 'the log download address');
  await page.keyboard.press('Escape');
  await page.click('nav a[data-page=experiment]');
  await page.waitForSelector('body[data-experiments-ready]');
  eq(new URL(page.url()).pathname, pfx + '/experiment', 'the All experiments address');
  eq(new URL(await page.$eval(`tr[data-exp="${expId}"] a.eid`, a => a.href)).pathname, pfx + '/oview', 'this experiment\'s link');
  await page.click('nav a[data-page=detail]');
  await page.waitForSelector('#page-detail:not([hidden])');
  await page.reload(); // a reload of /<prefix>/detail is the same page
  await page.waitForSelector('body[data-table-ready]');
  assert(await page.isVisible('#page-detail'), 'the reloaded page shows the trials');
  assert(outside.length === 0, 'requests outside the prefix: ' + outside.join(' '));
  assert(errors.length === 0, 'no console errors: ' + errors.join('; '));
  log('under the prefix ' + pfx + ': overview, trials, a trial, reload');
}

runTest(artifacts, 'failure-' + mode, async (ctx, page) => {
  const errors = watchConsole(page);
  if (mode === 'live') await live(page, errors);
  else if (mode === 'view') await view(page, errors);
  else if (mode === 'prefix') await prefix(page, errors);
  else throw new Error('mode: live or view');
});
