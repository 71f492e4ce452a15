// End-to-end: detailed mode's comparison (issue 38, item 6). Pin a
// configuration, change it, and read both term by term and in time; pin a
// planner's row without applying it; the link keeps the pin (dbase=).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launch, openPage, urlMatches, urlLacks } from './harness.mjs';

let server, browser;
before(async () => { server = await startServer(); browser = await launch(); });
after(async () => { await browser?.close(); server?.close(); });

const open = (query = '', options = {}) => openPage(browser, server.base + query, options);

/** Issue 38's planner: Llama-3.1-70B on 64 H100s, ZeRO-1, a trillion
 *  tokens at 2.00 per GPU-hour. */
const PLANNER = '?batch=512&seq=8192&card=h100-sxm&mode=detailed&model=llama-3.1-70b&dp=8&tp=8&sp=1&zero=1&micro=1&recompute=full&tokens=1e12&price=2';

/** The comparison's line `key` as [label, pinned, now, change]. */
async function line(page, key) {
  const row = page.locator(`#compare-table tr[data-line="${key}"]`);
  return [await row.locator('th').textContent(), ...(await row.locator('td').allTextContents())];
}

/** Sets a whole-number box in a (possibly collapsed) group and commits it. */
async function setCount(page, id, value) {
  await page.evaluate((id) => { document.getElementById(id).closest('details').open = true; }, id);
  await page.fill(`#${id}`, String(value));
  await page.press(`#${id}`, 'Enter');
}

// The figures are tests/compare.rs's (`llama_70b_zero1_against_zero3`).
const ZERO1_VS_ZERO3 = {
  params: ['Parameters', '17.6', '2.2', '−15.4'],
  master_weights: ['Master weights', '4.4', '4.4', '0.0'],
  total: ['Total at rest', '50.4', '19.5', '−30.9'],
  need: ['Peak with the runtime overhead', '59.6', '24.7', '−35.0'],
  step_s: ['Step time', '74.96 s', '90.67 s', '+15.71 s'],
  mfu: ['MFU', '42.5 %', '35.2 %', '−7.4 pt'],
  days: ['Days', '206.9', '250.2', '+43.3'],
  cost: ['Cost', '635,465', '768,623', '+133,158'],
};

test('pin ZeRO-1, switch to ZeRO-3: both side by side, term by term and in time; the link keeps the pin', async () => {
  const { page, problems, context } = await open(PLANNER);
  assert.equal(await page.isVisible('#pin-detailed'), true);
  assert.equal(await page.isVisible('#compare-table'), false);
  assert.equal(await page.isVisible('#unpin-detailed'), false);
  await page.click('#pin-detailed');
  await page.waitForSelector('#compare-table', { state: 'visible' });
  assert.equal(await page.textContent('#compare-what'), 'Pinned: the same configuration as now.');
  assert.deepEqual(await line(page, 'params'), ['Parameters', '17.6', '17.6', '0.0']);
  assert.equal(await page.textContent('#pin-detailed'), 'Pin current instead');
  await setCount(page, 'zero-input', 3);
  await page.waitForFunction(() =>
    document.querySelector('#compare-table tr[data-line="params"] td:nth-of-type(2)').textContent === '2.2');
  for (const [key, want] of Object.entries(ZERO1_VS_ZERO3)) {
    assert.deepEqual(await line(page, key), want, key);
  }
  assert.equal(await page.locator('#compare-table tbody tr:not([hidden])').count(), 15);
  assert.equal(await page.textContent('#compare-what'), 'Pinned: now with --zero 1.');
  // The address holds the page as it is and the pin as its difference.
  await urlMatches(page, /zero=3&.*dbase=zero\.1$/);
  const link = page.url();
  // A colleague opening the link sees the same comparison.
  const other = await open(link.slice(server.base.length));
  await other.page.waitForSelector('#compare-table', { state: 'visible' });
  for (const [key, want] of Object.entries(ZERO1_VS_ZERO3)) {
    assert.deepEqual(await line(other.page, key), want, key);
  }
  assert.equal(await other.page.isVisible('#url-notices'), false);
  await other.context.close();
  // One click unpins; the address drops the key.
  await page.click('#unpin-detailed');
  assert.equal(await page.isVisible('#compare-table'), false);
  await urlLacks(page, /dbase=/);
  assert.equal(await page.textContent('#pin-detailed'), 'Pin as baseline');
  await context.close();
  assert.deepEqual(problems, []);
});

test('"Compare" on a planner row shows it beside the page without applying it', async () => {
  const { page, problems, context } = await open(
    '?mode=detailed&model=llama-3.1-8b&seq=4096&batch=64&dp=8&zero=3&micro=1&recompute=full&card=h100-sxm&oh=0');
  await page.waitForSelector('#plan-compare-0');
  assert.equal(await page.textContent('#plan-title'), 'Faster and still fits');
  const row = await page.textContent('#make-it-fit li:first-child .plan-summary');
  assert.match(row, /^--micro-batch 2 --recompute none --zero 2: /);
  await page.click('#plan-compare-0');
  await page.waitForSelector('#compare-table', { state: 'visible' });
  // The row's own flags, as the row names them, from the page to the row.
  assert.equal(await page.textContent('#compare-what'), 'Pinned: now with --micro-batch 2 --recompute none --zero 2.');
  // Not applied: the controls and the address keep the page's own.
  await urlMatches(page, /recompute=full&.*dbase=zero\.2\*micro\.2\*recompute$/);
  assert.equal(await page.inputValue('#zero-input'), '3');
  const [label, pinned, now, change] = await line(page, 'step_s');
  assert.equal(label, 'Step time');
  const s = (t) => parseFloat(t) * (t.endsWith(' ms') ? 1e-3 : 1);
  assert.ok(s(pinned) < s(now), `${pinned} < ${now}: the row is faster`);
  assert.match(change, /^\+/);
  // Recomputing nothing keeps more activations: the row's peak is higher.
  const [needLabel, rowNeed, nowNeed] = await line(page, 'need');
  assert.equal(needLabel, 'What must fit (the peak)');
  assert.ok(parseFloat(rowNeed) > parseFloat(nowNeed));
  assert.equal(await page.locator('#compare-table tr[data-line="days"]:not([hidden])').count(), 0,
    'no token budget, no days');
  await context.close();
  assert.deepEqual(problems, []);
});

// tests/compare.rs's `a_bad_pin_is_repaired_or_dropped_with_a_message`: the
// bad ZeRO stage keeps its default (0), the batch the nearest multiple.
const WHAT_REPAIRED = 'Pinned: now with --batch 504 --zero 0.';

test('a pin the page cannot use is repaired, each value with a message', async () => {
  const { page, problems, context } = await open(`${PLANNER}&dbase=zero.9*batch.500`);
  await page.waitForSelector('#compare-table', { state: 'visible' });
  const notice = await page.textContent('#url-notices');
  assert.match(notice, /dbase: the pinned configuration's zero: must be a whole number from 0 to 3/);
  assert.match(notice, /dbase: the pinned configuration's batch: batch must be a multiple of micro-batch × dp \(8\); using 504/);
  assert.equal(await page.textContent('#compare-what'), WHAT_REPAIRED);
  await context.close();
  assert.deepEqual(problems, []);
});
