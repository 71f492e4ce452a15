// The lesson's exercises on the full page: "Set it up" sets the exercise's
// whole configuration, so that its explanation describes the bars beside it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launch, openPage } from './harness.mjs';

let server, browser;
before(async () => { server = await startServer(); browser = await launch(); });
after(async () => { await browser?.close(); server?.close(); });

const cell = (page, column) => page.textContent(`tr[data-term="total"] td.${column}`);

test('"Set it up" sets the exercise\'s whole configuration: its explanation matches the bars', async () => {
  // Elsewhere first: batch 8 (258.0 GB) and GiB.
  const { page, context } = await openPage(browser, server.base + '?batch=8&unit=gib');
  assert.equal(await cell(page, 'gb'), '240.3');
  await page.click('#exercise-1-setup');
  await page.waitForSelector('#exercise-1.active');
  const explanation = await page.textContent('#exercise-1-explanation');
  const [base, current] = [await cell(page, 'baseline'), await cell(page, 'gb')];
  assert.deepEqual([base, current], ['172.3', '172.3']);
  assert.match(explanation, new RegExp(`${base.replace('.', '\\.')} GiB either way`));
  assert.equal(await page.inputValue('#batch-input'), '4');
  // Exercise 2 from there: the lesson's batch 4 against 8, whatever was on screen.
  await page.fill('#params-input', '13');
  await page.press('#params-input', 'Enter');
  await page.click('#exercise-2-setup');
  await page.waitForSelector('#exercise-2.active');
  assert.equal(await page.inputValue('#params-input'), '7');
  assert.equal(await page.inputValue('#batch-input'), '8');
  assert.equal(await page.isChecked('#mixed-input'), true);
  await context.close();
});
