// more.js: the web UI's NNI features beyond the overview and the trial table, in
// headless chromium (tests/e2e/62-webui-more.sh):
//   node more.js URL DB EXP_A ARTIFACTS EXP_B EXP_C
// URL is experiment A's UI; B is another running experiment, C a stopped one.
// All experiments, Add/Remove columns (kept in localStorage), Compare, the Summary
// and log downloads, a customized trial: each against the database, with no console
// error, at 390 px and by keyboard. A screenshot of each step goes to ARTIFACTS.
'use strict';
const fs = require('fs');
const path = require('path');
const { runTest, sql, assert, eq, until } = require('./lib');

const [url, db, expA, artifacts, expB, expC] = process.argv.slice(2);
const shot = (page, name) => page.screenshot({ path: path.join(artifacts, name + '.png'), fullPage: true });
const log = m => console.log('webui-more: ' + m);
const pad = n => String(n).padStart(2, '0');
// the UI's time format, in the browser's time zone (the same machine's)
function fmtTime(ms) {
  if (!ms) return '—';
  const d = new Date(Number(ms));
  return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' + pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
}
// chart.js's number format
function fmtNum(v) {
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(2);
  return String(Number(v.toPrecision(6)));
}
const rowsOf = (query) => sql(db, query).split('\n').filter(Boolean).map(l => l.split('|'));

async function fits(page, what) {
  await page.waitForTimeout(200);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert(overflow <= 0, what + ' fits a 390 px window (overflow ' + overflow + ' px)');
}

async function refresh(page) {
  const n = Number(await page.getAttribute('body', 'data-ticks'));
  await page.click('#refreshNow');
  await page.waitForFunction(n => Number(document.body.dataset.ticks) > n, n);
}

