/* compare.js: "Compare experiments" on the All experiments page. A checkbox on each row
 * of the experiments table (added to the rows app.js draws) picks experiments of the
 * database; "Compare selected" reads GET webui/compare?ids=... (computed on the server
 * over a bounded sample of each experiment: docs/webui.md) and draws their best-so-far
 * curves (by trial number and by time) and final-metric distributions on shared axes,
 * a table of their figures, and their configs side by side with the differences marked.
 * While the comparison is shown it is read again every few seconds (the server answers
 * from its cache while no trial changed), so running experiments update in place. */
'use strict';
(function () {
  const $ = s => document.querySelector(s);
  const COLORS = ['#0b5cad', '#d1495b', '#1a7f37', '#9a6700', '#6b4fbb', '#00798c', '#c05800', '#59636e'];
  const MAX = 8;
  const picked = new Set();
  const C = { ids: [], data: null, timer: null, view: 'seq', onlyDiff: false };
  const esc = s => String(s).replace(/[&<>"']/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
  const fmt = v => (typeof v === 'number' ? window.TQChart.fmt(v) : '—');

  const card = document.createElement('article');
  card.className = 'card wide';
  card.id = 'cmpExps';
  card.setAttribute('aria-labelledby', 'h-cmpexps');
  card.hidden = true;
  card.innerHTML =
    '<h2 id="h-cmpexps">Compare experiments</h2>' +
    '<div class="tabs" role="tablist" aria-label="Best so far by">' +
    '<button type="button" role="tab" data-cview="seq" aria-selected="true">Best so far by trial number</button>' +
    '<button type="button" role="tab" data-cview="time" aria-selected="false">Best so far by time</button></div>' +
    '<div class="chartbox"><canvas id="cmpBest" role="img"></canvas></div>' +
    '<h3>Final metric distribution</h3>' +
    '<div class="chartbox small"><canvas id="cmpDist" role="img"></canvas></div>' +
    '<p id="cmpNote" class="muted"></p>' +
    '<div class="tablewrap"><table id="cmpStats"><caption class="sr-only">The compared experiments\' figures</caption>' +
    '<thead><tr><th scope="col">Experiment</th><th scope="col">Tuner</th><th scope="col">Mode</th><th scope="col">Trials</th>' +
    '<th scope="col">Best</th><th scope="col">At trial</th><th scope="col">Median</th><th scope="col">Q1–Q3</th>' +
    '<th scope="col">Sample</th></tr></thead><tbody></tbody></table></div>' +
    '<h3>Configs <label class="muted"><input type="checkbox" id="cmpOnlyDiff"> only the differences</label></h3>' +
    '<p id="cmpDiffInfo" class="muted"></p>' +
    '<div class="tablewrap"><table id="cmpConfig"><caption class="sr-only">The configs side by side; rows that differ are marked</caption>' +
    '<thead></thead><tbody></tbody></table></div>' +
    '<p id="cmpExpMsg" class="msg" role="status"></p>';

  function setMsg(text, ok) {
    const m = $('#cmpExpMsg');
    m.textContent = text;
    m.className = 'msg ' + (ok ? 'ok' : 'err');
  }

  /* a checkbox at the start of each row's name cell (the columns stay those app.js
   * draws), and the button's count */
  function decorate() {
    const table = $('#experiments');
    if (!table) return;
    table.querySelectorAll('tbody tr[data-exp]').forEach(tr => {
      const id = tr.dataset.exp, td = tr.cells[0];
      if (!td || td.querySelector('input[data-cmp]')) return;
      td.insertAdjacentHTML('afterbegin', '<input type="checkbox" class="cmpbox" data-cmp="' + esc(id) + '" aria-label="Compare ' + esc(id) + '"' + (picked.has(id) ? ' checked' : '') + '> ');
    });
    const b = $('#cmpBtn');
    if (b) {
      b.textContent = 'Compare selected (' + picked.size + ')';
      b.disabled = picked.size < 1;
    }
  }

  async function load() {
    if (!C.ids.length) return;
    const r = await fetch('api/v1/nni/webui/compare?ids=' + C.ids.map(encodeURIComponent).join(','), { headers: { Accept: 'application/json' } });
    const body = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(body.error || ('HTTP ' + r.status));
    C.data = body;
    draw();
    document.body.dataset.compareReady = String(body.seq);
  }

  function label(e) {
    return (e.name || e.id) + ' (' + e.id + ') ' + (e.optimizeMode === 'maximize' ? '↑' : '↓');
  }

  function drawCharts() {
    const d = C.data, E = d.experiments;
    const time = C.view === 'time';
    const series = E.map((e, i) => ({
      name: label(e), color: COLORS[i % COLORS.length], kind: 'step', width: 2,
      points: (time ? e.bestByTime : e.bestBySeq).map(p => [p[0], p[1], e.id + ' #' + p[2]]),
      extendTo: time ? (e.last.time === null ? undefined : e.last.time) : e.last.seq,
    }));
    $('#cmpBest').dataset.points = series.map(s => s.points.length).join(',');
    window.TQChart.xy($('#cmpBest'), { series, xLabel: time ? 'seconds since the experiment started' : 'trial number',
      yLabel: 'best final metric so far', empty: 'No final metric yet' });
    $('#cmpBest').setAttribute('aria-label', 'Best final metric so far by ' + (time ? 'time' : 'trial number') + ' of ' + E.length + ' experiments');
    const b = d.bins;
    const dist = E.map((e, i) => ({
      name: label(e), color: COLORS[i % COLORS.length], kind: 'line', width: 2,
      points: e.distribution.n ? e.distribution.counts.map((c, k) => [b.lo + (k + 0.5) * b.width, c / e.distribution.n, e.id]) : [],
    }));
    $('#cmpDist').dataset.points = dist.map(s => s.points.length).join(',');
    window.TQChart.xy($('#cmpDist'), { series: dist, xLabel: 'final metric (' + b.n + ' shared bins)', yLabel: 'fraction of trials', empty: 'No final metric yet' });
    $('#cmpDist').setAttribute('aria-label', 'Distribution of the final metric of ' + E.length + ' experiments');
  }

  function drawTables() {
    const d = C.data, E = d.experiments;
    const s = d.sample;
    $('#cmpNote').textContent = 'Computed on the server over a sample of each experiment: the ' + s.top + ' best trials and ' + s.spread +
      ' spread evenly over the trial numbers (every trial when there are no more than ' + s.spread + '). A curve is exact from the point marked' +
      ' "exact from" on (every later improvement is among the best); the distribution is of the evenly spread trials.' +
      (d.mixedModes ? ' Mixed optimize modes: each curve is its own experiment\'s best so far, ↑ maximize (higher is better), ↓ minimize (lower is better).' : '');
    $('#cmpStats tbody').innerHTML = E.map((e, i) => {
      const q = e.distribution;
      const ex = C.view === 'time' ? e.exactFromTime : e.exactFromSeq;
      return '<tr data-cexp="' + esc(e.id) + '"><td><span class="swatch" style="background:' + COLORS[i % COLORS.length] + '"></span>' + esc(e.name || '—') + ' <code>' + esc(e.id) + '</code></td>' +
        '<td>' + esc(e.tuner || '—') + '</td><td>' + esc(e.optimizeMode) + '</td><td class="ctrials">' + e.trials + '</td>' +
        '<td class="cbest">' + (e.best ? fmt(e.best.value) : '—') + '</td><td>' + (e.best ? e.best.seq : '—') + '</td>' +
        '<td class="cmedian">' + fmt(q.median) + '</td><td>' + (q.n ? fmt(q.q1) + ' – ' + fmt(q.q3) : '—') + '</td>' +
        '<td>' + (e.exact ? 'every trial' : e.read + ' trials; exact from ' + (ex === null ? '—' : (C.view === 'time' ? fmt(ex) + ' s' : 'trial ' + ex))) + '</td></tr>';
    }).join('');
    const rows = d.config.rows;
    $('#cmpConfig thead').innerHTML = '<tr><th scope="col">Key</th>' + E.map(e => '<th scope="col">' + esc(e.name || e.id) + ' <code>' + esc(e.id) + '</code></th>').join('') + '</tr>';
    $('#cmpConfig tbody').innerHTML = rows.filter(r => r.differs || !C.onlyDiff).map(r =>
      '<tr class="' + (r.differs ? 'differs' : 'same') + '"><th scope="row">' + (r.differs ? '<span class="dmark" title="differs">≠</span> ' : '') + esc(r.key) + '</th>' +
      r.values.map(v => '<td>' + (v === null ? '<span class="muted">absent</span>' : '<code>' + esc(v) + '</code>') + '</td>').join('') + '</tr>').join('');
    $('#cmpDiffInfo').textContent = d.config.differing + ' of ' + rows.length + ' config keys differ (marked ≠).';
  }

  function draw() {
    if (!C.data || card.hidden) return;
    document.querySelectorAll('#cmpExps [data-cview]').forEach(b => b.setAttribute('aria-selected', String(b.dataset.cview === C.view)));
    drawCharts();
    drawTables();
  }

  function schedule() {
    clearTimeout(C.timer);
    C.timer = setTimeout(async () => {
      const page = $('#page-experiment');
      if (C.ids.length && page && !page.hidden && !card.hidden) {
        try { await load(); } catch (e) { setMsg(e.message, false); }
      }
      schedule();
    }, 5000);
  }

  async function compare() {
    C.ids = Array.from(picked);
    card.hidden = false;
    setMsg('', true);
    try {
      await load();
      card.scrollIntoView({ block: 'start' });
    } catch (e) { setMsg(e.message, false); }
    schedule();
  }

  function init() {
    const page = $('#page-experiment'), filters = $('#expFilters');
    if (!page || !filters) return;
    page.appendChild(card);
    filters.insertAdjacentHTML('beforeend', '<button type="button" id="cmpBtn" disabled>Compare selected (0)</button>');
    $('#cmpBtn').addEventListener('click', compare);
    $('#experiments tbody').addEventListener('change', ev => {
      const id = ev.target.dataset && ev.target.dataset.cmp;
      if (!id) return;
      if (ev.target.checked && picked.size >= MAX) {
        ev.target.checked = false;
        setMsg('At most ' + MAX + ' experiments at once.', false);
        card.hidden = false;
      } else if (ev.target.checked) picked.add(id);
      else picked.delete(id);
      decorate();
    });
    card.querySelectorAll('[data-cview]').forEach(b => b.addEventListener('click', () => { C.view = b.dataset.cview; draw(); }));
    $('#cmpOnlyDiff').addEventListener('change', ev => { C.onlyDiff = ev.target.checked; draw(); });
    new MutationObserver(decorate).observe($('#experiments'), { childList: true, subtree: true });
    let resizeT = null;
    window.addEventListener('resize', () => { clearTimeout(resizeT); resizeT = setTimeout(draw, 150); });
    decorate();
  }

  init();
})();
