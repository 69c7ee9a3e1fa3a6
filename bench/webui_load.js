// bench/webui_load.js URL RUNS: loads the web UI at URL in headless chromium, RUNS
// times per case, and prints the median (and worst) time from navigation to the first
// complete render (the UI stamps performance.now() into body[data-first-render] once
// its first poll has rendered everything the page shows) and the bytes received for
// it (Network.loadingFinished encodedDataLength: headers and bodies, as on the wire).
// Cases: the overview and the trials page (first table page), each cold (a new
// browser profile: nothing cached) and warm (files revalidated with 304s). Then the
// analysis tabs (webui/analysis.js): ms from the click on each tab to its view drawn,
// the api's answer uncached (DB given: one trial changed before each click, as while an
// experiment runs).
'use strict';
const { launch, sql } = require('../tests/webui/lib');

const [url, runsArg, db] = process.argv.slice(2);
const runs = Number(runsArg || 5);

async function once(ctx, path) {
  const page = await ctx.newPage();
  const cdp = await ctx.newCDPSession(page);
  await cdp.send('Network.enable');
  let bytes = 0, requests = 0;
  cdp.on('Network.loadingFinished', e => { bytes += e.encodedDataLength; requests++; });
  await page.goto(url + path);
  await page.waitForSelector('body[data-first-render]', { timeout: 60000 });
  const ms = Number(await page.getAttribute('body', 'data-first-render'));
  const rows = await page.$$eval('#trials tbody tr[data-id]', t => t.length);
  const best = await page.textContent('#best');
  await page.close();
  return { ms, bytes, requests, rows, best };
}

const median = xs => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const TABS = ['slice', 'contour', 'ecdf', 'curves'];
async function tabs(ctx, out) {
  const page = await ctx.newPage();
  await page.goto(url + 'detail');
  await page.waitForSelector('body[data-first-render]', { timeout: 60000 });
  for (const tab of TABS) {
    if (db) sql(db, "UPDATE trial SET message = coalesce(message, '') || 'x' WHERE sequence = 7");
    const t0 = await page.evaluate(() => performance.now());
    await page.click('[data-tab=' + tab + ']');
    await page.waitForFunction(t => (document.body.dataset.analysisReady || '').startsWith(t + ':'), tab, { timeout: 60000 });
    out[tab].push(await page.evaluate(t => performance.now() - t, t0));
  }
  await page.close();
}

(async () => {
  const out = [];
  for (const path of ['oview', 'detail']) {
    const cold = [], warm = [];
    for (let i = 0; i < runs; i++) {
      const { ctx, close } = await launch();
      cold.push(await once(ctx, path));
      warm.push(await once(ctx, path));
      await close();
    }
    if (path === 'detail' && cold.some(r => r.rows !== 50)) throw new Error('the first table page has ' + cold.map(r => r.rows) + ' rows, not 50');
    if (cold.some(r => !/\d/.test(r.best))) throw new Error('no best metric shown');
    for (const [name, rs] of [['cold', cold], ['warm', warm]]) {
      out.push({ path, name, ms: median(rs.map(r => r.ms)), worst: Math.max(...rs.map(r => r.ms)), bytes: median(rs.map(r => r.bytes)), requests: median(rs.map(r => r.requests)) });
    }
  }
  const tabMs = Object.fromEntries(TABS.map(t => [t, []]));
  for (let i = 0; i < runs; i++) {
    const { ctx, close } = await launch();
    await tabs(ctx, tabMs);
    await close();
  }
  for (const t of TABS) {
    console.log(`webui_load: the ${t.padEnd(7)} tab, click to drawn: ${String(Math.round(median(tabMs[t]))).padStart(5)} ms median, ` +
      `${String(Math.round(Math.max(...tabMs[t]))).padStart(5)} ms worst (target <= 1000 ms)`);
  }
  for (const r of out) {
    const what = r.path === 'oview' ? 'overview (+ chart)        ' : 'trials page (table + chart)';
    console.log(`webui_load: ${what} ${r.name}: ${String(r.ms).padStart(5)} ms median, ${String(r.worst).padStart(5)} ms worst; ` +
      `${(r.bytes / 1024).toFixed(1).padStart(6)} kB in ${r.requests} requests (target <= 1000 ms)`);
  }
})().catch(e => { console.error('webui_load: ' + (e.stack || e)); process.exit(1); });
