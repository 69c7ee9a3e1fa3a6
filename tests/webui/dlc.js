// dlc.js: a PAI-DLC trial's detail in the web UI (tests/e2e/87-dlc-experiment.sh):
//   node dlc.js URL DB EXP TRIAL ARTIFACTS
// the Tracking URL row links to the trial's url in the database (the console's page of
// its job), and the "pods" log tab shows the pods' logs the worker fetched (GetPodLogs).
'use strict';
const path = require('path');
const { runTest, sql, eq, until } = require('./lib');

const [url, db, expId, trial, artifacts] = process.argv.slice(2);

runTest(artifacts, 'dlc-fail', async (ctx, page) => {
  await page.goto(url + 'detail');
  await page.fill('#fText', trial);
  await page.waitForSelector(`tr[data-id="${trial}"] button[data-act=open]`);
  await page.click(`tr[data-id="${trial}"] button[data-act=open]`);
  await page.waitForSelector('#trialDialog[open]');
  await until('the dialog shows the trial', async () => (await page.textContent('#dlgTitle')).includes(trial), 10000);
  const want = sql(db, `SELECT url FROM trial WHERE id='${trial}' AND experiment_id='${expId}'`);
  await page.waitForSelector('#dlgUrl');
  eq(await page.getAttribute('#dlgUrl', 'href'), want, 'the Tracking URL link');
  eq(await page.textContent('#dlgUrl'), want, 'the Tracking URL text');
  const pods = '#trialDialog [data-log="dlc-pods.log"]';
  eq(await page.isVisible(pods), true, 'the pods tab of a dlc trial');
  await page.click(pods);
  const job = sql(db, `SELECT url FROM trial WHERE id='${trial}'`).replace(/.*jobId=([^&]*).*/, '$1');
  await until('the pods\' log', async () => (await page.textContent('#dlgLog')).includes('of DLC job ' + job + ' starting'), 10000);
  await page.screenshot({ path: path.join(artifacts, 'dlc-trial.png'), fullPage: true });
  console.log('webui-dlc: tracking URL and pod logs of trial ' + trial);
});
