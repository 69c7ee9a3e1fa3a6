/* chart.js: the few charts the UI draws, on <canvas>, with no library: x/y charts
 * (dots, lines, steps, stems) and parallel coordinates. Each draw returns a picker that
 * maps a mouse position to the nearest drawn point (for tooltips and clicks). The
 * servers sends at most a few thousand points per chart (it downsamples), so a plain
 * redraw is cheap. */
'use strict';
(function () {
  const FONT = '12px system-ui, sans-serif';
  const AXIS = '#59636e';
  const GRID = '#e4e9ee';

  function setup(canvas) {
    const r = canvas.getBoundingClientRect();
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(50, Math.round(r.width)), h = Math.max(50, Math.round(r.height));
    if (canvas.width !== w * dpr || canvas.height !== h * dpr) {
      canvas.width = w * dpr;
      canvas.height = h * dpr;
    }
    const ctx = canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);
    ctx.font = FONT;
    return { ctx, w, h };
  }

  /* about n "nice" ticks covering [lo, hi] */
  function ticks(lo, hi, n, integer) {
    if (!(hi > lo)) return [lo];
    const raw = (hi - lo) / n;
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    const f = raw / p;
    let step = (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * p;
    if (integer && step < 1) step = 1;
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    return out;
  }

  function fmt(v) {
    if (v === null || v === undefined || Number.isNaN(v)) return '';
    if (typeof v !== 'number') return String(v);
    const a = Math.abs(v);
    if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(2);
    return String(Number(v.toPrecision(6)));
  }

  function range(vals) {
    let lo = Infinity, hi = -Infinity;
    for (const v of vals) { if (v < lo) lo = v; if (v > hi) hi = v; }
    if (lo === Infinity) return [0, 1];
    if (lo === hi) { const d = Math.abs(lo) * 0.05 || 1; return [lo - d, hi + d]; }
    const pad = (hi - lo) * 0.04;
    return [lo - pad, hi + pad];
  }

  function empty(ctx, w, h, text) {
    ctx.fillStyle = AXIS;
    ctx.textAlign = 'center';
    ctx.fillText(text || 'No data yet', w / 2, h / 2);
    return () => null;
  }

  /* opts: {series: [{name, color, kind: 'dots'|'line'|'step'|'stems', points: [[x, y, id], ...]}],
   *        xLabel, yLabel, empty} */
  function xy(canvas, opts) {
    const { ctx, w, h } = setup(canvas);
    const series = (opts.series || []).filter(s => s.points && s.points.length);
    if (!series.length) return empty(ctx, w, h, opts.empty);
    const xs = [], ys = [];
    for (const s of series) for (const p of s.points) { xs.push(p[0]); ys.push(p[1]); }
    if (series.some(s => s.kind === 'stems')) ys.push(0);
    const [x0, x1] = range(xs), [y0, y1] = range(ys);
    const yt = ticks(y0, y1, 5);
    const L = Math.max(48, Math.ceil(Math.max(...yt.map(t => ctx.measureText(fmt(t)).width))) + 30);
    const R = 12, T = series.length > 1 ? 26 : 10, B = 36;
    const xint = xs.every(Number.isInteger);
    const px = x => L + (x - x0) / (x1 - x0) * (w - L - R);
    const py = y => h - B - (y - y0) / (y1 - y0) * (h - T - B);
    ctx.strokeStyle = GRID; ctx.fillStyle = AXIS; ctx.lineWidth = 1;
    ctx.textAlign = 'right'; ctx.textBaseline = 'middle';
    for (const t of yt) {
      const y = Math.round(py(t)) + 0.5;
      ctx.beginPath(); ctx.moveTo(L, y); ctx.lineTo(w - R, y); ctx.stroke();
      ctx.fillText(fmt(t), L - 6, y);
    }
    ctx.textAlign = 'center'; ctx.textBaseline = 'top';
    for (const t of ticks(x0, x1, Math.max(2, Math.floor((w - L) / 90)), xint)) {
      const x = Math.round(px(t)) + 0.5;
      ctx.beginPath(); ctx.moveTo(x, T); ctx.lineTo(x, h - B); ctx.stroke();
      ctx.fillText(fmt(t), x, h - B + 4);
    }
    ctx.fillText(opts.xLabel || '', L + (w - L - R) / 2, h - 16);
    ctx.save(); ctx.translate(10, T + (h - T - B) / 2); ctx.rotate(-Math.PI / 2);
    ctx.textBaseline = 'middle'; ctx.fillText(opts.yLabel || '', 0, 0); ctx.restore();
    const hits = [];
    for (const s of series) {
      ctx.strokeStyle = s.color; ctx.fillStyle = s.color; ctx.lineWidth = s.width || 1.5;
      const pts = s.points;
      if (s.kind === 'line' || s.kind === 'step') {
        ctx.beginPath();
        pts.forEach((p, i) => {
          const x = px(p[0]), y = py(p[1]);
          if (i === 0) ctx.moveTo(x, y);
          else if (s.kind === 'step') { ctx.lineTo(x, py(pts[i - 1][1])); ctx.lineTo(x, y); }
          else ctx.lineTo(x, y);
        });
        if (s.kind === 'step' && s.extendTo !== undefined) ctx.lineTo(px(Math.max(s.extendTo, pts[pts.length - 1][0])), py(pts[pts.length - 1][1]));
        ctx.stroke();
      }
      if (s.kind === 'stems') {
        ctx.globalAlpha = 0.7; ctx.beginPath();
        for (const p of pts) { const x = Math.round(px(p[0])) + 0.5; ctx.moveTo(x, py(0)); ctx.lineTo(x, py(p[1])); }
        ctx.stroke(); ctx.globalAlpha = 1;
      }
      const r = s.kind === 'dots' ? 2.5 : s.kind === 'line' && pts.length < 60 ? 2.5 : 0;
      if (r) {
        ctx.globalAlpha = s.kind === 'dots' ? 0.75 : 1;
        for (const p of pts) ctx.fillRect(px(p[0]) - r, py(p[1]) - r, 2 * r, 2 * r);
        ctx.globalAlpha = 1;
      }
      for (const p of pts) hits.push({ x: px(p[0]), y: py(p[1]), p, s });
    }
    if (series.length > 1) {
      ctx.textAlign = 'left'; ctx.textBaseline = 'middle';
      let x = L;
      for (const s of series) {
        ctx.fillStyle = s.color; ctx.fillRect(x, 8, 10, 10);
        ctx.fillStyle = AXIS; ctx.fillText(s.name, x + 14, 13);
        x += ctx.measureText(s.name).width + 30;
        if (x > w - 60) break;
      }
    }
    return (mx, my) => {
      let best = null, bd = 64;
      for (const hpt of hits) {
        const d = (hpt.x - mx) ** 2 + (hpt.y - my) ** 2;
        if (d < bd) { bd = d; best = hpt; }
      }
      return best;
    };
  }

  /* opts: {axes: [{name, kind: 'num'|'log'|'cat', cats}], lines: [{vals, top, id, seq}], empty} */
  function parallel(canvas, opts) {
    const { ctx, w, h } = setup(canvas);
    const axes = opts.axes || [], lines = opts.lines || [];
    if (!axes.length || !lines.length) return empty(ctx, w, h, opts.empty);
    const L = 40, R = 60, T = 24, B = 24;
    const ax = i => L + (axes.length === 1 ? 0 : i * (w - L - R) / (axes.length - 1));
    const scale = axes.map((a, i) => {
      if (a.kind === 'cat') {
        const n = a.cats.length;
        return v => { const k = a.cats.indexOf(String(v)); return k < 0 ? null : n === 1 ? 0.5 : k / (n - 1); };
      }
      const tr = a.kind === 'log' ? (v => (v > 0 ? Math.log10(v) : null)) : (v => (typeof v === 'number' ? v : null));
      const vals = lines.map(l => tr(l.vals[i])).filter(v => v !== null && Number.isFinite(v));
      let lo = Math.min(...vals), hi = Math.max(...vals);
      if (!vals.length) { lo = 0; hi = 1; }
      if (lo === hi) { lo -= 1; hi += 1; }
      a.lo = lo; a.hi = hi;
      return v => { const t = tr(v); return t === null || !Number.isFinite(t) ? null : (t - lo) / (hi - lo); };
    });
    const y = f => h - B - f * (h - T - B);
    const draw = (l, color, alpha) => {
      ctx.strokeStyle = color; ctx.globalAlpha = alpha; ctx.beginPath();
      let pen = false;
      l.vals.forEach((v, i) => {
        const f = scale[i](v);
        if (f === null) { pen = false; return; }
        if (pen) ctx.lineTo(ax(i), y(f)); else ctx.moveTo(ax(i), y(f));
        pen = true;
      });
      ctx.stroke();
    };
    ctx.lineWidth = 1;
    for (const l of lines) if (!l.top) draw(l, '#8c99a6', 0.25);
    for (const l of lines) if (l.top) draw(l, '#0b5cad', 0.5);
    ctx.globalAlpha = 1;
    axes.forEach((a, i) => {
      const x = Math.round(ax(i)) + 0.5;
      ctx.strokeStyle = AXIS; ctx.beginPath(); ctx.moveTo(x, T); ctx.lineTo(x, h - B); ctx.stroke();
      ctx.fillStyle = '#1b1f24'; ctx.textAlign = 'center'; ctx.textBaseline = 'bottom';
      ctx.fillText(a.name, x, T - 6);
      ctx.fillStyle = AXIS; ctx.textAlign = 'left'; ctx.textBaseline = 'middle';
      if (a.kind === 'cat') {
        a.cats.slice(0, 12).forEach((c, k) => ctx.fillText(c, x + 4, y(a.cats.length === 1 ? 0.5 : k / (a.cats.length - 1))));
      } else {
        const lab = v => fmt(a.kind === 'log' ? Math.pow(10, v) : v);
        ctx.fillText(lab(a.hi), x + 4, y(1));
        ctx.fillText(lab(a.lo), x + 4, y(0));
      }
    });
    return () => null;
  }

  /* opts: {bars: [{name, value}], xLabel, empty}: horizontal bars from 0, in the order
   * given, each with its name on the left and its value at its end */
  function bars(canvas, opts) {
    const { ctx, w, h } = setup(canvas);
    const list = opts.bars || [];
    if (!list.length) return empty(ctx, w, h, opts.empty);
    const L = Math.min(w / 3, Math.max(60, Math.ceil(Math.max(...list.map(b => ctx.measureText(b.name).width))) + 14));
    const R = 64, T = 8, B = 36;
    const hi = Math.max(...list.map(b => b.value), 1e-12);
    const px = v => L + v / hi * (w - L - R);
    const row = (h - T - B) / list.length, bh = Math.max(2, Math.min(28, row * 0.7));
    ctx.strokeStyle = GRID; ctx.fillStyle = AXIS; ctx.lineWidth = 1;
    ctx.textAlign = 'center'; ctx.textBaseline = 'top';
    for (const t of ticks(0, hi, Math.max(2, Math.floor((w - L - R) / 90)))) {
      const x = Math.round(px(t)) + 0.5;
      ctx.beginPath(); ctx.moveTo(x, T); ctx.lineTo(x, h - B); ctx.stroke();
      ctx.fillText(fmt(t), x, h - B + 4);
    }
    ctx.fillText(opts.xLabel || '', L + (w - L - R) / 2, h - 16);
    ctx.textBaseline = 'middle';
    list.forEach((b, i) => {
      const y = T + row * i + row / 2;
      ctx.fillStyle = '#0b5cad';
      ctx.fillRect(L, y - bh / 2, Math.max(1, px(b.value) - L), bh);
      ctx.fillStyle = '#1b1f24'; ctx.textAlign = 'right';
      ctx.fillText(b.name, L - 6, y, L - 8);
      ctx.fillStyle = AXIS; ctx.textAlign = 'left';
      ctx.fillText(fmt(b.value), px(b.value) + 4, y);
    });
    return () => null;
  }

  window.TQChart = { xy, parallel, bars, fmt, setup, ticks };
})();
