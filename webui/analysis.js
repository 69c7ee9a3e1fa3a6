/* analysis.js: the analysis tabs of the trials page (docs/webui.md, "Slice, contour,
 * distribution and early stopping"): the final metric against each parameter (Slice),
 * over two numeric parameters on a grid fit by the server (Contour), its empirical
 * distribution (Distribution) and the intermediate curves coloured by the assessor's
 * decision (Early stopping). Every number comes from the api (GET webui/slice, contour,
 * ecdf, curves); this file only draws them, on the trials page's chart canvas, with a
 * table of the numbers under it. app.js calls load and draw as for its own tabs, so a
 * running experiment's view is read again (from the api's cache while no trial
 * changed) at each poll that saw a change. */
'use strict';
(function () {
  const $ = s => document.querySelector(s);
  const TABS = ['slice', 'contour', 'ecdf', 'curves'];
  const AXIS = '#59636e', GRID = '#e4e9ee', BLUE = '#0b5cad', RED = '#d1495b';
  const A = { key: '', x: '', y: '', data: {}, reload: () => {} };
  const esc = s => String(s === undefined || s === null ? '' : s).replace(/[&<>"']/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
  const fmt = v => (typeof v === 'number' ? window.TQChart.fmt(v) : v === null || v === undefined ? '—' : String(v));
  const fmtInt = n => Number(n || 0).toLocaleString('en-US');

  function url(tab) {
    const q = [];
    if (A.key && tab !== 'curves') q.push('metric=' + encodeURIComponent(A.key));
    if (tab === 'contour' && A.x) q.push('x=' + encodeURIComponent(A.x));
    if (tab === 'contour' && A.y) q.push('y=' + encodeURIComponent(A.y));
    return 'webui/' + tab + (q.length ? '?' + q.join('&') : '');
  }

  async function load(tab, get) {
    A.data[tab] = await get(url(tab));
  }

  /* ---------------- drawing helpers ---------------- */

  /* an axis: {kind: 'linear'|'log'|'category', lo, hi, cats}; t maps a value to the
   * drawn coordinate (log10 for log, the index for categories) */
  function axis(kind, vals, cats) {
    if (kind === 'category') return { kind, cats, lo: -0.5, hi: cats.length - 0.5, t: v => v };
    const t = kind === 'log' ? v => Math.log10(v) : v => v;
    let lo = Infinity, hi = -Infinity;
    for (const v of vals) { const u = t(v); if (Number.isFinite(u)) { lo = Math.min(lo, u); hi = Math.max(hi, u); } }
    if (lo === Infinity) { lo = 0; hi = 1; }
    if (lo === hi) { const d = Math.abs(lo) * 0.05 || 0.5; lo -= d; hi += d; }
    const pad = (hi - lo) * 0.04;
    return { kind, lo: lo - pad, hi: hi + pad, t };
  }

  function axisTicks(a, n) {
    if (a.kind === 'category') return a.cats.map((c, i) => [i, c]);
    const T = window.TQChart.ticks(a.lo, a.hi, n, a.kind === 'log');
    return T.map(t => [t, fmt(a.kind === 'log' ? Math.pow(10, t) : t)]);
  }

  /* a plot's frame in box {x, y, w, h} (the area inside the labels): grid, tick labels,
   * axis titles; returns the mappers from values to pixels */
  function frame(ctx, box, ax, ay, xLabel, yLabel) {
    const px = v => box.x + (ax.t(v) - ax.lo) / (ax.hi - ax.lo) * box.w;
    const py = v => box.y + box.h - (ay.t(v) - ay.lo) / (ay.hi - ay.lo) * box.h;
    ctx.strokeStyle = GRID; ctx.fillStyle = AXIS; ctx.lineWidth = 1;
    ctx.textAlign = 'right'; ctx.textBaseline = 'middle';
    for (const [t, label] of axisTicks(ay, Math.max(2, Math.floor(box.h / 40)))) {
      const y = Math.round(box.y + box.h - (t - ay.lo) / (ay.hi - ay.lo) * box.h) + 0.5;
      ctx.beginPath(); ctx.moveTo(box.x, y); ctx.lineTo(box.x + box.w, y); ctx.stroke();
      ctx.fillText(label, box.x - 4, y, 44);
    }
    ctx.textAlign = 'center'; ctx.textBaseline = 'top';
    const xt = axisTicks(ax, Math.max(2, Math.floor(box.w / 80)));
    for (const [t, label] of xt) {
      const x = Math.round(box.x + (t - ax.lo) / (ax.hi - ax.lo) * box.w) + 0.5;
      ctx.beginPath(); ctx.moveTo(x, box.y); ctx.lineTo(x, box.y + box.h); ctx.stroke();
      ctx.fillText(label, x, box.y + box.h + 3, Math.max(20, box.w / xt.length - 4));
    }
    ctx.fillStyle = '#1b1f24';
    ctx.fillText(xLabel, box.x + box.w / 2, box.y + box.h + 17);
    ctx.save(); ctx.translate(box.x - 48, box.y + box.h / 2); ctx.rotate(-Math.PI / 2);
    ctx.textBaseline = 'middle'; ctx.fillText(yLabel, 0, 0); ctx.restore();
    return { px, py };
  }

  /* the nearest of the hits ({x, y, text, p}) within 8 px */
  function picker(hits) {
    return (mx, my) => {
      let best = null, bd = 64;
      for (const h of hits) {
        const d = (h.x - mx) ** 2 + (h.y - my) ** 2;
        if (d < bd) { bd = d; best = h; }
      }
      return best;
    };
  }

  function metricName(r) { return r.metric ? 'metric "' + r.metric + '"' : 'final metric'; }
  function sampleNote(r) {
    return 'Over ' + fmtInt(r.sample.trials) + ' trials: the most recent SUCCEEDED trials with a final metric, at most ' +
      fmtInt(r.sample.limit) + '.';
  }

  function table(head, rows, caption) {
    $('#anaTable caption').textContent = caption;
    $('#anaTable thead').innerHTML = '<tr>' + head.map(h => '<th scope="col">' + esc(h) + '</th>').join('') + '</tr>';
    $('#anaTable tbody').innerHTML = rows.map(r => '<tr>' + r.map((c, i) => '<td' + (i ? ' class="num"' : '') + '>' + esc(c) + '</td>').join('') + '</tr>').join('');
  }

  /* ---------------- the views ---------------- */

  /* one panel per parameter, three to a row, the metric on a shared y axis */
  function drawSlice(canvas, note) {
    const r = A.data.slice, ps = r.params;
    // three panels to a row, one in a narrow window
    const cols = Math.min(canvas.getBoundingClientRect().width < 640 ? 1 : 3, Math.max(1, ps.length)), rows = Math.ceil(ps.length / cols) || 1;
    canvas.parentElement.style.height = Math.max(300, rows * 230) + 'px';
    const { ctx, w, h } = window.TQChart.setup(canvas);
    const hits = [];
    let drawn = 0;
    if (!ps.length || !r.sample.trials) {
      ctx.fillStyle = AXIS; ctx.textAlign = 'center';
      ctx.fillText(ps.length ? 'No trial with a final metric yet' : 'The search space has no parameter', w / 2, h / 2);
    }
    const ay = axis('linear', ps.flatMap(p => p.y));
    const pw = w / cols, ph = h / rows;
    ps.forEach((p, k) => {
      if (!r.sample.trials) return;
      const ax = axis(p.scale, p.x, p.categories);
      const box = { x: (k % cols) * pw + 62, y: Math.floor(k / cols) * ph + 10, w: pw - 76, h: ph - 48 };
      const { px, py } = frame(ctx, box, ax, ay, p.name + (p.scale === 'log' ? ' (log)' : ''), k % cols ? '' : metricName(r));
      ctx.fillStyle = BLUE; ctx.globalAlpha = 0.6;
      p.x.forEach((x, i) => {
        // categories spread sideways (a fixed jitter) so that equal values stay visible
        const cx = px(x) + (p.scale === 'category' ? ((i * 0.618) % 1 - 0.5) * Math.min(30, box.w / p.categories.length / 2) : 0);
        const cy = py(p.y[i]);
        ctx.fillRect(cx - 2, cy - 2, 4, 4);
        hits.push({ x: cx, y: cy, text: p.name + ' = ' + (p.scale === 'category' ? p.categories[x] : fmt(x)) + ' · ' + metricName(r) + ' ' + fmt(p.y[i]) });
      });
      ctx.globalAlpha = 1;
      drawn += p.x.length;
    });
    canvas.setAttribute('aria-label', 'Slice plot: the ' + metricName(r) + ' against each of ' + ps.length + ' parameters');
    canvas.dataset.drawn = String(drawn);
    table(['Parameter', 'Type', 'Scale', 'Trials', 'Lowest', 'Highest'],
      ps.map(p => {
        const xs = p.scale === 'category' ? p.x.map(i => p.categories[i]) : p.x;
        const lo = p.scale === 'category' ? '' : fmt(Math.min(...xs)), hi = p.scale === 'category' ? '' : fmt(Math.max(...xs));
        return [p.name, p.type, p.scale, p.trials, p.trials ? lo : '—', p.trials ? hi : '—'];
      }), 'Each parameter of the slice plot');
    note.textContent = 'The ' + metricName(r) + ' (' + r.optimizeMode + ') of each trial against each parameter; a nested choice\'s parameters over the trials of their branch. ' + sampleNote(r);
    return picker(hits);
  }

  /* colour of t in [0, 1]: a blue-green-yellow ramp */
  const RAMP = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  function colour(t) {
    const f = Math.max(0, Math.min(1, t)) * (RAMP.length - 1), i = Math.min(RAMP.length - 2, Math.floor(f)), u = f - i;
    const c = RAMP[i].map((v, k) => Math.round(v + (RAMP[i + 1][k] - v) * u));
    return 'rgb(' + c.join(',') + ')';
  }

  function contourControls(r) {
    const sig = r.numeric.join('\u0001');
    for (const [id, cur] of [['#anaX', r.x && r.x.name], ['#anaY', r.y && r.y.name]]) {
      const sel = $(id);
      if (sel.dataset.sig !== sig) {
        sel.dataset.sig = sig;
        sel.innerHTML = r.numeric.map(n => '<option value="' + esc(n) + '">' + esc(n) + '</option>').join('');
      }
      sel.value = cur || '';
    }
  }

  /* the grid of the server's fit, blank cells left white, the trials over it as dots,
   * a colour bar on the right */
  function drawContour(canvas, note) {
    const r = A.data.contour;
    const { ctx, w, h } = window.TQChart.setup(canvas);
    contourControls(r);
    if (!r.x || !r.trials) {
      ctx.fillStyle = AXIS; ctx.textAlign = 'center';
      ctx.fillText(!r.x ? 'The search space has fewer than two numeric parameters' : 'No trial has both parameters yet', w / 2, h / 2);
      canvas.dataset.drawn = '0';
      table([], [], '');
      note.textContent = r.x ? sampleNote(r) : '';
      return () => null;
    }
    const n = r.fit.grid, zs = r.z.flat().filter(v => v !== null);
    const zlo = Math.min(...zs), zhi = Math.max(...zs);
    const lin = (a) => ({ kind: a.scale, lo: a.scale === 'log' ? Math.log10(a.lo) : a.lo, hi: a.scale === 'log' ? Math.log10(a.hi) : a.hi,
      t: a.scale === 'log' ? v => Math.log10(v) : v => v });
    const ax = lin(r.x), ay = lin(r.y);
    const box = { x: 70, y: 10, w: w - 70 - 90, h: h - 10 - 44 };
    const { px, py } = frame(ctx, box, ax, ay, r.x.name + (r.x.scale === 'log' ? ' (log)' : ''), r.y.name + (r.y.scale === 'log' ? ' (log)' : ''));
    const cw = box.w / n, ch = box.h / n, hits = [];
    let drawn = 0;
    r.z.forEach((row, j) => row.forEach((z, i) => {
      if (z === null) return;
      ctx.fillStyle = colour(zhi > zlo ? (z - zlo) / (zhi - zlo) : 0.5);
      ctx.fillRect(box.x + i * cw, box.y + box.h - (j + 1) * ch, Math.ceil(cw), Math.ceil(ch));
      hits.push({ x: box.x + (i + 0.5) * cw, y: box.y + box.h - (j + 0.5) * ch,
        text: r.x.name + ' ' + fmt(r.x.centres[i]) + ' · ' + r.y.name + ' ' + fmt(r.y.centres[j]) + ' · fit ' + fmt(z) });
      drawn++;
    }));
    ctx.strokeStyle = '#fff'; ctx.fillStyle = '#1b1f24';
    for (const [x, y, m] of r.points) {
      const cx = px(x), cy = py(y);
      ctx.beginPath(); ctx.arc(cx, cy, 2.5, 0, 2 * Math.PI); ctx.fill(); ctx.stroke();
      hits.push({ x: cx, y: cy, text: 'trial: ' + r.x.name + ' ' + fmt(x) + ' · ' + r.y.name + ' ' + fmt(y) + ' · ' + metricName(r) + ' ' + fmt(m) });
    }
    const bx = box.x + box.w + 16;
    for (let k = 0; k < box.h; k++) { ctx.fillStyle = colour(1 - k / box.h); ctx.fillRect(bx, box.y + k, 14, 1); }
    ctx.fillStyle = AXIS; ctx.textAlign = 'left'; ctx.textBaseline = 'middle';
    ctx.fillText(fmt(zhi), bx + 18, box.y + 6, 52);
    ctx.fillText(fmt(zlo), bx + 18, box.y + box.h - 6, 52);
    canvas.setAttribute('aria-label', 'Contour of the ' + metricName(r) + ' over ' + r.x.name + ' and ' + r.y.name);
    canvas.dataset.drawn = String(drawn);
    canvas.dataset.grid = JSON.stringify({ x: box.x, y: box.y, w: box.w, h: box.h, n });
    table(['Axis', 'Parameter', 'Scale', 'From', 'To', 'Bandwidth'],
      [['x', r.x.name, r.x.scale, fmt(r.x.lo), fmt(r.x.hi), fmt(r.x.bandwidth)], ['y', r.y.name, r.y.scale, fmt(r.y.lo), fmt(r.y.hi), fmt(r.y.bandwidth)]],
      'The contour plot\'s axes');
    note.textContent = 'Colour: a Nadaraya–Watson average of the ' + metricName(r) + ' (' + r.optimizeMode + ') with a Gaussian kernel on a ' + n + '×' + n +
      ' grid, in the parameters\' ' + (r.x.scale === 'log' || r.y.scale === 'log' ? '(log) ' : '') + 'space, bandwidths by Scott\'s rule (fractions of each range, in the table); ' +
      fmtInt(r.filled) + ' cells within ' + r.fit.reach + ' bandwidths of a trial, the others blank; from ' + fmt(zlo) + ' to ' + fmt(zhi) + '. Dots: the ' +
      fmtInt(r.trials) + ' trials with both parameters. ' + sampleNote(r);
    return picker(hits);
  }

  function drawEcdf(canvas, note) {
    const r = A.data.ecdf;
    const { ctx, w, h } = window.TQChart.setup(canvas);
    const hits = [];
    if (!r.n) {
      ctx.fillStyle = AXIS; ctx.textAlign = 'center';
      ctx.fillText('No trial with a final metric yet', w / 2, h / 2);
    } else {
      const ax = axis('linear', r.x), ay = axis('linear', [0, 1]);
      const box = { x: 70, y: 10, w: w - 70 - 16, h: h - 10 - 44 };
      const { px, py } = frame(ctx, box, ax, ay, metricName(r), 'share of trials ≤');
      ctx.strokeStyle = BLUE; ctx.lineWidth = 2; ctx.beginPath();
      ctx.moveTo(box.x, py(0)); ctx.lineTo(px(r.x[0]), py(0));
      r.x.forEach((x, k) => {
        ctx.lineTo(px(x), py(k ? r.f[k - 1] : 0)); ctx.lineTo(px(x), py(r.f[k]));
        hits.push({ x: px(x), y: py(r.f[k]), text: fmt(r.f[k] * 100) + '% of the trials ≤ ' + fmt(x) });
      });
      ctx.lineTo(box.x + box.w, py(1)); ctx.stroke();
      ctx.strokeStyle = RED; ctx.setLineDash([4, 4]); ctx.lineWidth = 1; ctx.beginPath();
      ctx.moveTo(px(r.median), box.y); ctx.lineTo(px(r.median), box.y + box.h); ctx.stroke(); ctx.setLineDash([]);
    }
    canvas.setAttribute('aria-label', 'Empirical distribution of the ' + metricName(r) + ' of ' + r.n + ' trials');
    canvas.dataset.drawn = String(r.x.length);
    table(['Trials', 'Lowest', 'Median', 'Highest', 'Distinct values'], [[r.n, fmt(r.min), fmt(r.median), fmt(r.max), r.x.length]],
      'The distribution\'s summary');
    note.textContent = 'The share of the trials whose ' + metricName(r) + ' is at most each value (' + r.optimizeMode + '); dashed: the median. ' + sampleNote(r);
    return picker(hits);
  }

  function median(a) {
    const s = a.slice().sort((x, y) => x - y);
    return s.length ? s[Math.floor((s.length - 1) / 2)] : null;
  }

  /* the curves of the others in blue under the early-stopped ones in red */
  function drawCurves(canvas, note) {
    const r = A.data.curves, cs = r.curves.filter(c => c.points.length);
    const { ctx, w, h } = window.TQChart.setup(canvas);
    const hits = [];
    if (!cs.length) {
      ctx.fillStyle = AXIS; ctx.textAlign = 'center';
      ctx.fillText('No ended trial reported intermediate results yet', w / 2, h / 2);
    } else {
      const ax = axis('linear', cs.flatMap(c => c.points.map(p => p[0]))), ay = axis('linear', cs.flatMap(c => c.points.map(p => p[1])));
      const box = { x: 70, y: 28, w: w - 70 - 16, h: h - 28 - 44 };
      const { px, py } = frame(ctx, box, ax, ay, 'step (sequence)', 'intermediate result');
      for (const stopped of [false, true]) {
        ctx.strokeStyle = stopped ? RED : BLUE; ctx.globalAlpha = stopped ? 0.7 : 0.4; ctx.lineWidth = 1.5;
        for (const c of cs.filter(c => c.stopped === stopped)) {
          ctx.beginPath();
          c.points.forEach(([x, y], i) => (i ? ctx.lineTo(px(x), py(y)) : ctx.moveTo(px(x), py(y))));
          ctx.stroke();
          for (const p of c.points) hits.push({ x: px(p[0]), y: py(p[1]), p: [p[0], p[1], c.id], text: 'trial ' + c.id + ' (' + c.status + ') · step ' + p[0] + ' · ' + fmt(p[1]) });
        }
      }
      ctx.globalAlpha = 1; ctx.textAlign = 'left'; ctx.textBaseline = 'middle';
      let x = box.x;
      for (const [name, col] of [['stopped early (EARLY_STOPPED)', RED], ['not stopped (the other ended trials)', BLUE]]) {
        ctx.fillStyle = col; ctx.fillRect(x, 8, 10, 10);
        ctx.fillStyle = AXIS; ctx.fillText(name, x + 14, 13);
        x += ctx.measureText(name).width + 34;
      }
    }
    const groups = [['stopped early', r.curves.filter(c => c.stopped), r.counts.EARLY_STOPPED], ['not stopped', r.curves.filter(c => !c.stopped), r.counts.others]];
    canvas.setAttribute('aria-label', 'Intermediate results of ' + r.curves.length + ' ended trials, coloured by the assessor\'s decision');
    canvas.dataset.drawn = String(cs.length);
    table(['Trials', 'Curves shown', 'Ended trials', 'Results per curve (median)'],
      groups.map(([name, list, total]) => [name, list.length, total, list.length ? median(list.map(c => c.results)) : '—']),
      'The curves of each group');
    note.textContent = (r.assessor ? 'Assessor: ' + r.assessor + '. ' : 'No assessor configured. ') +
      'Red: trials it stopped early; blue: the other ended trials. The most recent ' + fmtInt(r.sample.limit) + ' of each group, by sequence, each with its first ' +
      fmtInt(r.sample.results) + ' intermediate results (at most ' + r.sample.points + ' points drawn per curve). A click opens a trial.';
    return picker(hits);
  }

  function keyMenu(tab, keys) {
    const all = [''].concat(Array.from(keys || []));
    const sel = $('#anaKey');
    if (sel.dataset.sig !== all.join('|')) {
      sel.dataset.sig = all.join('|');
      sel.innerHTML = all.map(k => '<option value="' + esc(k) + '">' + (k ? esc(k) : 'default') + '</option>').join('');
    }
    sel.value = A.key;
    $('#anaKeyBox').hidden = tab === 'curves' || all.length < 2;
    $('#anaXBox').hidden = $('#anaYBox').hidden = tab !== 'contour';
  }

  /* draws tab's answer on canvas (app.js's drawCharts); returns the pointer's picker */
  function draw(tab, canvas, note, metricKeys) {
    const r = A.data[tab];
    if (!r) return () => null;
    if (tab !== 'slice') canvas.parentElement.style.height = tab === 'contour' ? '420px' : '';
    keyMenu(tab, metricKeys);
    const pick = { slice: drawSlice, contour: drawContour, ecdf: drawEcdf, curves: drawCurves }[tab](canvas, note);
    document.body.dataset.analysisReady = tab + ':' + r.seq;
    return pick;
  }

  /* app.js's selectTab: the controls and table shown with the analysis tabs only */
  function select(tab) {
    const on = TABS.includes(tab);
    $('#anaCtl').hidden = !on;
    $('#anaWrap').hidden = !on;
    if (!on) $('#detailChart').parentElement.style.height = '';
    delete document.body.dataset.analysisReady;
  }

  /* reload: what reads and draws the current tab again (app.js's loadCharts) */
  function init(reload) {
    A.reload = reload;
    $('#anaKey').addEventListener('change', () => { A.key = $('#anaKey').value; A.reload(); });
    for (const [id, me, other] of [['#anaX', 'x', 'y'], ['#anaY', 'y', 'x']]) {
      $(id).addEventListener('change', () => {
        const r = A.data.contour, v = $(id).value;
        // the other axis takes this one's former parameter rather than the same one
        if (r && r[other] && r[other].name === v && r[me]) A[other] = r[me].name;
        else if (r && r[other]) A[other] = r[other].name;
        A[me] = v;
        A.reload();
      });
    }
  }

  window.TQAnalysis = { tabs: TABS, has: t => TABS.includes(t), load, draw, select, init };
})();
