// lib.js: what the web UI's browser tests and benchmark share: Debian's chromium
// driven by playwright-core, the database read with the sqlite3 CLI, small asserts.
'use strict';
const { chromium } = require('playwright-core');
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

async function launch(extraArgs = []) {
  if (!fs.existsSync(CHROMIUM)) throw new Error(CHROMIUM + ' not found: install Debian\'s chromium (scripts/install-deps.sh)');
  const dataDir = fs.mkdtempSync(path.join(require('os').tmpdir(), 'trialq-chromium-'));
  const ctx = await chromium.launchPersistentContext(dataDir, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 800 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage', ...extraArgs],
  });
  const close = async () => { await ctx.close(); fs.rmSync(dataDir, { recursive: true, force: true }); };
  return { ctx, close };
}

function sql(db, query) {
  return execFileSync('sqlite3', ['-batch', '-noheader', '-cmd', '.timeout 10000', db, query], { encoding: 'utf8' }).trim();
}

function assert(cond, msg) {
  if (!cond) throw new Error('assertion failed: ' + msg);
}

function eq(got, want, msg) {
  if (String(got) !== String(want)) throw new Error('assertion failed: ' + msg + ': got ' + JSON.stringify(got) + ', want ' + JSON.stringify(want));
}

async function until(what, fn, ms = 30000, every = 200) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) { last = e.message; }
    if (Date.now() > end) throw new Error('timed out after ' + ms + ' ms waiting for ' + what + (last ? ' (last: ' + last + ')' : ''));
    await new Promise(r => setTimeout(r, every));
  }
}

// runs a browser test: body(ctx, page) in a fresh chromium; when it fails, a
// screenshot <artifacts>/<failShot>.png, the error on stderr and exit code 1
function runTest(artifacts, failShot, body) {
  (async () => {
    const { ctx, close } = await launch();
    const page = await ctx.newPage();
    try {
      await body(ctx, page);
    } catch (e) {
      await page.screenshot({ path: path.join(artifacts, failShot + '.png'), fullPage: true }).catch(() => {});
      throw e;
    } finally {
      await close();
    }
  })().catch(e => { console.error('FAIL: ' + (e.stack || e)); process.exit(1); });
}

// chart.js's number format (fmt), as the UI prints numbers
function fmtNum(v) {
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(2);
  return String(Number(v.toPrecision(6)));
}

// GET u as JSON (a status other than 200 rejects)
function getJson(u) {
  return new Promise((resolve, reject) => {
    require('http').get(u, res => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', c => { body += c; });
      res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(body)) : reject(new Error(u + ': ' + res.statusCode))));
    }).on('error', reject);
  });
}

// the page's console errors and uncaught exceptions from now on
function pageErrors(page) {
  const errors = [];
  page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', e => errors.push(String(e)));
  return errors;
}

module.exports = { launch, runTest, sql, assert, eq, until, fmtNum, getJson, pageErrors };
