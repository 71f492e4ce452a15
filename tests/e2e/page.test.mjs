// End-to-end: the Trunk-built page (dist/) served from a sub-path and driven
// in Debian's Chromium like a person would: keys and drags the batch slider,
// unticks mixed precision, types a bad value. Run: node --test tests/e2e/
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const dist = process.env.MEMBUDGET_DIST || path.join(root, 'dist');
const prefix = '/course/membudget/';
const types = {
  '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm',
  '.css': 'text/css', '.svg': 'image/svg+xml',
};
const chromiumArgs = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

let server, browser, base;

before(async () => {
  assert.ok(fs.existsSync(path.join(dist, 'index.html')), `no build in ${dist}: run trunk build --release`);
  // A static server that only knows dist/ under a sub-path, as a course site would host it.
  server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    if (!url.pathname.startsWith(prefix)) { res.writeHead(404).end(); return; }
    let file = path.join(dist, decodeURIComponent(url.pathname.slice(prefix.length)) || 'index.html');
    if (!file.startsWith(dist) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
      file = path.join(dist, 'index.html');
    }
    res.writeHead(200, { 'content-type': types[path.extname(file)] || 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  base = `http://127.0.0.1:${server.address().port}${prefix}`;
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: chromiumArgs,
  });
});

after(async () => {
  await browser?.close();
  server?.close();
});

/** Opens the page; collects console errors and failed requests. */
async function open(options = {}) {
  const context = await browser.newContext(options);
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('requestfailed', (r) => problems.push(`requestfailed: ${r.url()}`));
  await page.goto(base);
  await page.waitForSelector('tr[data-term="total"] td.gb:not(:empty)');
  return { page, problems, context };
}

const terms = ['params', 'grads', 'master_weights', 'optimizer_state', 'activations', 'total'];
const figures = (page) => page.evaluate((terms) =>
  terms.map((t) => document.querySelector(`tr[data-term="${t}"] td.gb`).textContent), terms);
const chart = (page) => page.evaluate(() => document.querySelector('#budget-chart').toDataURL());

test('opens on the lesson example from a sub-path, with no errors', async () => {
  const { page, problems, context } = await open();
  assert.deepEqual(await figures(page), ['14.0', '14.0', '28.0', '56.0', '73.0', '185.0']);
  assert.equal(await page.textContent('.dominant-sentence'), 'Activations dominate: 73.0 of 185.0 GB, 39 %');
  for (const label of ['Model size', 'Batch size', 'Sequence length', 'Hidden size', 'Layers', 'Mixed precision']) {
    assert.ok(await page.getByLabel(label, { exact: true }).count() >= 1, `no control labelled ${label}`);
  }
  assert.deepEqual(problems, []);
  await context.close();
});

test('keying and dragging the batch slider grows only activations and repaints the chart', async () => {
  const { page, problems, context } = await open();
  const before = await chart(page);
  await page.focus('#batch-slider');
  await page.keyboard.press('ArrowRight'); // one notch: batch 4 -> 8
  assert.equal(await page.inputValue('#batch-input'), '8');
  assert.deepEqual(await figures(page), ['14.0', '14.0', '28.0', '56.0', '146.0', '258.0']);
  const afterKey = await chart(page);
  assert.notEqual(afterKey, before, 'canvas pixels did not change');

  // Drag the thumb to the right end: batch 1024.
  const box = await page.locator('#batch-slider').boundingBox();
  const thumbX = box.x + box.width * (3 / 10);
  await page.mouse.move(thumbX, box.y + box.height / 2);
  await page.mouse.down();
  for (let i = 1; i <= 10; i++) {
    await page.mouse.move(thumbX + (box.x + box.width + 20 - thumbX) * (i / 10), box.y + box.height / 2);
  }
  await page.mouse.up();
  assert.equal(await page.inputValue('#batch-input'), '1024');
  const [p, g, m, o, a] = await figures(page);
  assert.deepEqual([p, g, m, o], ['14.0', '14.0', '28.0', '56.0']);
  assert.equal(a, '18691.7');
  assert.notEqual(await chart(page), afterKey);
  assert.deepEqual(problems, []);
  await context.close();
});

test('unticking Mixed precision empties master weights, total unchanged', async () => {
  const { page, context } = await open();
  await page.getByLabel('Mixed precision').uncheck();
  assert.deepEqual(await figures(page), ['28.0', '28.0', '0.0', '56.0', '73.0', '185.0']);
  assert.match(await page.textContent('tr[data-term="master_weights"] .why'), /none/);
  await context.close();
});

test('a typed out-of-range value is clamped with a message that stays; never NaN', async () => {
  const { page, context } = await open();
  await page.fill('#seq-input', '5');
  await page.press('#seq-input', 'Enter');
  assert.equal(await page.inputValue('#seq-input'), '128');
  assert.equal(await page.textContent('#seq-message'), 'Sequence length must be at least 128 (got 5); using 128.');
  await page.waitForTimeout(300);
  assert.ok(await page.isVisible('#seq-message'));
  await page.fill('#params-input', '0.124');
  await page.press('#params-input', 'Tab');
  assert.equal(await page.inputValue('#params-input'), '0.124');
  assert.ok(!(await page.innerText('body')).includes('NaN'));
  await context.close();
});

test('the chart is crisp on a high-DPI screen', async () => {
  const { page, context } = await open({ deviceScaleFactor: 2 });
  const [w, cw] = await page.evaluate(() => {
    const c = document.querySelector('#budget-chart');
    return [c.width, c.clientWidth];
  });
  assert.equal(w, 2 * cw);
  await context.close();
});

test('fits a 360 px phone screen without sideways scrolling', async () => {
  const { page, context } = await open({ viewport: { width: 360, height: 800 } });
  const [scroll, client] = await page.evaluate(() =>
    [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
  assert.ok(scroll <= client, `page is ${scroll}px wide in a ${client}px screen`);
  await context.close();
});