async function allExperiments(page) {
  await page.goto(url + 'experiment');
  await page.waitForSelector('body[data-experiments-ready]');
  eq(await page.getAttribute('nav a[data-page=experiment]', 'aria-current'), 'page', 'the nav marks All experiments');
  // every experiment of the database, with NNI's columns
  const want = rowsOf(`SELECT id, name, port, platform, start_time, coalesce(end_time, 0), status FROM experiment ORDER BY id`);
  eq(want.length, 3, 'experiments in the database');
  const shown = await page.$$eval('#experiments tbody tr[data-exp]', trs => trs.map(tr => ({
    id: tr.dataset.exp, cells: Array.from(tr.cells).map(c => c.textContent.trim()), href: (tr.querySelector('a.eid') || {}).href || null })));
  eq(shown.map(r => r.id).sort().join(' '), want.map(r => r[0]).join(' '), 'the ids listed');
  for (const [id, name, port, platform, start, end, status] of want) {
    const r = shown.find(s => s.id === id);
    const running = id !== expC; // A and B have a live api; C was stopped
    eq(r.cells[0], name, 'name of ' + id);
    assert(r.cells[1].startsWith(id), 'id cell of ' + id + ': ' + r.cells[1]);
    eq(r.cells[2], status, 'status of ' + id + ' (as stored)');
    eq(r.cells[3], running ? port : '—', 'port of ' + id);
    eq(r.cells[4], platform, 'platform of ' + id);
    eq(r.cells[5], fmtTime(start), 'start of ' + id);
    eq(r.cells[6], fmtTime(Number(end)), 'end of ' + id);
    if (!running) eq(r.href, null, 'no link to the stopped ' + id);
    else if (id === expB) eq(r.href, `http://127.0.0.1:${port}/oview`, 'link to B\'s UI');
    else eq(new URL(r.href).pathname, new URL(url).pathname + 'oview', 'link to this experiment\'s overview');
  }
  eq(await page.textContent('#expInfo'), '3 of 3 experiments of the database (2 with a running api: their ID opens their web UI).', 'the count line');
  const platforms = await page.$$eval('#ePlatform option', os => os.map(o => o.value));
  eq(platforms.join(','), ',' + Array.from(new Set(want.map(r => r[3]))).sort().join(','), 'platform choices');
  await shot(page, '01-experiments');

  const listed = () => page.$$eval('#experiments tbody tr[data-exp]', trs => trs.map(t => t.dataset.exp).join(' '));
  await page.selectOption('#eStatus', 'STOPPED');
  eq(await listed(), rowsOf(`SELECT id FROM experiment WHERE status = 'STOPPED' ORDER BY id`).join(' '), 'status filter STOPPED');
  await page.selectOption('#eStatus', '');
  await page.selectOption('#ePlatform', 'local');
  eq((await listed()).split(' ').length, 3, 'platform filter local');
  await page.fill('#eText', 'more-b');
  eq(await listed(), expB, 'search by name');
  await page.fill('#eText', expC.slice(0, 6).toUpperCase());
  eq(await listed(), expC, 'search by id (any case)');
  await page.fill('#eText', 'no such experiment');
  eq(await listed(), '', 'search without a match');
  assert((await page.textContent('#experiments tbody')).includes('No experiment matches'), 'says nothing matches');
  await page.fill('#eText', '');
  // dates (the browser's day): started from the day after the last start: none; from
  // the first start's day: all; ended by the day before the first end: none
  const ymd = ms => { const d = new Date(Number(ms)); return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()); };
  const starts = want.map(r => Number(r[4])), ends = want.map(r => Number(r[5]));
  await page.fill('#eFrom', ymd(Math.max(...starts) + 86400000));
  eq(await listed(), '', 'started from the next day');
  await page.fill('#eFrom', ymd(Math.min(...starts)));
  eq((await listed()).split(' ').sort().join(' '), want.map(r => r[0]).join(' '), 'started from the first day');
  await page.fill('#eTo', ymd(Math.min(...ends) - 86400000));
  eq(await listed(), '', 'ended by the day before');
  await page.fill('#eTo', ymd(Math.max(...ends)));
  eq((await listed()).split(' ').sort().join(' '), want.filter(r => Number(r[5]) > 0).map(r => r[0]).join(' '), 'ended by the last day');
  await page.fill('#eFrom', '');
  await page.fill('#eTo', '');
  eq((await listed()).split(' ').length, 3, 'no date filter');
  // sort by name, ascending then descending
  await page.click('th[data-esort=name] button');
  eq(await listed(), rowsOf(`SELECT id FROM experiment ORDER BY name`).join(' '), 'sorted by name');
  await page.click('th[data-esort=name] button');
  eq(await listed(), rowsOf(`SELECT id FROM experiment ORDER BY name DESC`).join(' '), 'sorted by name, descending');

  // narrow window
  await page.setViewportSize({ width: 390, height: 800 });
  await fits(page, 'All experiments');
  await shot(page, '02-experiments-narrow');
  await page.setViewportSize({ width: 1280, height: 800 });

  // keyboard: Tab to B's link, Enter opens B's web UI
  await page.focus('#eText');
  let onLink = false;
  for (let i = 0; i < 30 && !onLink; i++) {
    await page.keyboard.press('Tab');
    onLink = await page.evaluate(id => { const a = document.activeElement; return !!a && a.matches('a.eid') && a.textContent === id; }, expB);
  }
  assert(onLink, 'Tab reaches the link of experiment B');
  await page.keyboard.press('Enter');
  await page.waitForURL(u => u.port === String(rowsOf(`SELECT port FROM experiment WHERE id='${expB}'`)[0][0]));
  await page.waitForSelector('body[data-overview-ready]');
  assert((await page.textContent('#info')).includes(expB), 'B\'s UI shows B');
  await shot(page, '03-experiment-b');
  await page.goBack();
  await page.waitForSelector('body[data-experiments-ready]');
  log('All experiments: 3 rows equal the database, filters, dates, search, sort, the link to B (keyboard), 390 px');
}

const cellsOf = (page, col) => page.$$eval(`#trials tbody tr[data-id] td[data-col="${col}"]`,
  tds => tds.map(td => [td.closest('tr').dataset.id, td.textContent]));

