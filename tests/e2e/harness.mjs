// Shared by the end-to-end tests: serve dist/ under a sub-path, as a course
// site would host it, and drive Debian's Chromium with playwright-core.
import assert from 'node:assert/strict';
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const dist = process.env.MEMBUDGET_DIST || path.join(root, 'dist');
const prefix = '/course/membudget/';
const types = {
  '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm',
  '.css': 'text/css', '.svg': 'image/svg+xml',
};

/** Starts a static server for `dir` (dist/ by default) at a sub-path;
 *  `base` is its address. Every response carries `headers`. */
export async function startServer(dir = dist, headers = {}) {
  assert.ok(fs.existsSync(path.join(dir, 'index.html')), `no build in ${dir}: run trunk build --release`);
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    if (!url.pathname.startsWith(prefix)) { res.writeHead(404).end(); return; }
    let file = path.join(dir, decodeURIComponent(url.pathname.slice(prefix.length)) || 'index.html');
    if (!file.startsWith(dir) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
      file = path.join(dir, 'index.html');
    }
    res.writeHead(200, { 'content-type': types[path.extname(file)] || 'application/octet-stream', ...headers });
    fs.createReadStream(file).pipe(res);
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  server.base = `http://127.0.0.1:${server.address().port}${prefix}`;
  return server;
}

/** Launches headless Chromium, kept off the closed network. */
export function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
}

/** Opens `url` in a fresh context once the table is filled; collects page
 *  errors, console errors and failed requests in `problems`. Outside an
 *  embed, also waits until the full calculator has taken over from the
 *  light lesson page (`light: true` in `options` does not wait). */
export async function openPage(browser, url, options = {}) {
  const { light = false, ...contextOptions } = options;
  const context = await browser.newContext(contextOptions);
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('requestfailed', (r) => problems.push(`requestfailed: ${r.url()}`));
  await page.goto(url);
  await page.waitForSelector('tr[data-term="total"] td.gb:not(:empty):visible');
  if (!light && !/[?&]embed=1/.test(url)) await fullPage(page);
  return { page, problems, context };
}

/** Waits until the full calculator has replaced the light lesson page. */
export async function fullPage(page) {
  await page.waitForFunction(() => !document.getElementById('light-page') && document.querySelector('main.membudget'));
}

/** Waits until the address matches `re` (the page writes it once the state
 *  has rested for 250 ms); fails after 2 s. */
export async function urlMatches(page, re) {
  await page.waitForFunction((src) => new RegExp(src).test(location.href), re.source, { timeout: 2000 });
}

/** Waits until the address no longer matches `re`. */
export async function urlLacks(page, re) {
  await page.waitForFunction((src) => !new RegExp(src).test(location.href), re.source, { timeout: 2000 });
}

const terms = ['params', 'grads', 'master_weights', 'optimizer_state', 'activations', 'total'];

/** The table's current figures, Parameters … Total. */
export const figures = (page) => page.evaluate((terms) =>
  terms.map((t) => document.querySelector(`tr[data-term="${t}"] td.gb`).textContent), terms);

/** The main chart's pixels as a data URL. */
export const chart = (page) => page.evaluate(() => document.querySelector('#budget-chart').toDataURL());
