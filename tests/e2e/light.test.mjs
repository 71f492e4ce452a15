// The light lesson page (src/light.rs): what an embed and a first visit
// load before their first chart, and its hand-over to the full calculator.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { startServer, launch, openPage, fullPage, figures, chart, dist } from './harness.mjs';
import { RECORDER } from '../bench/outside.mjs';

const repo = path.resolve(dist, '..');
const budget = JSON.parse(fs.readFileSync(path.join(repo, '.ci', 'size-budget.json'), 'utf8'));
const FULL = /\/membudget(_bg\.wasm|\.js)$/;

let server, browser;
before(async () => { server = await startServer(); browser = await launch(); });
after(async () => { await browser?.close(); server?.close(); });

/** gzip -9 bytes of the dist/ file a URL of the test server names. */
const gzipOf = (url) => {
  const rel = decodeURIComponent(new URL(url).pathname).replace(/^.*?\/membudget\//, '') || 'index.html';
  return zlib.gzipSync(fs.readFileSync(path.join(dist, rel)), { level: 9 }).length;
};

/** Opens `query` with the canvas recorder; returns the page, every request
 *  URL, and the gzip bytes of the files requested before the first chart. */
async function firstChart(query, options = {}) {
  const context = await browser.newContext(options);
  await context.addInitScript(RECORDER);
  const page = await context.newPage();
  const requests = [];
  page.on('request', (r) => requests.push(r.url()));
  await page.goto(server.base + query);
  await page.waitForFunction(() => window.__draws && window.__draws.first);
  const before = await page.evaluate(() => [location.href,
    ...performance.getEntriesByType('resource')
      .filter((e) => e.startTime <= window.__draws.first).map((e) => e.name)]);
  const bytes = before.reduce((sum, url) => sum + gzipOf(url), 0);
  return { page, context, requests, before, bytes };
}

test('an embed ships only the light page: within the lesson budget before its first chart, never the full calculator', async () => {
  const { page, context, requests, before, bytes } = await firstChart('?embed=1', { viewport: { width: 640, height: 480 } });
  assert.ok(bytes <= budget.lesson_gzip_bytes, `${bytes} B gzip before the first chart (budget ${budget.lesson_gzip_bytes} B): ${before.join(' ')}`);
  assert.ok(before.some((u) => /\/lesson-[0-9a-f]+_bg\.wasm$/.test(u)), 'the light wasm drew the chart');
  // A slider moves the number and the chart, on the light page.
  const shot = await chart(page);
  await page.focus('#batch-slider');
  await page.keyboard.press('ArrowRight');
  assert.equal(await page.inputValue('#batch-input'), '8');
  assert.deepEqual(await figures(page), ['14.0', '14.0', '28.0', '56.0', '146.0', '258.0']);
  assert.notEqual(await chart(page), shot, 'the chart did not change');
  assert.match(await page.getAttribute('.open-full', 'href'), /batch=8/);
  await page.waitForTimeout(500);
  assert.equal(await page.locator('#light-page').count(), 1);
  assert.deepEqual(requests.filter((u) => FULL.test(u)), [], 'the embed loaded the full calculator');
  await context.close();
});

test('the light page refuses or clamps typed values and says so, like the full page', async () => {
  const { page, context } = await openPage(browser, server.base + '?embed=1', { viewport: { width: 640, height: 480 } });
  await page.fill('#batch-input', '0');
  await page.press('#batch-input', 'Enter');
  assert.equal(await page.textContent('#batch-message'), 'Batch size must be at least 1 (got 0); using 1.');
  assert.equal(await page.inputValue('#batch-input'), '1');
  await page.fill('#layers-input', '');
  await page.press('#layers-input', 'Enter');
  assert.match(await page.textContent('#layers-message'), /; kept 32\.$/);
  assert.equal(await page.inputValue('#layers-input'), '32');
  await page.uncheck('#mixed-input');
  assert.equal(await page.textContent('tr[data-term="master_weights"] td.gb'), '0.0');
  assert.equal(await page.textContent('tr[data-term="params"] td.gb'), '28.0');
  await context.close();
});

test('a first visit draws from the light page, then the full calculator takes over, keeping state and focus', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, serviceWorkers: 'block' });
  await context.addInitScript(RECORDER);
  const page = await context.newPage();
  // Hold the full calculator back until the test lets it go.
  let release;
  const held = new Promise((r) => { release = r; });
  await page.route(/\/membudget\.js$/, async (route) => { await held; await route.continue(); });
  await page.goto(server.base);
  await page.waitForFunction(() => window.__draws && window.__draws.first);
  assert.equal(await page.locator('#light-page').count(), 1);
  await page.focus('#batch-slider');
  await page.keyboard.press('ArrowRight');
  assert.equal(await page.inputValue('#batch-input'), '8');
  // A pointer held down (a drag under way) keeps the light page in place.
  const box = await page.locator('#layers-slider').boundingBox();
  await page.mouse.move(box.x + 2, box.y + box.height / 2);
  await page.mouse.down();
  release();
  await page.waitForResponse(/\/membudget_bg\.wasm$/);
  await page.waitForTimeout(400);
  assert.equal(await page.locator('#light-page').count(), 1, 'took over during a drag');
  await page.mouse.up();
  await fullPage(page);
  assert.equal(await page.locator('main').count(), 1);
  assert.equal(await page.inputValue('#batch-input'), '8');
  assert.equal(await page.inputValue('#layers-input'), '1');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'layers-slider');
  assert.equal(await page.isVisible('#sweep-chart'), true);
  await page.keyboard.press('ArrowRight');
  assert.equal(await page.inputValue('#layers-input'), '2');
  await context.close();
});