async function columns(page) {
  await page.goto(url + 'detail');
  await page.waitForSelector('body[data-table-ready]');
  const ids = await page.$$eval('#trials tbody tr[data-id]', trs => trs.map(t => t.dataset.id));
  eq(ids.length, Number(sql(db, `SELECT count(*) FROM trial WHERE experiment_id='${expA}'`)), 'rows');
  assert(!(await page.$('#trials th[data-col="param:x"]')), 'no x column by default');
  // by keyboard: Tab to "Add/Remove columns", Enter opens it, Tab to x, Space ticks it
  await page.focus('#compare');
  await page.keyboard.press('Tab');
  eq(await page.evaluate(() => document.activeElement.textContent), 'Add/Remove columns', 'Tab reaches the column chooser');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#colPick[open] input[data-col="param:x"]');
  const choices = await page.$$eval('#colList input', is => is.map(i => i.dataset.col));
  for (const c of ['end', 'param:x', 'param:opt', 'mkey:loss', 'reason', 'params']) assert(choices.includes(c), 'column choice ' + c + ' in ' + choices);
  let onX = false;
  for (let i = 0; i < 20 && !onX; i++) {
    await page.keyboard.press('Tab');
    onX = await page.evaluate(() => document.activeElement.dataset.col === 'param:x');
  }
  assert(onX, 'Tab reaches the x checkbox');
  await page.keyboard.press('Space');
  await page.waitForSelector('#trials th[data-col="param:x"]');
  await page.check('#colList input[data-col="param:opt"]');
  await page.check('#colList input[data-col="mkey:loss"]');
  await page.check('#colList input[data-col="end"]');
  await page.uncheck('#colList input[data-col="params"]');
  await page.keyboard.press('Escape');
  assert(!(await page.$('#colPick[open]')), 'Escape closes the chooser');
  await shot(page, '04-columns');
  async function checkCells() {
    const want = new Map(rowsOf(`SELECT id, json_extract(parameters, '$.x'), json_extract(parameters, '$.opt'),` +
      ` coalesce(end_time, 0), coalesce(message, ''), status FROM trial WHERE experiment_id='${expA}'`).map(r => [r[0], r]));
    for (const col of ['param:x', 'param:opt', 'mkey:loss']) eq((await cellsOf(page, col)).length, want.size, 'cells of column ' + col);
    eq(await page.$$eval('#trials tbody td.end', tds => tds.length), want.size, 'cells of the end time');
    for (const [id, x] of await cellsOf(page, 'param:x')) eq(x, want.get(id)[1], 'x of ' + id);
    for (const [id, o] of await cellsOf(page, 'param:opt')) eq(o, want.get(id)[2], 'opt of ' + id);
    const ends = await page.$$eval('#trials tbody tr[data-id] td.end', tds => tds.map(td => [td.closest('tr').dataset.id, td.textContent]));
    for (const [id, e] of ends) eq(e, fmtTime(Number(want.get(id)[3])), 'end time of ' + id);
    // the other metric key: the final metric's "loss" (a FAILED trial has none)
    for (const [id, l] of await cellsOf(page, 'mkey:loss')) {
      const stored = sql(db, `SELECT json_extract(value, '$.loss') FROM metric WHERE trial_id='${id}' AND type='FINAL'`);
      eq(l, want.get(id)[5] === 'SUCCEEDED' ? fmtNum(Number(stored)) : '—', 'loss of ' + id);
    }
    const reasons = await page.$$eval('#trials tbody tr[data-id] td.reason', tds => tds.map(td => [td.closest('tr').dataset.id, td.textContent]));
    for (const [id, m] of reasons) eq(m, want.get(id)[4], 'message of ' + id);
    assert(reasons.some(([id, m]) => want.get(id)[5] === 'FAILED' && m !== ''), 'the failed trial\'s message is shown');
    eq(await page.$$eval('#trials tbody td.params', tds => tds.length), 0, 'the parameters column is removed');
  }
  await checkCells();
  // kept in localStorage: the same columns after a reload
  await page.reload();
  await page.waitForSelector('body[data-table-ready]');
  await page.waitForSelector('#trials th[data-col="mkey:loss"]');
  await checkCells();
  // a hyperparameter column sorts on the server
  await page.click('#trials th[data-col="param:x"] button');
  await page.click('#trials th[data-col="param:x"] button');
  await until('sorted by x, descending', async () => (await page.getAttribute('#trials th[data-col="param:x"]', 'aria-sort')) === 'descending' &&
    (await cellsOf(page, 'param:x')).map(c => c[0]).join(' ') ===
    rowsOf(`SELECT id FROM trial WHERE experiment_id='${expA}' ORDER BY json_extract(parameters, '$.x') DESC, sequence DESC`).join(' '), 10000);
  eq(await page.evaluate(() => { const th = document.activeElement.closest('th'); return th && th.dataset.col; }), 'param:x',
    'the sort button keeps the focus after the table is drawn again');
  // and so does a key of the dict final metrics (a trial without one comes last)
  await page.click('#trials th[data-col="mkey:loss"] button');
  await page.click('#trials th[data-col="mkey:loss"] button');
  await until('sorted by loss, descending', async () => (await page.getAttribute('#trials th[data-col="mkey:loss"]', 'aria-sort')) === 'descending' &&
    (await cellsOf(page, 'mkey:loss')).map(c => c[0]).join(' ') ===
    rowsOf(`SELECT id FROM trial WHERE experiment_id='${expA}' ORDER BY json_extract(final_metric_json, '$.loss') IS NULL,` +
      ` json_extract(final_metric_json, '$.loss') DESC, sequence DESC`).join(' '), 10000);
  await page.setViewportSize({ width: 390, height: 800 });
  await fits(page, 'the trial table with more columns');
  await page.click('#colPick summary');
  await fits(page, 'the open column chooser');
  await shot(page, '05-columns-narrow');
  await page.click('#colPick summary');
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.click('#trials th[data-col="sequence"] button');
  log('columns: x, opt, loss, end time, message equal the database; kept after a reload; sort by x and by loss; keyboard; 390 px');
}

