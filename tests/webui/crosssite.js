// crosssite.js: a page of another site, open in the user's browser, tries to change an
// experiment whose api listens on loopback (no token there): the classic JSON form
// POST (enctype text/plain), no-cors fetches (no CORS preflight for either), and the
// tuner's WebSocket; then a page that reached the api under its own DNS name (DNS
// rebinding: evil.test resolves to 127.0.0.1 here). Nothing may change. The api's own
// web UI, in the same browser, still can.
//   usage: node crosssite.js <api origin> <evil origin> <rebinding origin> <db> <exp id>
'use strict';
const { launch, sql, assert, eq, until } = require('./lib');

const [apiOrigin, evilOrigin, rebindOrigin, db, expId] = process.argv.slice(2);
const API = apiOrigin + '/api/v1/nni';
const trials = () => Number(sql(db, `SELECT count(*) FROM trial WHERE experiment_id='${expId}'`));
const concurrency = () => Number(sql(db, `SELECT concurrency FROM experiment WHERE id='${expId}'`));

(async () => {
  // evil.test: what a rebinding attacker's name resolves to once it has rebound
  const { ctx, close } = await launch(['--host-resolver-rules=MAP evil.test 127.0.0.1']);
  try {
    const page = await ctx.newPage();
    const before = trials();
    const conc = concurrency();
    const tid = sql(db, `SELECT id FROM trial WHERE experiment_id='${expId}' ORDER BY sequence LIMIT 1`);

    // 1. another origin's page: a form that posts {"x": 1} as text/plain, no-cors
    //    fetches of a new trial, a rerun and a concurrency change, and a WebSocket
    await page.goto(evilOrigin + '/index.html');
    const ws = await page.evaluate(async ({ API, apiOrigin, tid }) => {
      const frame = document.createElement('iframe');
      frame.name = 'sink';
      document.body.appendChild(frame);
      const f = document.createElement('form');
      f.method = 'POST';
      f.enctype = 'text/plain';
      f.action = API + '/trial-jobs';
      f.target = 'sink';
      const i = document.createElement('input');
      i.name = '{"x": 1, "pad": "';
      i.value = '"}';
      f.appendChild(i);
      document.body.appendChild(f);
      const posted = new Promise(r => frame.addEventListener('load', r, { once: true }));
      f.submit();
      await posted;
      const opts = body => ({ method: 'POST', mode: 'no-cors', body, headers: { 'Content-Type': 'text/plain' } });
      await fetch(API + '/trial-jobs', opts('{"x": 2}')).catch(() => {});
      await fetch(API + '/trial-jobs/' + tid + '/rerun', opts('')).catch(() => {});
      await fetch(API + '/experiment?update_type=TRIAL_CONCURRENCY', {
        method: 'PUT', mode: 'no-cors', body: '{"params":{"trialConcurrency":7}}' }).catch(() => {});
      return await new Promise(r => {
        const s = new WebSocket(apiOrigin.replace('http', 'ws') + '/tuner');
        s.onopen = () => r('open');
        s.onerror = () => r('refused');
      });
    }, { API, apiOrigin, tid });
    eq(ws, 'refused', 'the tuner WebSocket from another origin');
    await new Promise(r => setTimeout(r, 1000)); // anything accepted would be a row by now
    eq(trials(), before, 'trials after the other origin\'s requests');
    eq(concurrency(), conc, 'concurrency after the other origin\'s requests');

    // 2. DNS rebinding: a page of evil.test, whose name now resolves to 127.0.0.1, is
    //    same-origin with the api reached as evil.test: neither the UI, nor a read, nor a
    //    change is served under that name
    const doc = await page.goto(rebindOrigin + '/');
    eq(doc.status(), 403, 'the web UI under a rebound name');
    const rebound = await page.evaluate(async () => {
      const read = await fetch('api/v1/nni/trial-jobs');
      const write = await fetch('api/v1/nni/trial-jobs', { method: 'POST', body: '{"x": 3}',
        headers: { 'Content-Type': 'application/json' } });
      return [read.status + ' ' + await read.text(), write.status + ' ' + await write.text()];
    });
    for (const r of rebound)
      assert(r.startsWith('403 ') && r.includes('refused'), 'a rebound page was answered ' + r);
    eq(trials(), before, 'trials after the rebound page\'s request');

    // 3. the api's own web UI still changes things (the browser sends its Origin)
    await page.goto(apiOrigin + '/');
    const own = await page.evaluate(async () => {
      const r = await fetch('api/v1/nni/trial-jobs', { method: 'POST', body: '{"x": 4}',
        headers: { 'Content-Type': 'application/json' } });
      return r.status;
    });
    eq(own, 200, 'a POST from the api\'s own page');
    await until('the own page\'s trial in the database', () => trials() === before + 1, 10000);
    console.log('ok: another origin\'s form POST, no-cors fetches and WebSocket changed nothing, a DNS-rebound page could neither read nor change; the own UI still can');
  } finally {
    await close();
  }
})().catch(e => { console.error(e.stack || e.message); process.exit(1); });