test('the hand-over waits while a number box is being typed in', async () => {
  const context = await browser.newContext({ serviceWorkers: 'block' });
  const page = await context.newPage();
  let release;
  const held = new Promise((r) => { release = r; });
  await page.route(/\/membudget\.js$/, async (route) => { await held; await route.continue(); });
  await page.goto(server.base);
  await page.waitForSelector('tr[data-term="total"] td.gb:not(:empty)');
  await page.click('#batch-input');
  await page.keyboard.press('Control+A');
  await page.keyboard.type('1');
  release();
  await page.waitForResponse(/\/membudget_bg\.wasm$/);
  await page.waitForTimeout(400);
  assert.equal(await page.locator('#light-page').count(), 1, 'took over while typing');
  await page.keyboard.type('6');
  await page.keyboard.press('Tab');
  await fullPage(page);
  assert.equal(await page.inputValue('#batch-input'), '16');
  assert.equal(await page.textContent('tr[data-term="total"] td.gb'), '404.1');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'seq-slider');
  await context.close();
});

test('a first visit ships at most the lesson budget before its first chart too', async () => {
  const { context, before, bytes } = await firstChart('');
  assert.ok(bytes <= budget.lesson_gzip_bytes, `${bytes} B gzip before the first chart: ${before.join(' ')}`);
  assert.deepEqual(before.filter((u) => FULL.test(u)), []);
  await context.close();
});

test('an address the light page cannot show opens the full calculator at once', async () => {
  for (const [query, check] of [
    ['?mode=detailed&model=llama-3.1-8b', '#model-select'],
    ['?base=7,4,2048,4096,32,1&batch=8', 'td.baseline:visible'],
    ['?embed=1&mode=detailed', '#budget-chart'],
  ]) {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(server.base + query);
    await page.waitForSelector(check);
    await page.waitForSelector('#budget-chart');
    assert.equal(await page.locator('#light-page').count(), 0, query);
    assert.equal(await page.locator('main').count(), 1, query);
    await context.close();
  }
  // A value it cannot use is reported by the full page, which says so.
  const { page, context } = await openPage(browser, server.base + '?batch=0');
  assert.match(await page.textContent('body'), /batch: Batch size must be at least 1/);
  await context.close();
});