async function compare(page) {
  const picks = rowsOf(`SELECT id, sequence FROM trial WHERE experiment_id='${expA}' AND status='SUCCEEDED' ORDER BY sequence LIMIT 3`);
  for (const [id] of picks) await page.check(`tr[data-id="${id}"] input[type=checkbox]`);
  eq(await page.textContent('#compare'), 'Compare selected (3)', 'the compare button counts the selection');
  await page.focus('#compare');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#compareDialog[open]');
  await page.waitForFunction(ids => document.body.dataset.compareReady === ids, picks.map(p => p[0]).join(','));
  const label = await page.getAttribute('#cmpChart', 'aria-label');
  const want = picks.map(([id, seq]) => '#' + seq + ' (' + sql(db, `SELECT count(*) FROM metric WHERE trial_id='${id}' AND type='PERIODICAL'`) + ')');
  eq(label, 'Intermediate results of trials ' + want.join(', '), 'the curves of the chart');
  const heads = await page.$$eval('#cmpTable thead th[data-id]', ths => ths.map(t => t.dataset.id));
  eq(heads.join(' '), picks.map(p => p[0]).join(' '), 'one column per trial');
  const row = key => page.$$eval(`#cmpTable tr[data-row="${key}"] td`, tds => tds.map(t => t.textContent));
  for (const [key, expr] of [['param:x', "json_extract(parameters, '$.x')"], ['param:opt', "json_extract(parameters, '$.opt')"],
    ['metric', 'final_metric'], ['status', 'status'], ['id', 'id']]) {
    const got = await row(key);
    const stored = picks.map(([id]) => sql(db, `SELECT ${expr} FROM trial WHERE id='${id}'`));
    eq(got.join('|'), stored.map(v => (key === 'metric' ? fmtNum(Number(v)) : v)).join('|'), 'compare row ' + key);
  }
  eq((await row('mkey:loss')).join('|'), picks.map(([id]) => fmtNum(Number(sql(db, `SELECT json_extract(value, '$.loss') FROM metric WHERE trial_id='${id}' AND type='FINAL'`)))).join('|'), 'compare row loss');
  eq((await row('intermediate')).join('|'), picks.map(([id]) => sql(db, `SELECT count(*) FROM metric WHERE trial_id='${id}' AND type='PERIODICAL'`)).join('|'), 'compare row intermediate');
  await shot(page, '06-compare');
  await page.setViewportSize({ width: 390, height: 800 });
  await fits(page, 'the compare dialog');
  await shot(page, '07-compare-narrow');
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.keyboard.press('Escape');
  await page.waitForFunction(() => !document.querySelector('#compareDialog').open);
  log('compare: 3 trials, curves, parameters and metrics side by side equal the database');
}

