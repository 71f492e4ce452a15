// A slow network (≈180 KB/s, 560 ms latency, as Chromium's DevTools
// throttle it): the lesson's skeleton shows the real defaults, the full
// calculator downloads while the reader is still on the lesson, and
// Detailed says that it is loading instead of showing the lesson's figures
// as if they were detailed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launch, fullPage } from './harness.mjs';

const FULL = /\/membudget(_bg\.wasm|\.js)$/;
let server, browser;
before(async () => { server = await startServer(); browser = await launch(); });
after(async () => { await browser?.close(); server?.close(); });

/** A page in a fresh context behind a throttled link (CDP
 *  Network.emulateNetworkConditions), and the requests it makes. */
async function slowPage() {
  const context = await browser.newContext({ serviceWorkers: 'block' });
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', {
    offline: false, latency: 560, downloadThroughput: 180 * 1024, uploadThroughput: 84 * 1024,
  });
  const requests = [];
  page.on('request', (r) => requests.push(r.url()));
  return { page, context, requests };
}

test('on a slow link, Detailed says "Loading the detailed model…" with no lesson figures, then shows the detailed ones', async () => {
  const { page, context, requests } = await slowPage();
  await page.goto(server.base, { waitUntil: 'commit' });
  // The skeleton, before the light wasm has arrived: the defaults as they are.
  await page.waitForSelector('#mixed-input', { state: 'attached' });
  assert.equal(await page.isChecked('#mixed-input'), true, 'the skeleton shows mixed precision unticked');
  await page.waitForSelector('tr[data-term="total"] td.gb:not(:empty)');
  assert.equal(await page.textContent('tr[data-term="total"] td.gb'), '185.0');
  // Fetched while the reader is still on the lesson, unasked.
  await page.waitForRequest(FULL, { timeout: 10000 });
  assert.equal(await page.locator('#light-page').count(), 1, 'the full calculator was already there: nothing to test');
  await page.check('#mode-detailed');
  assert.equal(await page.isVisible('#full-loading'), true, 'no loading state');
  assert.equal(await page.textContent('#full-loading'), 'Loading the detailed model…');
  assert.equal(await page.isVisible('tr[data-term="total"] td.gb'), false, 'the lesson figures stay on screen as if detailed');
  assert.equal(await page.isVisible('#budget-chart'), false);
  // Then the detailed model itself, in detailed mode.
  await fullPage(page);
  await page.waitForSelector('#model-select', { timeout: 30000 });
  assert.equal(await page.isChecked('#mode-detailed'), true);
  assert.equal(await page.textContent('#param-count'), '6,738,415,616');
  assert.equal(await page.locator('tr[data-term="logits"]').count(), 1);
  assert.equal(await page.locator('#full-loading').count(), 0);
  assert.equal(requests.filter((u) => /\/membudget_bg\.wasm$/.test(u)).length, 1, 'the full calculator downloaded twice');
  await context.close();
});

test('on a slow link, a detailed address shows "Loading the detailed model…", not a blank page or the lesson', async () => {
  const { page, context } = await slowPage();
  await page.goto(server.base + '?mode=detailed&model=llama-3.1-8b', { waitUntil: 'domcontentloaded' });
  assert.equal(await page.isVisible('#full-loading'), true);
  assert.equal(await page.isVisible('#batch-slider'), false);
  await page.waitForSelector('#model-select', { timeout: 30000 });
  assert.equal(await page.locator('#full-loading').count(), 0);
  await context.close();
});