test('if the full calculator cannot load, the lesson view keeps working and says so', async () => {
  // (Blocking the service worker, so that the page's own route sees the request.)
  const context = await browser.newContext({ serviceWorkers: 'block' });
  const page = await context.newPage();
  await page.route(/\/membudget_bg\.wasm$/, (route) => route.abort());
  await page.goto(server.base);
  const banner = await page.waitForSelector('#panic-banner');
  assert.match(await banner.textContent(), /^The full calculator could not be loaded \(.*\); the lesson's view still works\.$/);
  await page.focus('#batch-slider');
  await page.keyboard.press('ArrowRight');
  assert.equal(await page.textContent('tr[data-term="total"] td.gb'), '258.0');
  await context.close();
});

test('without JavaScript the page shows the lesson\'s figures in words, not dead controls', async () => {
  const context = await browser.newContext({ javaScriptEnabled: false });
  const page = await context.newPage();
  await page.goto(server.base);
  assert.equal(await page.isVisible('#light-page'), false);
  assert.match(await page.textContent('body'), /the budget is 14\.0 \+ 14\.0 \+ 28\.0 \+ 56\.0 \+ 73\.0 = 185\.0 GB/);
  await context.close();
});

test('before the wasm runs, the static markup is already laid out for the address: compact in an embed, a loading state for a detailed one', async () => {
  for (const [query, check] of [
    ['?embed=1', async (page) => {
      assert.equal(await page.isVisible('#light-page'), true);
      assert.equal(await page.isVisible('h1'), false, 'the embed shows the page header');
      assert.match(await page.evaluate(() => getComputedStyle(document.querySelector('.layout')).gridTemplateColumns), /^230px /);
    }],
    ['', async (page) => {
      assert.equal(await page.isVisible('h1'), true);
      assert.equal(await page.isVisible('#batch-slider'), true);
      assert.equal(await page.isChecked('#mixed-input'), true, 'the skeleton shows the default unticked');
      assert.equal(await page.isVisible('#full-loading'), false);
    }],
    ['?mode=detailed', async (page) => {
      assert.equal(await page.isVisible('#batch-slider'), false, 'a lesson skeleton under a detailed address');
      assert.equal(await page.isVisible('#full-loading'), true, 'no loading state');
    }],
  ]) {
    const context = await browser.newContext({ viewport: { width: 640, height: 480 }, serviceWorkers: 'block' });
    const page = await context.newPage();
    // The light wasm never arrives: what shows is the markup and the inline styles alone.
    await page.route(/\/lesson-[0-9a-f]+_bg\.wasm$/, () => {});
    await page.goto(server.base + query, { waitUntil: 'domcontentloaded' });
    await check(page);
    await context.close();
  }
});

test('the lesson shows why the master copy is fp32 (computed), and notes rounded figures that do not add up, on both pages', async () => {
  for (const light of [true, false]) {
    // 0.125 B parameters: 0.25 + 0.25 + 0.5 + 1.0 + 73.0 = 75.0 shown to one decimal.
    const { page, context } = await openPage(browser, server.base + '?params=0.125', { light });
    assert.equal(await page.textContent('#master-why pre'), 'fp32: 1.0 + 0.0001 = 1.0001\nbf16: 1.0 + 0.0001 = 1.0000');
    assert.match(await page.textContent('#master-why figcaption'), /2⁻⁷ = 0\.0078 apart.*Micikevicius et al\. 2018, §3\.1/);
    const shown = await figures(page);
    const tenths = (s) => Math.round(Number(s) * 10);
    const sum = shown.slice(0, 5).reduce((a, s) => a + tenths(s), 0);
    assert.notEqual(sum, tenths(shown[5]), `${shown}: the case adds up, nothing to test`);
    assert.equal(await page.textContent('#rounding-note'), '(rounded; the sum is of the exact figures)');
    await context.close();
  }
  const { page, context } = await openPage(browser, server.base, { light: true });
  assert.deepEqual(await figures(page), ['14.0', '14.0', '28.0', '56.0', '73.0', '185.0']);
  assert.equal(await page.textContent('#rounding-note'), '');
  await context.close();
});
