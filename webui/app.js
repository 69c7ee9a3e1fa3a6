/* app.js: trialq's web UI. Plain JavaScript, no build step. Every URL is relative to
 * the page's directory, so the UI works under a URL prefix. Polls only what changed:
 * each tick reads the experiment and the trials changed since the last cursor
 * (GET trial-jobs?since=, X-Trialq-Seq) and refetches the summary, the visible table
 * page and the visible chart only when something did change. */
'use strict';
(function () {
  const $ = s => document.querySelector(s);
  const $$ = s => Array.from(document.querySelectorAll(s));
  const PAGES = ['oview', 'detail', 'experiment'];

  /* the page's directory: /<prefix>/ */
  function baseOf(path) {
    const segs = path.split('/');
    const last = segs[segs.length - 1];
    if (PAGES.includes(last) || last === 'index.html' || last === '') segs.pop();
    return segs.join('/') + '/';
  }
  const BASE = baseOf(location.pathname);
  const API = BASE + 'api/v1/nni/';

  const S = {
    page: 'oview',
    interval: 5000,
    timer: null,
    seq: null,              // X-Trialq-Seq of the last trial read
    profile: null,
    status: null,
    errors: [],
    overview: null,
    charts: null,
    params: null,
    reachable: true,
    lastOk: 0,
    downSince: 0,
    busy: false,
    table: { sort: 'sequence', order: 'asc', status: '', q: '', offset: 0, limit: 50, total: 0, rows: [] },
    selected: new Set(),
    tab: 'metric',
    impKey: '',             // the Importance tab's key of dict final metrics ('': the default metric)
    stale: { overview: true, table: true, charts: true },
    dialog: null,           // {id, trial, metricSeq, metrics, log}
    pickers: {},
    cols: loadCols(),       // the user's column choices: {key: true|false}
    paramKeys: new Set(),   // hyperparameter names seen (search space, rows)
    metricKeys: new Set(),  // keys of dict final metrics seen, other than "default"
    exps: { rows: [], sort: 'startTime', order: 'desc', status: '', platform: '', q: '', from: null, to: null },
    custom: null,           // {from: trial, msgEl} of the customized-trial dialog
    seqOf: new Map(),       // trial id -> trial number, of the rows seen
    tb: { tasks: [], current: null, focus: null, reads: 0, timer: null, html: '' }, // TensorBoard tasks
  };

  function loadCols() {
    try { const c = JSON.parse(localStorage.getItem('trialq-columns') || '{}'); return c && typeof c === 'object' ? c : {}; } catch (e) { return {}; }
  }

  /* ---------------- HTTP ---------------- */

  class ApiError extends Error {
    constructor(status, msg) { super(msg); this.status = status; }
  }

  function token() { return sessionStorage.getItem('trialq-token') || ''; }

  async function call(method, path, body, { text = false, raw = false } = {}) {
    const headers = {};
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (method !== 'GET' && token()) headers['X-Trialq-Token'] = token();
    let r;
    try {
      r = await fetch(API + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
    } catch (e) {
      throw new ApiError(0, 'the api does not answer (' + e.message + ')');
    }
    if (!r.ok) {
      let msg = r.status + ' ' + r.statusText;
      try { const j = await r.json(); if (j && j.error) msg = j.error; } catch (e) { /* not JSON */ }
      throw new ApiError(r.status, msg);
    }
    if (raw) return r;
    if (text) return r.text();
    const t = await r.text();
    return t ? JSON.parse(t) : null;
  }
  const get = (p, o) => call('GET', p, undefined, o);

  /* A change: retried once with a token asked from the user when the api wants one. */
  async function change(method, path, body) {
    try {
      return await call(method, path, body);
    } catch (e) {
      if (e.status === 401 || (e.status === 403 && /token/i.test(e.message))) {
        const t = window.prompt('This api needs the experiment\'s token for changes (X-Trialq-Token):', '');
        if (t) { sessionStorage.setItem('trialq-token', t.trim()); return call(method, path, body); }
      }
      throw e;
    }
  }

  /* ---------------- formatting ---------------- */

  const esc = s => String(s === undefined || s === null ? '' : s).replace(/[&<>"']/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
  const pad = n => String(n).padStart(2, '0');
  function fmtTime(ms) {
    if (!ms) return '—';
    const d = new Date(ms);
    return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' + pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
  }
  function fmtDur(sec) {
    if (sec === null || sec === undefined || !Number.isFinite(sec)) return '—';
    sec = Math.max(0, Math.round(sec));
    const d = Math.floor(sec / 86400), h = Math.floor(sec % 86400 / 3600), m = Math.floor(sec % 3600 / 60), s = sec % 60;
    if (d) return d + 'd ' + h + 'h ' + pad(m) + 'm';
    if (h) return h + 'h ' + pad(m) + 'm ' + pad(s) + 's';
    if (m) return m + 'm ' + pad(s) + 's';
    return s + 's';
  }
  const fmtNum = v => (typeof v === 'number' ? window.TQChart.fmt(v) : v === null || v === undefined ? '—' : String(v));
  const fmtInt = n => Number(n || 0).toLocaleString('en-US');

  /* a duration setting ("3600s", "30m", 7200) in seconds */
  function durSeconds(v) {
    if (typeof v === 'number') return v;
    const m = /^\s*([0-9.]+)\s*([smhd]?)\s*$/.exec(String(v || ''));
    if (!m) return null;
    return parseFloat(m[1]) * ({ '': 1, s: 1, m: 60, h: 3600, d: 86400 }[m[2]]);
  }

  /* trial fields from a TrialJobInfo */
  function paramsOf(t) {
    try { return JSON.parse(t.hyperParameters[0]).parameters || {}; } catch (e) { return {}; }
  }
  function metricValue(data) {
    // NNI's double encoding: a JSON string holding the value's JSON
    try {
      let v = JSON.parse(data);
      if (typeof v === 'string') v = JSON.parse(v);
      if (v && typeof v === 'object') v = v.default;
      return typeof v === 'number' ? v : null;
    } catch (e) { return null; }
  }
  /* the final metric as reported (a number or a dict), or null */
  function finalObjOf(t) {
    if (!t.finalMetricData || !t.finalMetricData.length) return null;
    try {
      let v = JSON.parse(t.finalMetricData[0].data);
      if (typeof v === 'string') v = JSON.parse(v);
      return v;
    } catch (e) { return null; }
  }
  function finalOf(t) {
    return t.finalMetricData && t.finalMetricData.length ? metricValue(t.finalMetricData[0].data) : null;
  }
  function durationOf(t) {
    if (!t.startTime || t.status === 'WAITING') return null;
    return ((t.endTime || Date.now()) - t.startTime) / 1000;
  }
  const paramText = p => Object.keys(p).map(k => k + '=' + (typeof p[k] === 'number' ? fmtNum(p[k]) : JSON.stringify(p[k]))).join(', ');

  /* ---------------- state of the connection ---------------- */

  function setReachable(ok, err) {
    const b = $('#banner');
    if (ok) {
      if (!S.reachable) { S.stale.overview = S.stale.table = S.stale.charts = true; }
      S.reachable = true;
      S.lastOk = Date.now();
      S.downSince = 0;
      b.hidden = true;
      document.body.classList.remove('offline');
      $('#updated').textContent = 'updated ' + fmtTime(S.lastOk).slice(11);
      return;
    }
    if (S.reachable) S.downSince = Date.now();
    S.reachable = false;
    document.body.classList.add('offline');
    b.hidden = false;
    b.textContent = 'The trialq api at ' + location.origin + BASE + ' is not reachable (' + err + '). ' +
      (S.lastOk ? 'Showing data from ' + fmtTime(S.lastOk) + '. ' : 'No data could be loaded. ') +
      'Retrying every ' + Math.max(3, S.interval / 1000 || 5) + ' s.';
    $('#updated').textContent = 'api unreachable';
  }

  function setMsg(el, text, ok) {
    el.textContent = text;
    el.className = 'msg ' + (ok ? 'ok' : 'err');
  }

  /* ---------------- polling ---------------- */

  async function tick(force) {
    if (S.busy) return;
    S.busy = true;
    try {
      // the first poll asks for everything at once: one round trip to a full page
      const first = S.seq === null && !S.profile;
      const early = first ? [loadOverview(), S.page === 'detail' ? loadTable() : null, loadCharts(),
        S.page === 'experiment' ? loadExperiments() : null]
        .map(p => p && p.then(() => null, e => e)) : [];
      const [profile, cs] = await Promise.all([get('experiment'), get('check-status')]);
      const statusChanged = S.status !== cs.status;
      S.profile = profile;
      S.status = cs.status;
      S.errors = cs.errors || [];
      if (first || S.seq === null || force) {
        S.stale.overview = S.stale.table = S.stale.charts = true;
      } else {
        // only what changed since the cursor: an empty list means nothing to redraw
        const r = await get('trial-jobs?since=' + S.seq + '&limit=1000', { raw: true });
        const changed = JSON.parse(await r.text() || '[]');
        const next = r.headers.get('X-Trialq-Seq');
        if (next !== null) S.seq = Number(next);
        if (changed.length || statusChanged) S.stale.overview = S.stale.table = S.stale.charts = true;
        if (S.dialog && changed.some(t => t.trialJobId === S.dialog.id)) S.dialog.stale = true;
      }
      performance.mark('tq-profile');
      renderProfile();
      performance.mark('tq-profile-rendered');
      const jobs = early;
      if (first) S.stale.overview = S.stale.table = S.stale.charts = false;
      if (S.stale.overview) jobs.push(loadOverview());
      if (S.stale.table && S.page === 'detail') jobs.push(loadTable());
      if (S.page === 'experiment') jobs.push(loadExperiments());
      if (S.stale.charts) jobs.push(loadCharts());
      if (S.dialog) jobs.push(refreshDialog());
      if ($('#tbDialog').open) jobs.push(loadTensorboards());
      const failed = (await Promise.all(jobs)).find(r => r instanceof Error);
      if (failed) throw failed;
      setReachable(true);
      // ms from the navigation to the first complete render (bench/webui_load reads it)
      if (!document.body.dataset.firstRender) document.body.dataset.firstRender = String(Math.round(performance.now()));
    } catch (e) {
      if (e.status === 0 || e instanceof SyntaxError) setReachable(false, e.message);
      else { setReachable(true); showError(e); }
    } finally {
      S.busy = false;
      document.body.dataset.ticks = String(Number(document.body.dataset.ticks || 0) + 1);
    }
  }

  function showError(e) {
    const b = $('#banner');
    b.hidden = false;
    b.textContent = 'Error: ' + e.message;
  }

  function schedule() {
    clearTimeout(S.timer);
    const ms = S.reachable ? S.interval : Math.max(3000, S.interval || 5000);
    if (ms > 0) S.timer = setTimeout(async () => { await tick(); schedule(); }, ms);
  }

  /* ---------------- overview ---------------- */

  async function loadOverview() {
    const o = await get('webui/overview');
    S.overview = o;
    if (S.seq === null) S.seq = o.seq;
    S.stale.overview = false;
    renderOverview();
    performance.mark('tq-overview-rendered');
    document.body.dataset.overviewReady = '1';
  }

  function renderProfile() {
    const p = S.profile, c = p.params || {};
    document.title = (c.experimentName || p.id) + ' · trialq';
    $('#expName').textContent = (c.experimentName || 'experiment') + ' (' + p.id + ')';
    const st = $('#expStatus');
    st.textContent = S.status;
    st.className = 'badge ' + S.status;
    const ro = S.status === 'VIEWED';
    $('#readonly').hidden = !ro;
    const ended = ['DONE', 'STOPPED', 'ERROR', 'VIEWED', 'STOPPING'].includes(S.status);
    $$('.edit input, .edit button').forEach(el => { el.disabled = ro || !S.reachable; });
    $('#stopExp').disabled = ro || ended;
    const tuner = c.tuner ? c.tuner.name : c.advisor ? c.advisor.name + ' (advisor)' : '—';
    const start = p.startTime, end = p.endTime;
    const rows = [
      ['Name', c.experimentName || '—'], ['ID', p.id], ['Status', S.status],
      ['Start', fmtTime(start)], ['End', end ? fmtTime(end) : '—'],
      ['Running time', fmtDur(p.execDuration)],
      ['Platform', c.trainingService ? (Array.isArray(c.trainingService) ? c.trainingService.map(t => t.platform).join(', ') : c.trainingService.platform) : '—'],
      ['Tuner', tuner], ['Trial command', c.trialCommand || (c.trainingService && c.trainingService.trialCommand) || '—'],
      ['Log directory', p.logDir],
    ];
    $('#info').innerHTML = rows.map(r => '<dt>' + esc(r[0]) + '</dt><dd>' + esc(r[1]) + '</dd>').join('');
    $('#errors').innerHTML = S.errors.map(m => '<li>' + esc(m) + '</li>').join('');
    // controls show the live values, unless the user is editing one
    const setv = (sel, v) => { const el = $(sel); if (document.activeElement !== el && !el.dataset.dirty) el.value = v; };
    setv('#concurrency', c.trialConcurrency || '');
    setv('#maxTrials', c.maxTrialNumber || '');
    setv('#maxDuration', c.maxExperimentDuration || '');
    const maxSec = durSeconds(c.maxExperimentDuration);
    bar('#timeBar', p.execDuration, maxSec);
    $('#timeText').textContent = fmtDur(p.execDuration) + ' / ' + (maxSec ? fmtDur(maxSec) : 'unlimited');
    if (S.overview) renderOverview();
    // the search space names the hyperparameter columns: draw the table again once known
    if (!S.profileSeen) { S.profileSeen = true; if (S.table.rows.length) renderTable(); }
  }

  function bar(sel, v, max) {
    const el = $(sel);
    const f = max ? Math.min(1, v / max) : 0;
    el.firstElementChild.style.width = (f * 100).toFixed(1) + '%';
    el.setAttribute('aria-valuemin', '0');
    el.setAttribute('aria-valuenow', String(v));
    if (max) el.setAttribute('aria-valuemax', String(max)); else el.removeAttribute('aria-valuemax');
  }

  function renderOverview() {
    const o = S.overview, c = (S.profile && S.profile.params) || {};
    if (!o) return;
    const max = c.maxTrialNumber;
    bar('#trialsBar', o.ended, max);
    $('#trialsText').textContent = fmtInt(o.ended) + ' / ' + (max ? fmtInt(max) : 'unlimited') + ' (' + fmtInt(o.total) + ' submitted)';
    const order = ['RUNNING', 'WAITING', 'SUCCEEDED', 'FAILED', 'USER_CANCELED', 'SYS_CANCELED', 'EARLY_STOPPED'];
    $('#counts').innerHTML = order.map(s => '<li><button type="button" data-status="' + s + '" class="st ' + s +
      '" aria-label="' + s + ': ' + o.counts[s] + ' trials, show them">' + s.replace('_', ' ').toLowerCase() +
      '<b data-count="' + s + '">' + fmtInt(o.counts[s]) + '</b></button></li>').join('') +
      '<li class="muted">concurrency ' + esc(c.trialConcurrency) + '</li>';
    const b = o.best;
    $('#best').innerHTML = b
      ? '<span id="bestValue">' + esc(fmtNum(b.value)) + '</span> <button type="button" data-open="' + esc(b.trialJobId) +
        '">trial #' + b.sequenceId + ' (' + esc(b.trialJobId) + ')</button>'
      : '<span class="muted">no final metric yet</span>';
    $('#nometric').textContent = (o.optimizeMode === 'maximize' ? 'Higher is better' : 'Lower is better') +
      ' (optimize_mode ' + o.optimizeMode + ').' +
      (o.succeededWithoutMetric ? ' ' + fmtInt(o.succeededWithoutMetric) + ' succeeded trial(s) reported no final metric and are not in the charts.' : '');
  }

  /* ---------------- table ---------------- */

  async function loadTable() {
    const t = S.table;
    const q = new URLSearchParams({ sort: t.sort, order: t.order, limit: t.limit, offset: t.offset });
    if (t.status) q.set('status', t.status);
    if (t.q) q.set('q', t.q);
    const want = q.toString();
    const r = await get('webui/trials?' + want);
    if (want !== tableQuery()) return; // the user changed the view meanwhile; a newer load follows
    t.total = r.total;
    t.rows = r.rows;
    if (S.seq === null) S.seq = r.seq;
    S.stale.table = false;
    if (t.offset > 0 && t.offset >= t.total) { t.offset = Math.max(0, Math.floor((t.total - 1) / t.limit) * t.limit); return loadTable(); }
    renderTable();
    performance.mark('tq-table-rendered');
    document.body.dataset.tableReady = '1';
  }
  function tableQuery() {
    const t = S.table;
    const q = new URLSearchParams({ sort: t.sort, order: t.order, limit: t.limit, offset: t.offset });
    if (t.status) q.set('status', t.status);
    if (t.q) q.set('q', t.q);
    return q.toString();
  }

  /* ---------------- table columns ---------------- */

  /* The columns of the trial table: the fixed ones, then one per hyperparameter and one
   * per other key of dict final metrics ("Add/Remove columns"; kept in localStorage). */
  const FIXED_COLS = [
    { key: 'sequence', label: 'Trial No.', sort: 'sequence', on: true },
    { key: 'id', label: 'ID', sort: 'id', on: true },
    { key: 'status', label: 'Status', sort: 'status', on: true },
    { key: 'metric', label: 'Default metric', sort: 'metric', on: true },
    { key: 'duration', label: 'Duration', sort: 'duration', on: true },
    { key: 'start', label: 'Start time', sort: 'start', on: true },
    { key: 'end', label: 'End time', sort: 'end', on: false },
    { key: 'params', label: 'Parameters', on: true },
    { key: 'reason', label: 'Waiting reason / message', on: true },
  ];

  function allCols() {
    const ss = (S.profile && S.profile.params && S.profile.params.searchSpace) || {};
    Object.keys(ss).forEach(k => S.paramKeys.add(k));
    const cols = FIXED_COLS.slice();
    for (const k of S.paramKeys) cols.push({ key: 'param:' + k, label: k, sort: 'param:' + k, on: false, group: 'Hyperparameters' });
    for (const k of S.metricKeys) cols.push({ key: 'mkey:' + k, label: k, sort: 'metric:' + k, on: false, group: 'Other metrics' });
    return cols;
  }
  const colOn = c => (c.key in S.cols ? !!S.cols[c.key] : c.on);

  function renderColPicker() {
    const box = $('#colList');
    const cols = allCols();
    const sig = cols.map(c => c.key).join('|');
    if (box.dataset.sig === sig) { // the same choices: only their state, the focus stays
      $$('#colList input[data-col]').forEach(i => { const c = cols.find(x => x.key === i.dataset.col); if (c) i.checked = colOn(c); });
      return;
    }
    box.dataset.sig = sig;
    let group = '';
    box.innerHTML = cols.map(c => {
      const head = c.group && c.group !== group ? '<div class="colgroup">' + esc(c.group) + '</div>' : '';
      group = c.group || group;
      return head + '<label><input type="checkbox" data-col="' + esc(c.key) + '"' + (colOn(c) ? ' checked' : '') + '> ' + esc(c.label) + '</label>';
    }).join('');
  }

  function cell(c, r) {
    const k = c.key;
    if (k === 'sequence') return '<td>' + r.sequenceId + '</td>';
    if (k === 'id') return '<td><code>' + esc(r.trialJobId) + '</code></td>';
    if (k === 'status') return '<td class="st ' + esc(r.status) + '">' + esc(r.status) + '</td>';
    if (k === 'metric') return '<td class="metric">' + esc(fmtNum(finalOf(r))) + '</td>';
    if (k === 'duration') return '<td>' + fmtDur(durationOf(r)) + '</td>';
    if (k === 'start') return '<td class="time">' + fmtTime(r.startTime) + '</td>';
    if (k === 'end') return '<td class="time end">' + fmtTime(r.endTime) + '</td>';
    if (k === 'params') { const p = paramText(paramsOf(r)); return '<td class="params" title="' + esc(p) + '">' + esc(p) + '</td>'; }
    if (k === 'reason') return '<td class="reason">' + esc(r.status === 'WAITING' ? r.waitingReason || '' : r.message || '') + '</td>';
    let v;
    if (k.startsWith('param:')) v = paramsOf(r)[k.slice(6)];
    else { const m = finalObjOf(r); v = m && typeof m === 'object' ? m[k.slice(5)] : undefined; }
    const txt = v === undefined ? '—' : typeof v === 'number' ? fmtNum(v) : typeof v === 'string' ? v : JSON.stringify(v);
    return '<td class="xcol" data-col="' + esc(k) + '">' + esc(txt) + '</td>';
  }

  function renderTable() {
    const t = S.table, ro = S.status === 'VIEWED';
    for (const r of t.rows) {
      S.seqOf.set(r.trialJobId, r.sequenceId);
      Object.keys(paramsOf(r)).forEach(k => S.paramKeys.add(k));
      const m = finalObjOf(r);
      if (m && typeof m === 'object') Object.keys(m).forEach(k => { if (k !== 'default') S.metricKeys.add(k); });
    }
    const cols = allCols().filter(colOn);
    renderColPicker();
    // the head is rebuilt only when the columns change, so that a sort button keeps the focus
    const head = $('#trials thead tr'), sig = cols.map(c => c.key).join('|');
    if (head.dataset.sig !== sig) {
      head.dataset.sig = sig;
      head.innerHTML = '<th scope="col"><span class="sr-only">Select</span></th>' +
        cols.map(c => '<th scope="col" data-col="' + esc(c.key) + '"' + (c.sort ? ' data-sort="' + esc(c.sort) + '"' +
          '><button type="button">' + esc(c.label) + '</button>' : '>' + esc(c.label)) + '</th>').join('') +
        '<th scope="col">Operation</th>';
    }
    $$('#trials th[data-sort]').forEach(th => {
      if (th.dataset.sort === t.sort) th.setAttribute('aria-sort', t.order === 'asc' ? 'ascending' : 'descending');
      else th.removeAttribute('aria-sort');
    });
    const tb = $('#trials tbody');
    if (!t.rows.length) {
      tb.innerHTML = '<tr><td colspan="' + (cols.length + 2) + '" class="muted">No trials' + (t.status || t.q ? ' match the filter' : ' yet') + '.</td></tr>';
    } else {
      tb.innerHTML = t.rows.map(r => {
        const live = r.status === 'WAITING' || r.status === 'RUNNING';
        return '<tr data-id="' + esc(r.trialJobId) + '">' +
          '<td><input type="checkbox" aria-label="Select trial ' + r.sequenceId + ' to compare"' + (S.selected.has(r.trialJobId) ? ' checked' : '') + '></td>' +
          cols.map(c => cell(c, r)).join('') +
          '<td class="ops"><button type="button" data-act="open">Details</button> ' +
          '<button type="button" data-act="kill" class="danger"' + (live && !ro ? '' : ' disabled') + '>Kill</button> ' +
          '<button type="button" data-act="rerun"' + (ro ? ' disabled' : '') + '>Re-run</button> ' +
          '<button type="button" data-act="custom"' + (ro ? ' disabled' : '') + ' aria-label="Customized trial from trial ' + r.sequenceId + '">Customize</button></td></tr>';
      }).join('');
    }
    const from = t.total ? t.offset + 1 : 0, to = Math.min(t.total, t.offset + t.rows.length);
    $('#pageInfo').textContent = fmtInt(from) + '–' + fmtInt(to) + ' of ' + fmtInt(t.total);
    $('#prev').disabled = t.offset === 0;
    $('#next').disabled = t.offset + t.limit >= t.total;
    $('#compare').textContent = 'Compare selected (' + S.selected.size + ')';
  }

  async function trialAction(act, id, msgEl) {
    try {
      if (act === 'kill') {
        if (!window.confirm('Kill trial ' + id + '?')) return;
        await change('DELETE', 'trial-jobs/' + encodeURIComponent(id));
        setMsg(msgEl, 'Kill of ' + id + ' requested.', true);
      } else if (act === 'rerun') {
        const r = await change('POST', 'trial-jobs/' + encodeURIComponent(id) + '/rerun');
        setMsg(msgEl, 'Re-run queued as trial #' + r.sequenceId + ' (' + r.trialJobId + ').', true);
      }
      await tick();
    } catch (e) {
      setMsg(msgEl, (act === 'kill' ? 'Kill' : 'Re-run') + ' failed: ' + e.message, false);
    }
  }

  /* ---------------- charts ---------------- */

  function chartVisible() { return S.page === 'oview' || S.page === 'detail'; }

  async function loadCharts() {
    if (!chartVisible()) return;
    // one bucket count for every page and window size: the server answers a repeated
    // request from its cache while no trial changed
    const buckets = 500;
    const tab = S.page === 'oview' ? 'metric' : S.tab;
    if (tab === 'metric' || tab === 'duration') S.charts = await get('webui/charts?buckets=' + buckets);
    else if (tab === 'params') S.params = await get('webui/params?n=1000');
    else if (tab === 'intermediate') S.curves = await loadCurves();
    else if (tab === 'importance') S.importance = await get('webui/importance' + (S.impKey ? '?metric=' + encodeURIComponent(S.impKey) : ''));
    else if (window.TQAnalysis.has(tab)) await window.TQAnalysis.load(tab, get); // slice, contour, ecdf, curves (analysis.js)
    S.stale.charts = false;
    performance.mark('tq-chart-data');
    drawCharts();
    performance.mark('tq-chart-drawn');
  }

  async function loadCurves() {
    let ids = Array.from(S.selected).slice(0, 10), note = '';
    if (!ids.length) {
      const o = S.overview || {};
      const r = await get('webui/trials?sort=metric&order=' + (o.optimizeMode === 'maximize' ? 'desc' : 'asc') + '&limit=5&status=SUCCEEDED');
      ids = r.rows.map(t => t.trialJobId);
      note = 'No trials selected: the 5 best are shown. Select trials in the table and press "Compare selected".';
    } else {
      note = 'Selected trials' + (S.selected.size > 10 ? ' (the first 10)' : '') + '.';
    }
    const curves = await Promise.all(ids.map(async id => {
      const m = await get('metric-data/' + encodeURIComponent(id) + '?type=PERIODICAL');
      return { id, points: m.map(r => [r.sequence, metricValue(r.data), id]).filter(p => p[1] !== null) };
    }));
    return { curves, note };
  }

  const COLORS = ['#0b5cad', '#d1495b', '#2a9d8f', '#e9c46a', '#6b4fbb', '#f4a261', '#264653', '#8ab17d', '#c86bfa', '#555'];

  function drawCharts() {
    const C = window.TQChart;
    const onOv = S.page === 'oview';
    const canvas = onOv ? $('#ovChart') : $('#detailChart');
    const tab = onOv ? 'metric' : S.tab;
    const note = $('#chartNote');
    let pick = () => null;
    if (tab === 'metric' && S.charts) {
      const c = S.charts;
      const last = c.final.points.length ? c.final.points[c.final.points.length - 1][0] : 0;
      pick = C.xy(canvas, {
        xLabel: 'trial No.', yLabel: 'final metric', empty: 'No final metric yet',
        series: [
          { name: 'final metric', kind: 'dots', color: '#0b5cad', points: c.final.points },
          { name: 'best so far (' + c.optimizeMode + ')', kind: 'step', color: '#d1495b', points: c.best, extendTo: last, width: 2 },
        ],
      });
      canvas.setAttribute('aria-label', 'Final metric of ' + c.final.count + ' trials by trial number, with the best so far');
      if (!onOv) note.textContent = c.final.count > c.final.points.length ? fmtInt(c.final.count) + ' trials, shown as the lowest and highest of each ' + c.width + ' consecutive trials.' : '';
    } else if (tab === 'duration' && S.charts) {
      const c = S.charts;
      pick = C.xy(canvas, {
        xLabel: 'trial No.', yLabel: 'duration (s)', empty: 'No trial has ended yet',
        series: [{ name: 'duration', kind: 'stems', color: '#2a9d8f', points: c.duration.points }],
      });
      canvas.setAttribute('aria-label', 'Duration of ' + c.duration.count + ' ended trials');
      note.textContent = c.duration.count > c.duration.points.length ? fmtInt(c.duration.count) + ' trials, shown as the shortest and longest of each ' + c.width + ' consecutive trials.' : '';
    } else if (tab === 'params' && S.params) {
      const ss = (S.profile && S.profile.params && S.profile.params.searchSpace) || {};
      const trials = S.params.trials;
      const names = Object.keys(ss).length ? Object.keys(ss) : Array.from(new Set(trials.flatMap(t => Object.keys(t.params))));
      const axes = names.map(n => {
        const spec = ss[n] || {}, type = spec._type || '';
        const vals = trials.map(t => t.params[n]);
        const numeric = vals.every(v => v === undefined || typeof v === 'number') && type !== 'choice';
        if (numeric) return { name: n, kind: /log/.test(type) ? 'log' : 'num' };
        const cats = Array.from(new Set((type === 'choice' && Array.isArray(spec._value) ? spec._value : vals).map(v => typeof v === 'string' ? v : JSON.stringify(v))));
        return { name: n, kind: 'cat', cats };
      });
      axes.push({ name: 'metric', kind: 'num' });
      const lines = trials.map(t => ({
        top: t.top,
        vals: axes.map(a => {
          if (a.name === 'metric' && a === axes[axes.length - 1]) return t.metric;
          const v = t.params[a.name];
          return a.kind === 'cat' ? (typeof v === 'string' ? v : JSON.stringify(v)) : v;
        }),
      }));
      C.parallel(canvas, { axes, lines, empty: 'No trial with a final metric yet' });
      canvas.setAttribute('aria-label', 'Parallel coordinates of ' + trials.length + ' trials');
      note.textContent = 'Blue: the best ' + trials.filter(t => t.top).length + ' trials; grey: a sample of the others (' + fmtInt(S.params.count) + ' trials have a final metric).';
    } else if (tab === 'importance' && S.importance) {
      drawImportance(C, canvas, note);
    } else if (window.TQAnalysis.has(tab)) {
      pick = window.TQAnalysis.draw(tab, canvas, note, S.metricKeys);
    } else if (tab === 'intermediate' && S.curves) {
      pick = C.xy(canvas, {
        xLabel: 'step (sequence)', yLabel: 'intermediate result', empty: 'The chosen trials reported no intermediate results',
        series: S.curves.curves.map((c, i) => ({ name: c.id, kind: 'line', color: COLORS[i % COLORS.length], points: c.points })),
      });
      canvas.setAttribute('aria-label', 'Intermediate results of ' + S.curves.curves.length + ' trials');
      note.textContent = S.curves.note;
    }
    S.pickers[canvas.id] = pick;
  }

  /* PED-ANOVA's answer (GET webui/importance): bars, the table of its numbers, which
   * metric (a key of dict final metrics may be chosen), and over which trials */
  function drawImportance(C, canvas, note) {
    const r = S.importance, ps = r.params;
    C.bars(canvas, { bars: ps.map(p => ({ name: p.name, value: p.importance })), xLabel: 'importance (sums to 1)',
      empty: 'No parameter' });
    canvas.setAttribute('aria-label', 'Importance of ' + ps.length + ' parameters for ' + (r.metric ? 'the metric key ' + r.metric : 'the default metric'));
    $('#impTable tbody').innerHTML = ps.map(p => '<tr data-param="' + esc(p.name) + '"><td>' + esc(p.name) + '</td><td>' + esc(p.type) +
      '</td><td class="num">' + esc(fmtNum(p.importance)) + '</td><td class="num">' + esc(fmtNum(p.divergence)) +
      '</td><td class="num">' + p.trials + '</td><td class="num">' + p.top + '</td></tr>').join('');
    const keys = [''].concat(Array.from(S.metricKeys));
    const sel = $('#impKey');
    if (sel.dataset.sig !== keys.join('|')) {
      sel.dataset.sig = keys.join('|');
      sel.innerHTML = keys.map(k => '<option value="' + esc(k) + '">' + (k ? esc(k) : 'default') + '</option>').join('');
    }
    sel.value = S.impKey || '';
    $('#impKeyBox').hidden = keys.length < 2;
    note.textContent = 'PED-ANOVA (Watanabe, Bansal, Hutter, IJCAI 2023): how far the best ' + Math.round(r.gamma * 100) +
      '% of the trials lie from all of them, per parameter, normalised to sum 1 (' + r.optimizeMode + '). Over ' +
      fmtInt(r.sample.trials) + ' trials: the most recent SUCCEEDED trials with a final metric, at most ' + fmtInt(r.sample.limit) + '.';
    document.body.dataset.importanceReady = String(r.seq);
  }

  function hookChartPointer(canvas) {
    const tip = $('#tip');
    const at = ev => {
      const r = canvas.getBoundingClientRect();
      const f = S.pickers[canvas.id];
      return f ? f(ev.clientX - r.left, ev.clientY - r.top) : null;
    };
    canvas.addEventListener('mousemove', ev => {
      const h = at(ev);
      if (!h) { tip.hidden = true; canvas.style.cursor = ''; return; }
      tip.hidden = false;
      tip.textContent = h.text || (h.s.name ? h.s.name + ': ' : '') + 'trial ' + (h.p[2] || '') + ' · x ' + fmtNum(h.p[0]) + ' · ' + fmtNum(h.p[1]);
      tip.style.left = (ev.clientX + 12) + 'px';
      tip.style.top = (ev.clientY + 12) + 'px';
      canvas.style.cursor = h.p && h.p[2] ? 'pointer' : '';
    });
    canvas.addEventListener('mouseleave', () => { tip.hidden = true; });
    canvas.addEventListener('click', ev => { const h = at(ev); if (h && h.p && h.p[2]) openTrial(h.p[2]); });
  }

  /* ---------------- trial dialog ---------------- */

  async function openTrial(id) {
    S.dialog = { id, trial: null, metricSeq: null, metrics: [], log: 'stdout', stale: true };
    $('#dlgTitle').textContent = 'Trial ' + id;
    $('#dlgInfo').innerHTML = '';
    $('#dlgParams').textContent = '';
    $('#dlgLog').textContent = '';
    $('#dlgMsg').textContent = '';
    const d = $('#trialDialog');
    if (!d.open) d.showModal();
    try { await refreshDialog(); } catch (e) { setMsg($('#dlgMsg'), e.message, false); }
  }

  async function refreshDialog() {
    const D = S.dialog;
    if (!D) return;
    const live = !D.trial || D.trial.status === 'WAITING' || D.trial.status === 'RUNNING';
    if (D.stale || live) {
      D.trial = await get('trial-jobs/' + encodeURIComponent(D.id));
      D.stale = false;
      renderDialogInfo();
    }
    // only the metrics stored since the last read of this trial
    if (live || D.metricSeq === null) {
      const r = await get('metric-data/' + encodeURIComponent(D.id) + '?type=PERIODICAL' + (D.metricSeq !== null ? '&since=' + D.metricSeq : ''), { raw: true });
      const rows = JSON.parse(await r.text() || '[]');
      const next = r.headers.get('X-Trialq-Seq');
      if (next !== null) D.metricSeq = Number(next);
      D.metrics = D.metrics.concat(rows.map(m => [m.sequence, metricValue(m.data), D.id]).filter(p => p[1] !== null));
      D.metrics.sort((a, b) => a[0] - b[0]);
      window.TQChart.xy($('#dlgChart'), { xLabel: 'step', yLabel: 'value', empty: 'No intermediate results', series: [{ name: D.id, kind: 'line', color: '#0b5cad', points: D.metrics }] });
      $('#dlgChart').setAttribute('aria-label', D.metrics.length + ' intermediate results of trial ' + D.id);
    }
    // a running trial's log grows: read again at most every 15 s (a log can be large)
    if (!D.logLoaded || (live && Date.now() - D.logAt > 15000)) await loadLog();
  }

  function renderDialogInfo() {
    const t = S.dialog.trial, ro = S.status === 'VIEWED';
    $('#dlgTitle').textContent = 'Trial #' + t.sequenceId + ' (' + t.trialJobId + ')';
    const rows = [
      ['Status', t.status], ['Final metric', t.finalMetricData && t.finalMetricData.length ? JSON.parse(t.finalMetricData[0].data) : '—'],
      ['Start', fmtTime(t.startTime)], ['End', fmtTime(t.endTime)], ['Duration', fmtDur(durationOf(t))],
      ['Attempt', t.attempt], ['Log path', t.logPath],
    ];
    if (t.waitingReason) rows.push(['Waiting reason', t.waitingReason]);
    if (t.message) rows.push(['Message', t.message]);
    $('#dlgInfo').innerHTML = rows.map(r => '<dt>' + esc(r[0]) + '</dt><dd' + (r[0] === 'Status' ? ' class="st ' + esc(r[1]) + '"' : '') + '>' + esc(r[1]) + '</dd>').join('');
    // the job's page on its platform (PAI-DLC's console), only an http(s) address as a link
    if (t.url && /^https?:\/\//i.test(t.url)) {
      $('#dlgInfo').insertAdjacentHTML('beforeend', '<dt>Tracking URL</dt><dd><a id="dlgUrl" target="_blank" rel="noopener noreferrer" href="' +
        esc(t.url) + '">' + esc(t.url) + '</a></dd>');
    }
    // the pods' own logs, fetched from PAI-DLC when the trial ended (workers/dlc.c)
    $('#trialDialog [data-log="dlc-pods.log"]').hidden = t.platform !== 'dlc';
    let rec = {};
    try { rec = JSON.parse(t.hyperParameters[0]); } catch (e) { /* none */ }
    $('#dlgParams').textContent = JSON.stringify(rec.parameters || {}, null, 2) +
      (rec.parameter_source && rec.parameter_source !== 'algorithm' ? '\n(source: ' + rec.parameter_source + ')' : '');
    $('#dlgKill').disabled = ro || !(t.status === 'WAITING' || t.status === 'RUNNING');
    $('#dlgRerun').disabled = ro;
    $('#dlgCustom').disabled = ro;
  }

  async function loadLog() {
    const D = S.dialog;
    $$('#trialDialog [data-log]').forEach(b => b.setAttribute('aria-selected', String(b.dataset.log === D.log)));
    let text;
    try {
      text = await get('trial-file/' + encodeURIComponent(D.id) + '/' + encodeURIComponent(D.log), { text: true });
    } catch (e) {
      if (e.status === 0) throw e;
      text = e.status === 404 ? '(no ' + D.log + ' yet)' : e.message;
    }
    const MAX = 200000;
    $('#dlgLog').textContent = text.length > MAX ? '… (' + fmtInt(text.length - MAX) + ' earlier characters not shown)\n' + text.slice(-MAX) : text;
    D.logLoaded = true;
    D.logAt = Date.now();
  }

  /* ---------------- compare ---------------- */

  /* The selected trials (at most 10): their intermediate curves on one chart and their
   * parameters and metrics side by side, one column per trial. */
  async function openCompare() {
    const ids = Array.from(S.selected).slice(0, 10);
    if (!ids.length) {
      setMsg($('#tableMsg'), 'Select trials with the boxes of the first column, then press Compare.', false);
      return;
    }
    const d = $('#compareDialog');
    $('#cmpTitle').textContent = 'Compare ' + ids.length + ' trial' + (ids.length > 1 ? 's' : '') + (S.selected.size > 10 ? ' (the first 10 selected)' : '');
    $('#cmpMsg').textContent = 'Loading…';
    $('#cmpMsg').className = 'msg';
    if (!d.open) d.showModal();
    let data;
    try {
      data = await Promise.all(ids.map(async id => {
        const [t, m] = await Promise.all([get('trial-jobs/' + encodeURIComponent(id)),
          get('metric-data/' + encodeURIComponent(id) + '?type=PERIODICAL')]);
        return { id, t, points: m.map(r => [r.sequence, metricValue(r.data), id]).filter(p => p[1] !== null).sort((a, b) => a[0] - b[0]) };
      }));
    } catch (e) {
      setMsg($('#cmpMsg'), 'Compare: ' + e.message, false);
      return;
    }
    $('#cmpMsg').textContent = '';
    const C = window.TQChart, canvas = $('#cmpChart');
    S.pickers[canvas.id] = C.xy(canvas, {
      xLabel: 'step (sequence)', yLabel: 'intermediate result', empty: 'The selected trials reported no intermediate results',
      series: data.map((x, i) => ({ name: '#' + x.t.sequenceId, kind: 'line', color: COLORS[i % COLORS.length], points: x.points })),
    });
    canvas.setAttribute('aria-label', 'Intermediate results of trials ' + data.map(x => '#' + x.t.sequenceId + ' (' + x.points.length + ')').join(', '));
    const ss = (S.profile && S.profile.params && S.profile.params.searchSpace) || {};
    const pkeys = Array.from(new Set(Object.keys(ss).concat(...data.map(x => Object.keys(paramsOf(x.t))))));
    const mkeys = Array.from(new Set([].concat(...data.map(x => { const m = finalObjOf(x.t); return m && typeof m === 'object' ? Object.keys(m).filter(k => k !== 'default') : []; }))));
    const show = v => (v === undefined ? '—' : typeof v === 'number' ? fmtNum(v) : typeof v === 'string' ? v : JSON.stringify(v));
    const rows = [
      ['id', 'ID', x => x.t.trialJobId],
      ['status', 'Status', x => x.t.status],
      ['metric', 'Default metric', x => fmtNum(finalOf(x.t))],
      ['duration', 'Duration', x => fmtDur(durationOf(x.t))],
      ['start', 'Start time', x => fmtTime(x.t.startTime)],
      ['end', 'End time', x => fmtTime(x.t.endTime)],
    ].concat(pkeys.map(k => ['param:' + k, k, x => show(paramsOf(x.t)[k])]),
      mkeys.map(k => ['mkey:' + k, k + ' (metric)', x => { const m = finalObjOf(x.t); return show(m && typeof m === 'object' ? m[k] : undefined); }]),
      [['intermediate', 'Intermediate results', x => String(x.points.length)]]);
    $('#cmpTable').innerHTML = '<caption class="sr-only">The selected trials side by side</caption><thead><tr><th scope="col">Trial No.</th>' +
      data.map((x, i) => '<th scope="col" data-id="' + esc(x.id) + '"><span class="swatch" style="background:' + COLORS[i % COLORS.length] +
        '" aria-hidden="true"></span>#' + x.t.sequenceId + '</th>').join('') + '</tr></thead><tbody>' +
      rows.map(r => '<tr data-row="' + esc(r[0]) + '"><th scope="row">' + esc(r[1]) + '</th>' +
        data.map(x => '<td' + (r[0] === 'status' ? ' class="st ' + esc(x.t.status) + '"' : '') + '>' + esc(r[2](x)) + '</td>').join('') + '</tr>').join('') +
      '</tbody>';
    document.body.dataset.compareReady = ids.join(',');
  }

  /* ---------------- customized trial ---------------- */

  const NUMERIC = ['uniform', 'quniform', 'loguniform', 'qloguniform', 'randint', 'normal', 'qnormal', 'lognormal', 'qlognormal'];

  /* NNI's "Customized trial": a trial's parameters copied into a form, edited, sent as
   * a new trial (POST trial-jobs); the reply's sequenceId is the new trial number. */
  async function openCustom(id, msgEl) {
    let t;
    try {
      t = await get('trial-jobs/' + encodeURIComponent(id));
    } catch (e) {
      setMsg(msgEl, 'Customized trial: ' + e.message, false);
      return;
    }
    S.custom = { from: t, msgEl };
    const ss = (S.profile && S.profile.params && S.profile.params.searchSpace) || {};
    const params = paramsOf(t);
    const keys = Array.from(new Set(Object.keys(ss).concat(Object.keys(params))));
    $('#custTitle').textContent = 'Customized trial from #' + t.sequenceId;
    $('#custNote').textContent = 'The parameters of trial #' + t.sequenceId + ' (' + t.trialJobId + '). Edit them and submit: a new trial runs with them.';
    $('#custMsg').textContent = '';
    $('#custFields').innerHTML = keys.map((k, i) => {
      const spec = ss[k] || {}, type = spec._type || '', v = params[k], fid = 'cust-' + i;
      let input;
      if (type === 'choice' && Array.isArray(spec._value) && spec._value.every(o => o === null || typeof o !== 'object')) {
        const opts = spec._value.slice();
        if (v !== undefined && !opts.some(o => o === v)) opts.push(v);
        input = '<select id="' + fid + '" data-param="' + esc(k) + '" data-kind="choice">' + opts.map(o =>
          '<option value="' + esc(JSON.stringify(o)) + '"' + (o === v ? ' selected' : '') + '>' + esc(typeof o === 'string' ? o : JSON.stringify(o)) + '</option>').join('') + '</select>';
      } else if (typeof v === 'number' || (v === undefined && NUMERIC.includes(type))) {
        input = '<input id="' + fid + '" type="number" step="any" required data-param="' + esc(k) + '" data-kind="number" value="' + esc(v === undefined ? '' : v) + '">';
      } else {
        const text = typeof v === 'string' ? v : v === undefined ? '' : JSON.stringify(v);
        input = '<input id="' + fid + '" type="text" data-param="' + esc(k) + '" data-kind="' + (typeof v === 'string' || v === undefined ? 'string' : 'json') + '" value="' + esc(text) + '">';
      }
      const range = type ? type + ' ' + JSON.stringify(spec._value) : 'not in the search space';
      return '<label for="' + fid + '">' + esc(k) + '</label>' + input + '<span class="hint" id="' + fid + '-hint">' + esc(range) + '</span>';
    }).join('') || '<p class="muted">This trial has no parameters.</p>';
    $$('#custFields [data-param]').forEach(el => { const h = $('#' + el.id + '-hint'); if (h) el.setAttribute('aria-describedby', h.id); });
    const d = $('#customDialog');
    if (!d.open) d.showModal();
    const first = $('#custFields [data-param]');
    if (first) first.focus();
  }

  /* a warning (not a refusal, as NNI) when a value is outside its search-space range */
  function customWarning(el) {
    const ss = (S.profile && S.profile.params && S.profile.params.searchSpace) || {};
    const spec = ss[el.dataset.param];
    if (el.dataset.kind !== 'number' || !spec || !Array.isArray(spec._value)) return '';
    const v = Number(el.value), [lo, hi] = spec._value;
    if (el.value === '' || !Number.isFinite(v)) return 'a number is needed';
    if (['uniform', 'quniform', 'loguniform', 'qloguniform'].includes(spec._type) && (v < lo || v > hi)) return 'outside the search space [' + lo + ', ' + hi + ']';
    if (spec._type === 'randint' && (v < lo || v >= hi || !Number.isInteger(v))) return 'outside the search space (an integer from ' + lo + ' to ' + (hi - 1) + ')';
    return '';
  }
  function checkCustomField(el) {
    const h = $('#' + el.id + '-hint'), w = customWarning(el);
    const ss = (S.profile && S.profile.params && S.profile.params.searchSpace) || {}, spec = ss[el.dataset.param];
    h.textContent = w ? '⚠ ' + w : spec ? spec._type + ' ' + JSON.stringify(spec._value) : 'not in the search space';
    h.classList.toggle('warn', !!w);
    return w;
  }

  async function submitCustom() {
    const params = {}, bad = [], warn = [];
    for (const el of $$('#custFields [data-param]')) {
      const k = el.dataset.param, kind = el.dataset.kind;
      if (kind === 'choice') params[k] = JSON.parse(el.value);
      else if (kind === 'number') {
        if (el.value.trim() === '' || !Number.isFinite(Number(el.value))) { bad.push(k + ': a number is needed'); continue; }
        params[k] = Number(el.value);
        const w = checkCustomField(el);
        if (w) warn.push(k + ' ' + w);
      } else if (kind === 'json') {
        try { params[k] = JSON.parse(el.value); } catch (e) { bad.push(k + ': not valid JSON (' + e.message + ')'); }
      } else params[k] = el.value;
    }
    if (bad.length) { setMsg($('#custMsg'), bad.join('; '), false); return; }
    if (warn.length && !window.confirm('Outside the search space: ' + warn.join('; ') + '. Submit anyway?')) return;
    try {
      const r = await change('POST', 'trial-jobs', params);
      const text = 'Customized trial queued as trial #' + r.sequenceId + ' (' + r.trialJobId + ').';
      $('#customDialog').close();
      setMsg(S.custom.msgEl, text, true);
      await tick();
    } catch (e) {
      setMsg($('#custMsg'), 'Submit failed: ' + e.message, false);
    }
  }

  /* ---------------- TensorBoard ---------------- */

  /* NNI's TensorBoard of the trial table: POST tensorboard {"trials": "id1,id2"} starts
   * a TensorBoard over the selected trials (or answers the one running over them); the
   * tasks (GET tensorboard-tasks) are listed with their status, a link while RUNNING
   * (the same host as this page, the task's port, as NNI's UI), Stop (DELETE
   * tensorboard/<id>), Restart (PUT) and Stop all (DELETE tensorboard-tasks). Allowed
   * under `nnictl view` too: a TensorBoard changes nothing stored. */
  const trialName = id => (S.seqOf.has(id) ? '#' + S.seqOf.get(id) + ' (' + id + ')' : id);
  const tbTrials = t => (t.trialJobIdList || []).map(trialName).join(', ');
  const tbLink = (t, attrs) => '<a ' + attrs + ' href="' + esc(location.protocol + '//' + location.hostname + ':' + t.port + '/') +
    '" target="_blank" rel="noopener" aria-label="Open TensorBoard ' + esc(t.id) + ' (new tab)">Open TensorBoard</a>';
  const tbStatus = t => '<span class="st ' + esc(t.status) + '">' + esc(t.status) + '</span>';

  function openTensorboardDialog() {
    const d = $('#tbDialog');
    if (!d.open) d.showModal();
  }

  async function launchTensorboard() {
    const ids = Array.from(S.selected);
    if (!ids.length) {
      setMsg($('#tableMsg'), 'Select trials with the boxes of the first column, then press TensorBoard.', false);
      return;
    }
    S.tb.current = null;
    renderTensorboards();
    $('#tableMsg').textContent = '';
    $('#tbMsg').textContent = 'Starting TensorBoard for ' + ids.map(trialName).join(', ') + '…';
    $('#tbMsg').className = 'msg';
    openTensorboardDialog();
    try {
      const t = await change('POST', 'tensorboard', { trials: ids.join(',') });
      S.tb.current = t.id; // shown in #tbCurrent, with its status and link
      $('#tbMsg').textContent = '';
    } catch (e) {
      setMsg($('#tbMsg'), 'TensorBoard: ' + e.message, false);
    }
    await loadTensorboards();
  }

  function openTensorboards() {
    S.tb.current = null;
    $('#tbMsg').textContent = '';
    $('#tbMsg').className = 'msg';
    openTensorboardDialog();
    return loadTensorboards();
  }

  /* the task list, read again every 0.5 s while one is STOPPING */
  async function loadTensorboards() {
    const mine = ++S.tb.reads;
    clearTimeout(S.tb.timer);
    let tasks;
    try {
      tasks = await get('tensorboard-tasks');
    } catch (e) {
      if (mine === S.tb.reads) setMsg($('#tbMsg'), 'TensorBoard tasks: ' + e.message, false);
      return;
    }
    if (mine !== S.tb.reads) return; // a later read is on its way
    S.tb.tasks = Array.isArray(tasks) ? tasks : [];
    renderTensorboards();
    if ($('#tbDialog').open && S.tb.tasks.some(t => t.status === 'STOPPING')) S.tb.timer = setTimeout(loadTensorboards, 500);
  }

  function renderTensorboards() {
    const tasks = S.tb.tasks, cur = tasks.find(t => t.id === S.tb.current);
    const c = $('#tbCurrent');
    const html = cur ? 'TensorBoard ' + esc(cur.id) + ' of ' + esc(tbTrials(cur)) + ': ' + tbStatus(cur) +
      (cur.status === 'RUNNING' ? ' ' + tbLink(cur, 'class="button" id="tbOpen"') : cur.message ? ' (' + esc(cur.message) + ')' : '') : '';
    c.hidden = !cur;
    if (S.tb.html !== html) { S.tb.html = html; c.innerHTML = html; } // a live region: only a change is announced
    $('#tbTable tbody').innerHTML = tasks.length ? tasks.map(t => {
      const running = t.status === 'RUNNING', ended = t.status === 'STOPPED' || t.status === 'ERROR';
      return '<tr data-task="' + esc(t.id) + '"' + (t.id === S.tb.current ? ' class="current"' : '') + '><td><code>' + esc(t.id) + '</code></td>' +
        '<td class="tbtrials">' + esc(tbTrials(t)) + '</td><td>' + tbStatus(t) + '</td>' +
        '<td>' + (running ? tbLink(t, 'class="tblink"') : '—') + '</td><td class="reason">' + esc(t.message || '') + '</td><td class="ops">' +
        (running ? '<button type="button" data-tb="DELETE" class="danger" aria-label="Stop TensorBoard ' + esc(t.id) + '">Stop</button>'
          : ended ? '<button type="button" data-tb="PUT" aria-label="Restart TensorBoard ' + esc(t.id) + '">Restart</button>' : '…') +
        '</td></tr>';
    }).join('') : '<tr><td colspan="6" class="muted">No TensorBoard yet: select trials in the table and press TensorBoard.</td></tr>';
    $('#tbStopAll').disabled = !tasks.some(t => t.status === 'RUNNING');
    // a row drawn again keeps the focus on its operation (Stop becomes Restart)
    const f = S.tb.focus && $('#tbTable tr[data-task="' + CSS.escape(S.tb.focus) + '"] button');
    if (f && (document.activeElement === document.body || document.activeElement.closest('#tbTable'))) { f.focus(); S.tb.focus = null; }
  }

  async function tensorboardAction(method, id) {
    S.tb.focus = id;
    try {
      const t = await change(method, 'tensorboard/' + encodeURIComponent(id));
      setMsg($('#tbMsg'), 'TensorBoard ' + t.id + ' of ' + tbTrials(t) + ': ' + t.status + '.', true);
    } catch (e) {
      setMsg($('#tbMsg'), (method === 'PUT' ? 'Restart' : 'Stop') + ' of TensorBoard ' + id + ' failed: ' + e.message, false);
    }
    await loadTensorboards();
  }

  async function stopAllTensorboards() {
    try {
      await change('DELETE', 'tensorboard-tasks');
      setMsg($('#tbMsg'), 'Stopping every TensorBoard…', true);
    } catch (e) {
      setMsg($('#tbMsg'), 'Stop all failed: ' + e.message, false);
    }
    await loadTensorboards();
  }

  /* ---------------- nav panels: summary and log ---------------- */

  let summaryUrl = null;
  function openPanel(title) {
    $('#panelTitle').textContent = title;
    $('#panelTabs').innerHTML = '';
    $('#panelTabs').hidden = true;
    $('#panelActions').innerHTML = '';
    $('#panelText').textContent = 'Loading…';
    const d = $('#panelDialog');
    if (!d.open) d.showModal();
  }
  const MAXTEXT = 200000;
  const tail = text => (text.length > MAXTEXT ? '… (' + fmtInt(text.length - MAXTEXT) + ' earlier characters not shown)\n' + text.slice(-MAXTEXT) : text);

  /* NNI's summary: {experimentParameters: the profile, trialMessage: the trials, each
   * with "intermediate": its metric records}, downloadable as experiment.json */
  async function openSummary() {
    const n = S.overview ? S.overview.total : 0;
    if (n > 20000 && !window.confirm('The summary holds all ' + fmtInt(n) + ' trials and every metric record, read at once. Continue?')) return;
    openPanel('Summary');
    try {
      const [profile, trials, metrics] = await Promise.all([get('experiment'), get('trial-jobs'), get('metric-data')]);
      const by = new Map();
      for (const m of metrics) {
        if (!by.has(m.trialJobId)) by.set(m.trialJobId, []);
        by.get(m.trialJobId).push(m);
      }
      const trialMessage = trials.map(t => Object.assign({}, t, { intermediate: by.get(t.trialJobId) || [] }));
      const text = JSON.stringify({ experimentParameters: profile, trialMessage }, null, 2);
      if (summaryUrl) URL.revokeObjectURL(summaryUrl);
      summaryUrl = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
      $('#panelActions').innerHTML = '<a class="button" id="summaryDownload" href="' + summaryUrl + '" download="experiment.json">Download experiment.json</a>' +
        '<span class="muted">' + fmtInt(trialMessage.length) + ' trials, ' + fmtInt(metrics.length) + ' metric records</span>';
      $('#panelText').textContent = tail(text);
    } catch (e) {
      $('#panelText').textContent = 'Summary: ' + e.message;
    }
  }

  /* NNI's Config panel: the search space and the config (GET experiment's params) */
  function panelTabs(names, showTab) {
    const tabs = $('#panelTabs');
    tabs.hidden = false;
    tabs.innerHTML = names.map((f, i) => '<button type="button" role="tab" data-file="' + esc(f) + '" aria-selected="' + (i === 0) + '">' + esc(f) + '</button>').join('');
    const bs = $$('#panelTabs [data-file]');
    const pick = f => { bs.forEach(b => b.setAttribute('aria-selected', String(b.dataset.file === f))); return showTab(f); };
    bs.forEach((b, i) => {
      b.addEventListener('click', () => pick(b.dataset.file));
      b.addEventListener('keydown', ev => {
        const k = ev.key === 'ArrowRight' ? 1 : ev.key === 'ArrowLeft' ? -1 : 0;
        if (k) { const n = bs[(i + k + bs.length) % bs.length]; n.focus(); pick(n.dataset.file); }
      });
    });
    return pick(names[0]);
  }

  async function openConfig() {
    openPanel('Config');
    let p;
    try { p = await get('experiment'); } catch (e) { $('#panelText').textContent = 'Config: ' + e.message; return; }
    const params = p.params || {};
    panelTabs(['Search space', 'Config'], f => {
      $('#panelText').textContent = JSON.stringify(f === 'Config' ? params : params.searchSpace || {}, null, 2);
    });
  }

  /* the experiment's log files (GET logs/<file>, served from <logDir>/log) */
  async function openLogs() {
    openPanel('Log');
    const c = (S.profile && S.profile.params) || {};
    const files = ['nnictl_stderr.log', 'nnictl_stdout.log'];
    if ((c.tuner && c.tuner.className) || (c.assessor && c.assessor.className) || (c.advisor && c.advisor.className)) files.push('dispatcher.log');
    let shown = 0;
    const showFile = async f => {
      const mine = ++shown; // a slow earlier read must not overwrite a later tab
      $('#panelActions').innerHTML = '<a class="button" id="logDownload" href="' + esc(BASE + 'logs/' + encodeURIComponent(f)) + '" download="' + esc(f) + '">Download ' + esc(f) + '</a>';
      $('#panelText').textContent = 'Loading…';
      try {
        const r = await fetch(BASE + 'logs/' + encodeURIComponent(f), { cache: 'no-store' });
        const text = await r.text();
        if (mine !== shown) return;
        $('#panelText').textContent = r.ok ? tail(text) || '(' + f + ' is empty)' : r.status === 404 ? '(no ' + f + ')' : text;
      } catch (e) {
        $('#panelText').textContent = 'the api does not answer (' + e.message + ')';
      }
    };
    await panelTabs(files, showFile);
  }

  /* ---------------- all experiments ---------------- */

  const EXP_STATUSES = ['INITIALIZED', 'RUNNING', 'ERROR', 'STOPPING', 'STOPPED', 'VIEWED', 'DONE', 'NO_MORE_TRIAL', 'TUNER_NO_MORE_TRIAL'];

  /* every experiment of the database (GET experiments-info: NNI's .experiment entries;
   * "port" only while its api runs) */
  async function loadExperiments() {
    const rows = await get('experiments-info');
    S.exps.rows = Array.isArray(rows) ? rows : [];
    renderExperiments();
    document.body.dataset.experimentsReady = '1';
  }

  function fillSelect(sel, values, current) {
    const sig = values.join('|');
    if (sel.dataset.sig === sig) return;
    sel.dataset.sig = sig;
    sel.innerHTML = '<option value="">all</option>' + values.map(v => '<option' + (v === current ? ' selected' : '') + '>' + esc(v) + '</option>').join('');
  }

  function expUrl(r) {
    if (r.id === (S.profile && S.profile.id)) return BASE + 'oview';
    return location.protocol + '//' + location.hostname + ':' + r.port + (r.prefixUrl ? '/' + r.prefixUrl : '') + '/oview';
  }

  function renderExperiments() {
    const E = S.exps;
    fillSelect($('#eStatus'), Array.from(new Set(EXP_STATUSES.concat(E.rows.map(r => r.status)))), E.status);
    fillSelect($('#ePlatform'), Array.from(new Set(E.rows.map(r => r.platform))).sort(), E.platform);
    const q = E.q.toLowerCase();
    const rows = E.rows.filter(r => (!E.status || r.status === E.status) && (!E.platform || r.platform === E.platform) &&
      (!q || String(r.id).toLowerCase().includes(q) || String(r.experimentName || '').toLowerCase().includes(q)) &&
      (E.from === null || r.startTime >= E.from) && (E.to === null || (typeof r.endTime === 'number' && r.endTime <= E.to)));
    const key = r => { const v = E.sort === 'name' ? r.experimentName : r[E.sort]; return typeof v === 'number' ? v : v === undefined || v === null || v === 'N/A' ? null : String(v).toLowerCase(); };
    rows.sort((a, b) => {
      const x = key(a), y = key(b);
      if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1; // no value: last
      return (x < y ? -1 : x > y ? 1 : 0) * (E.order === 'asc' ? 1 : -1) || (a.id < b.id ? -1 : 1);
    });
    $$('#experiments th[data-esort]').forEach(th => {
      if (th.dataset.esort === E.sort) th.setAttribute('aria-sort', E.order === 'asc' ? 'ascending' : 'descending');
      else th.removeAttribute('aria-sort');
    });
    const self = S.profile && S.profile.id;
    $('#experiments tbody').innerHTML = rows.length ? rows.map(r =>
      '<tr data-exp="' + esc(r.id) + '"><td class="ename">' + esc(r.experimentName || '—') + '</td><td>' +
      (r.port ? '<a class="eid" href="' + esc(expUrl(r)) + '">' + esc(r.id) + '</a>' : '<code class="eid">' + esc(r.id) + '</code>') +
      (r.id === self ? ' <span class="muted">(this one)</span>' : '') + '</td>' +
      '<td class="st ' + esc(r.status) + '">' + esc(r.status) + '</td><td class="eport">' + esc(r.port || '—') + '</td>' +
      '<td class="eplat">' + esc(r.platform) + '</td><td class="time">' + fmtTime(r.startTime) + '</td>' +
      '<td class="time">' + (typeof r.endTime === 'number' ? fmtTime(r.endTime) : '—') + '</td></tr>').join('')
      : '<tr><td colspan="7" class="muted">' + (E.rows.length ? 'No experiment matches the filter.' : 'No experiments.') + '</td></tr>';
    $('#expInfo').textContent = fmtInt(rows.length) + ' of ' + fmtInt(E.rows.length) + ' experiments of the database' +
      (E.rows.length ? ' (' + fmtInt(E.rows.filter(r => r.port).length) + ' with a running api: their ID opens their web UI)' : '') + '.';
  }

  /* ---------------- pages and events ---------------- */

  function show(page, push) {
    if (!PAGES.includes(page)) page = 'oview';
    S.page = page;
    $('#page-oview').hidden = page !== 'oview';
    $('#page-detail').hidden = page !== 'detail';
    $('#page-experiment').hidden = page !== 'experiment';
    $$('nav a').forEach(a => { if (a.dataset.page === page) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current'); });
    if (push) history.pushState({ page }, '', BASE + page + location.search);
    S.stale.charts = true;
    if (page === 'detail') S.stale.table = true;
  }

  function bind() {
    $$('nav a').forEach(a => a.addEventListener('click', ev => {
      ev.preventDefault();
      show(a.dataset.page, true);
      tick();
    }));
    window.addEventListener('popstate', () => { show(baseless(location.pathname), false); tick(); });
    $('#interval').addEventListener('change', ev => { S.interval = Number(ev.target.value); schedule(); });
    $('#refreshNow').addEventListener('click', async () => { await tick(true); schedule(); });
    window.TQAnalysis.init(() => loadCharts().catch(e => setReachable(e.status !== 0, e.message)));
    $('#impKey').addEventListener('change', () => {
      S.impKey = $('#impKey').value;
      loadCharts().catch(e => setReachable(e.status !== 0, e.message));
    });

    $$('form.edit').forEach(f => {
      const input = f.querySelector('input');
      input.addEventListener('input', () => { input.dataset.dirty = '1'; });
      f.addEventListener('submit', async ev => {
        ev.preventDefault();
        const type = f.dataset.update, raw = input.value.trim();
        const key = { TRIAL_CONCURRENCY: 'trialConcurrency', MAX_TRIAL_NUM: 'maxTrialNumber', MAX_EXEC_DURATION: 'maxExperimentDuration' }[type];
        const value = type === 'MAX_EXEC_DURATION' ? (/^\d+$/.test(raw) ? Number(raw) : raw) : Number(raw);
        try {
          await change('PUT', 'experiment?update_type=' + type, { params: { [key]: value } });
          delete input.dataset.dirty;
          setMsg($('#controlMsg'), f.querySelector('label').textContent + ' set to ' + raw + '.', true);
          await tick(true);
        } catch (e) {
          setMsg($('#controlMsg'), e.message, false);
        }
      });
    });
    $('#stopExp').addEventListener('click', async () => {
      if (!window.confirm('Stop the experiment? Running trials are canceled.')) return;
      try {
        await change('DELETE', 'experiment');
        setMsg($('#controlMsg'), 'Stopping…', true);
      } catch (e) { setMsg($('#controlMsg'), e.message, false); }
    });
    $('#counts').addEventListener('click', ev => {
      const b = ev.target.closest('button[data-status]');
      if (!b) return;
      S.table.status = b.dataset.status;
      S.table.offset = 0;
      $('#fStatus').value = b.dataset.status;
      show('detail', true);
      tick();
    });
    document.addEventListener('click', ev => {
      const b = ev.target.closest('button[data-open]');
      if (b) openTrial(b.dataset.open);
    });

    // table: sort, filter, paging, row operations
    $('#trials thead').addEventListener('click', ev => {
      const b = ev.target.closest('th[data-sort] button');
      if (!b) return;
      const col = b.parentElement.dataset.sort, t = S.table;
      t.order = t.sort === col && t.order === 'asc' ? 'desc' : 'asc';
      t.sort = col;
      t.offset = 0;
      reload();
    });
    $('#colList').addEventListener('change', ev => {
      const k = ev.target.dataset.col;
      if (!k) return;
      S.cols[k] = ev.target.checked;
      try { localStorage.setItem('trialq-columns', JSON.stringify(S.cols)); } catch (e) { /* private mode */ }
      renderTable();
    });
    $('#colReset').addEventListener('click', () => {
      S.cols = {};
      try { localStorage.removeItem('trialq-columns'); } catch (e) { /* private mode */ }
      renderTable();
    });
    document.addEventListener('keydown', ev => {
      if (ev.key === 'Escape' && $('#colPick').open && !document.querySelector('dialog[open]')) { $('#colPick').open = false; $('#colPick summary').focus(); }
    });
    const reload = () => { S.stale.table = true; loadTable().catch(e => setReachable(e.status !== 0, e.message)); };
    $('#fStatus').addEventListener('change', ev => { S.table.status = ev.target.value; S.table.offset = 0; reload(); });
    $('#fLimit').addEventListener('change', ev => { S.table.limit = Number(ev.target.value); S.table.offset = 0; reload(); });
    let typing = null;
    $('#fText').addEventListener('input', ev => {
      clearTimeout(typing);
      typing = setTimeout(() => { S.table.q = ev.target.value.trim(); S.table.offset = 0; reload(); }, 250);
    });
    $('#filters').addEventListener('submit', ev => ev.preventDefault());
    $('#prev').addEventListener('click', () => { S.table.offset = Math.max(0, S.table.offset - S.table.limit); reload(); });
    $('#next').addEventListener('click', () => { S.table.offset += S.table.limit; reload(); });
    $('#trials tbody').addEventListener('click', ev => {
      const tr = ev.target.closest('tr[data-id]');
      if (!tr) return;
      const id = tr.dataset.id;
      if (ev.target.matches('input[type=checkbox]')) {
        if (ev.target.checked) S.selected.add(id); else S.selected.delete(id);
        $('#compare').textContent = 'Compare selected (' + S.selected.size + ')';
        return;
      }
      const b = ev.target.closest('button[data-act]');
      if (!b) return;
      if (b.dataset.act === 'open') openTrial(id);
      else if (b.dataset.act === 'custom') openCustom(id, $('#tableMsg'));
      else trialAction(b.dataset.act, id, $('#tableMsg'));
    });
    $('#compare').addEventListener('click', () => openCompare());
    $('#tbLaunch').addEventListener('click', () => launchTensorboard());
    $('#tbTasks').addEventListener('click', () => openTensorboards());
    $('#tbClose').addEventListener('click', () => $('#tbDialog').close());
    $('#tbDialog').addEventListener('close', () => { clearTimeout(S.tb.timer); S.tb.focus = null; });
    $('#tbStopAll').addEventListener('click', () => stopAllTensorboards());
    $('#tbTable').addEventListener('click', ev => {
      const b = ev.target.closest('button[data-tb]');
      if (b) tensorboardAction(b.dataset.tb, b.closest('tr').dataset.task);
    });
    $('#cmpClose').addEventListener('click', () => $('#compareDialog').close());
    hookChartPointer($('#cmpChart'));

    // customized trial
    $('#dlgCustom').addEventListener('click', () => openCustom(S.dialog.id, $('#dlgMsg')));
    $('#custClose').addEventListener('click', () => $('#customDialog').close());
    $('#custCancel').addEventListener('click', () => $('#customDialog').close());
    $('#custForm').addEventListener('submit', ev => { ev.preventDefault(); submitCustom(); });
    $('#custFields').addEventListener('input', ev => { if (ev.target.dataset.param) checkCustomField(ev.target); });

    // nav panels: summary and log
    $('#summaryBtn').addEventListener('click', () => openSummary());
    $('#configBtn').addEventListener('click', () => openConfig());
    $('#logBtn').addEventListener('click', () => openLogs());
    $('#panelClose').addEventListener('click', () => $('#panelDialog').close());

    // all experiments
    const expFilter = () => renderExperiments();
    $('#eStatus').addEventListener('change', ev => { S.exps.status = ev.target.value; expFilter(); });
    $('#ePlatform').addEventListener('change', ev => { S.exps.platform = ev.target.value; expFilter(); });
    $('#eText').addEventListener('input', ev => { S.exps.q = ev.target.value.trim(); expFilter(); });
    // a day in the browser's time zone: from its first millisecond, to its last
    const day = (v, end) => { if (!v) return null; const [y, m, d] = v.split('-').map(Number); return new Date(y, m - 1, d + (end ? 1 : 0)).getTime() - (end ? 1 : 0); };
    $('#eFrom').addEventListener('change', ev => { S.exps.from = day(ev.target.value, false); expFilter(); });
    $('#eTo').addEventListener('change', ev => { S.exps.to = day(ev.target.value, true); expFilter(); });
    $('#expFilters').addEventListener('submit', ev => ev.preventDefault());
    $$('#experiments th[data-esort] button').forEach(b => b.addEventListener('click', () => {
      const col = b.parentElement.dataset.esort, E = S.exps;
      E.order = E.sort === col && E.order === 'asc' ? 'desc' : 'asc';
      E.sort = col;
      renderExperiments();
    }));

    // chart tabs (arrow keys move between them)
    const tabs = $$('#page-detail [data-tab]');
    tabs.forEach((b, i) => {
      b.addEventListener('click', () => selectTab(b.dataset.tab));
      b.addEventListener('keydown', ev => {
        const k = ev.key === 'ArrowRight' ? 1 : ev.key === 'ArrowLeft' ? -1 : 0;
        if (k) { const n = tabs[(i + k + tabs.length) % tabs.length]; n.focus(); selectTab(n.dataset.tab); }
      });
    });
    [$('#ovChart'), $('#detailChart')].forEach(hookChartPointer);

    // dialog
    $('#dlgClose').addEventListener('click', () => $('#trialDialog').close());
    $('#trialDialog').addEventListener('close', () => { S.dialog = null; });
    $('#dlgKill').addEventListener('click', () => trialAction('kill', S.dialog.id, $('#dlgMsg')));
    $('#dlgRerun').addEventListener('click', () => trialAction('rerun', S.dialog.id, $('#dlgMsg')));
    $$('#trialDialog [data-log]').forEach(b => b.addEventListener('click', () => {
      S.dialog.log = b.dataset.log;
      loadLog().catch(e => setMsg($('#dlgMsg'), e.message, false));
    }));

    let resizeT = null;
    window.addEventListener('resize', () => { clearTimeout(resizeT); resizeT = setTimeout(drawCharts, 150); });
  }

  function selectTab(tab) {
    S.tab = tab;
    $$('#page-detail [data-tab]').forEach(b => b.setAttribute('aria-selected', String(b.dataset.tab === tab)));
    $('#impWrap').hidden = tab !== 'importance';
    window.TQAnalysis.select(tab);
    if (tab !== 'importance') $('#impKeyBox').hidden = true;
    S.stale.charts = true;
    loadCharts().catch(e => setReachable(e.status !== 0, e.message));
  }

  function baseless(path) {
    const last = path.split('/').pop();
    return PAGES.includes(last) ? last : 'oview';
  }

  bind();
  show(baseless(location.pathname), false);
  tick().then(schedule);
})();