async function summaryAndLog(page) {
  await page.click('#summaryBtn');
  await page.waitForSelector('#summaryDownload');
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#summaryDownload')]);
  eq(dl.suggestedFilename(), 'experiment.json', 'download name');
  const sum = JSON.parse(fs.readFileSync(await dl.path(), 'utf8'));
  eq(sum.experimentParameters.id, expA, 'experimentParameters.id');
  eq(sum.experimentParameters.params.experimentName, 'webui-more-a', 'experimentParameters.params');
  const trials = rowsOf(`SELECT id, status, (SELECT count(*) FROM metric m WHERE m.trial_id = t.id) FROM trial t WHERE experiment_id='${expA}' ORDER BY sequence`);
  eq(sum.trialMessage.map(t => t.trialJobId).join(' '), trials.map(t => t[0]).join(' '), 'trialMessage: every trial, in order');
  for (const [id, status, n] of trials) {
    const t = sum.trialMessage.find(x => x.trialJobId === id);
    eq(t.status, status, 'status of ' + id);
    eq(t.intermediate.length, n, 'metric records of ' + id);
    assert(t.intermediate.every(m => m.trialJobId === id), 'records of ' + id + ' are its own');
  }
  assert((await page.textContent('#panelText')).includes('"trialMessage"'), 'the summary is shown');
  await page.setViewportSize({ width: 390, height: 800 });
  await fits(page, 'the summary panel');
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.keyboard.press('Escape');
  log('summary: experiment.json has the profile and every trial with its metric records');

  // the config panel: the search space, then (arrow key) the config, as stored
  const canon = v => JSON.stringify(v, (k, x) => (x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.keys(x).sort().map(n => [n, x[n]])) : x));
  await page.click('#configBtn');
  await until('the search space shown', async () => canon(JSON.parse(await page.textContent('#panelText'))) ===
    canon(JSON.parse(sql(db, `SELECT search_space FROM experiment WHERE id='${expA}'`))), 10000);
  await page.focus('#panelTabs [data-file="Search space"]');
  await page.keyboard.press('ArrowRight');
  await until('the config shown', async () => {
    const c = JSON.parse(await page.textContent('#panelText'));
    return c.experimentName === 'webui-more-a' && String(c.trialConcurrency) === sql(db, `SELECT concurrency FROM experiment WHERE id='${expA}'`);
  }, 10000);
  await page.keyboard.press('Escape');

  // the log: shown and downloadable; its text is the api's log file
  await page.focus('#logBtn');
  await page.keyboard.press('Enter');
  await until('the log shown', async () => (await page.textContent('#panelText')).includes(expA), 10000);
  const file = path.join(sql(db, `SELECT exp_dir FROM experiment WHERE id='${expA}'`), 'log', 'nnictl_stderr.log');
  const [ldl] = await Promise.all([page.waitForEvent('download'), page.click('#logDownload')]);
  eq(ldl.suggestedFilename(), 'nnictl_stderr.log', 'log download name');
  const got = fs.readFileSync(await ldl.path(), 'utf8');
  assert(got.length > 0 && fs.readFileSync(file, 'utf8').startsWith(got), 'the downloaded log is the log file');
  await page.click('#panelTabs [data-file="nnictl_stdout.log"]');
  await until('stdout log shown', async () => (await page.getAttribute('#panelTabs [data-file="nnictl_stdout.log"]', 'aria-selected')) === 'true' &&
    (await page.getAttribute('#logDownload', 'download')) === 'nnictl_stdout.log', 10000);
  await shot(page, '08-log');
  await page.keyboard.press('Escape');
  log('config: search space and config as stored; log: nnictl_stderr.log shown and downloaded equal to the file');
}

async function customized(page) {
  page.on('dialog', d => d.accept()); // the "outside the search space" confirmation
  const [src, srcSeq] = rowsOf(`SELECT id, sequence FROM trial WHERE experiment_id='${expA}' AND status='SUCCEEDED'` +
    ` AND json_extract(parameters, '$.opt') = 'sgd' ORDER BY sequence LIMIT 1`)[0];
  const before = Number(sql(db, `SELECT count(*) FROM trial WHERE experiment_id='${expA}'`));
  await page.click(`tr[data-id="${src}"] button[data-act=custom]`);
  await page.waitForSelector('#customDialog[open]');
  eq(await page.textContent('#custTitle'), 'Customized trial from #' + srcSeq, 'dialog title');
  const stored = JSON.parse(sql(db, `SELECT parameters FROM trial WHERE id='${src}'`));
  eq(await page.inputValue('#custFields [data-param=x]'), String(stored.x), 'x copied');
  eq(JSON.parse(await page.inputValue('#custFields [data-param=opt]')), stored.opt, 'opt copied');
  assert(await page.evaluate(() => document.activeElement === document.querySelector('#custFields [data-param]')), 'the first field has the focus');
  // a value outside randint [1, 4) is flagged
  const hint = '#' + (await page.getAttribute('#custFields [data-param=x]', 'aria-describedby'));
  await page.fill('#custFields [data-param=x]', '9');
  await until('x=9 flagged', async () => (await page.textContent(hint)).includes('outside the search space'), 5000);
  await page.setViewportSize({ width: 390, height: 800 });
  await fits(page, 'the customized-trial dialog');
  await shot(page, '09-custom-narrow');
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.fill('#custFields [data-param=x]', '2');
  await page.selectOption('#custFields [data-param=opt]', JSON.stringify('adam'));
  await page.press('#custFields [data-param=x]', 'Enter'); // a keyboard submit
  await page.waitForFunction(() => !document.querySelector('#customDialog').open);
  const msg = await page.textContent('#tableMsg');
  const m = /Customized trial queued as trial #(\d+) \((\w+)\)/.exec(msg);
  assert(m, 'the new trial number is shown: ' + msg);
  const [seq, params, source] = rowsOf(`SELECT sequence, parameters, parameter_source FROM trial WHERE id='${m[2]}' AND experiment_id='${expA}'`)[0];
  eq(seq, m[1], 'the trial number shown is the stored one');
  eq(source, 'customized', 'parameter_source');
  eq(JSON.stringify(JSON.parse(params)), JSON.stringify({ x: 2, opt: 'adam' }), 'the edited parameters');
  eq(Number(sql(db, `SELECT count(*) FROM trial WHERE experiment_id='${expA}'`)), before + 1, 'one trial more');
  await until('the customized trial succeeded and is listed', async () => {
    if (sql(db, `SELECT status FROM trial WHERE id='${m[2]}'`) !== 'SUCCEEDED') return false;
    await refresh(page);
    return (await page.$$eval(`tr[data-id="${m[2]}"] td.st`, tds => tds.map(t => t.textContent))).join() === 'SUCCEEDED';
  }, 60000, 300);
  await shot(page, '10-custom-done');
  log('customized trial: #' + m[1] + ' (' + m[2] + ') with {x: 2, opt: adam} from #' + srcSeq + ', stored and run');
}

runTest(artifacts, 'failure', async (ctx, page) => {
  const errors = [];
  page.on('console', m => { if (m.type() === 'error') errors.push('console: ' + m.text()); });
  page.on('pageerror', e => errors.push('page error: ' + e.message));
  await allExperiments(page);
  await columns(page);
  await compare(page);
  await summaryAndLog(page);
  await customized(page);
  assert(errors.length === 0, 'no console errors: ' + errors.join('; '));
  log('no console errors');
});
