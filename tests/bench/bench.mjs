// Benchmark of the release build in headless Chromium. Prints figures and
// asserts nothing about time. Run through `bash .ci/bench`.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startServer, launch, fullPage, dist } from '../e2e/harness.mjs';
import { RECORDER, inputToLastDraw, coldFirstDraw } from './outside.mjs';

const INPUTS = 600;
const LOADS = 15;
const SWEEPS = 60;

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const ms = (x) => `${x.toFixed(2)} ms`;

const server = await startServer();
const browser = await launch();
const version = browser.version();

// 0. From outside the page, beside the hand-written floor, same browser:
// input -> last drawing call on any visible canvas; cold navigation -> first
// drawing call. Marks the page sets are not used.
const floorServer = await startServer(path.join(path.dirname(fileURLToPath(import.meta.url)), 'floor'));
const outside = {};
for (const [name, url, span, height] of [
  ['floor', floorServer.base, 11, 900],
  ['lesson', server.base, 11, 900],
  // A window tall enough that the sweep is on screen beside the bar.
  ['tall', server.base, 11, 1700],
  ['embed', server.base + '?embed=1', 11, 900],
  ['detailed', server.base + '?mode=detailed&model=llama-3.1-8b', 6, 900],
]) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height } });
  await ctx.addInitScript(RECORDER);
  const p = await ctx.newPage();
  await p.goto(url);
  await p.waitForFunction(() => window.__draws && window.__draws.first);
  // The full page: measured once the full calculator has taken over from
  // the light lesson page (an embed keeps the light page).
  if (name !== 'floor' && name !== 'embed') await fullPage(p);
  await p.waitForTimeout(300);
  const times = await inputToLastDraw(p, INPUTS, span);
  await ctx.close();
  outside[name] = { input: times };
}
for (const [name, url] of [['floor', floorServer.base], ['lesson', server.base], ['embed', server.base + '?embed=1']]) {
  outside[name] = { ...outside[name], cold: await coldFirstDraw(browser, url, LOADS) };
}
floorServer.close();

// 1. Input event -> chart repainted, and -> next frame.
const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
const page = await context.newPage();
await page.goto(server.base);
await fullPage(page);
const input = await page.evaluate(async (n) => {
  const slider = document.querySelector('#batch-slider');
  const drawn = [], frame = [];
  const settle = async () => { for (let i = 0; i < 50; i++) await Promise.resolve(); };
  for (let i = 0; i < n; i++) {
    performance.clearMarks('membudget:budget-drawn');
    const t0 = performance.now();
    slider.value = String(i % 11); // batch 1, 2, 4 ... 1024, round and round
    slider.dispatchEvent(new Event('input', { bubbles: true }));
    await settle();
    const mark = performance.getEntriesByName('membudget:budget-drawn')[0];
    if (mark) drawn.push(mark.startTime - t0);
    await new Promise((r) => requestAnimationFrame(() => r()));
    frame.push(performance.now() - t0);
  }
  return { drawn, frame };
}, INPUTS);

// 1b. Detailed mode (Llama-3.1-8B, the step timeline on): input -> the
// last of the two charts (bar, step timeline) repainted.
await page.goto(server.base + '?mode=detailed&model=llama-3.1-8b');
await fullPage(page);
const detailed = await page.evaluate(async (n) => {
  const slider = document.querySelector('#batch-slider');
  const drawn = [];
  const settle = async () => { for (let i = 0; i < 50; i++) await Promise.resolve(); };
  for (let i = 0; i < n; i++) {
    performance.clearMarks();
    const t0 = performance.now();
    slider.value = String(i % 6); // batch 1 … 32, round and round
    slider.dispatchEvent(new Event('input', { bubbles: true }));
    await settle();
    const marks = ['membudget:budget-drawn', 'membudget:timeline-drawn']
      .map((m) => performance.getEntriesByName(m)[0]);
    if (marks.every(Boolean)) drawn.push(Math.max(...marks.map((m) => m.startTime)) - t0);
  }
  return drawn;
}, INPUTS);
await page.goto(server.base);
await fullPage(page);

// 2. Sweep chart: compute and draw all points.
const sweep = await page.evaluate(async (n) => {
  const times = [];
  for (let i = 0; i < n; i++) {
    performance.clearMarks();
    const radio = document.querySelector(i % 2 ? '#sweep-batch' : '#sweep-seq');
    radio.checked = true;
    radio.dispatchEvent(new Event('change', { bubbles: true }));
    for (let k = 0; k < 50; k++) await Promise.resolve();
    const start = performance.getEntriesByName('membudget:sweep-start')[0];
    const end = performance.getEntriesByName('membudget:sweep-drawn')[0];
    if (start && end) times.push(end.startTime - start.startTime);
  }
  return times;
}, SWEEPS);
await context.close();

// 3. Cold load -> first chart drawn (from navigation start).
const loads = [];
for (let i = 0; i < LOADS; i++) {
  const ctx = await browser.newContext();
  const p = await ctx.newPage();
  await p.goto(server.base);
  const t = await p.waitForFunction(() => {
    const m = performance.getEntriesByName('membudget:budget-drawn')[0];
    return m && m.startTime;
  });
  loads.push(await t.jsonValue());
  await ctx.close();
}
await browser.close();
server.close();

// 4. Bytes shipped.
const rows = [];
let totals = { raw: 0, gzip: 0, brotli: 0 };
let light = 0;
for (const name of fs.readdirSync(dist, { recursive: true }).sort()) {
  if (!fs.statSync(path.join(dist, name)).isFile()) continue;
  const bytes = fs.readFileSync(path.join(dist, name));
  const gzip = zlib.gzipSync(bytes, { level: 9 }).length;
  const brotli = zlib.brotliCompressSync(bytes, {
    params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 },
  }).length;
  rows.push([name.replace(/-[0-9a-f]{16}/, ''), bytes.length, gzip, brotli]);
  totals.raw += bytes.length; totals.gzip += gzip; totals.brotli += brotli;
  if (!/^membudget(_bg\.wasm|\.js)$/.test(name)) light += gzip;
}

const cpu = os.cpus()[0]?.model?.trim() ?? 'unknown CPU';
console.log(`membudget benchmark, ${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} x ${cpu}, Chromium ${version}`);
console.log('');
console.log('Measured from outside the page (canvas drawing calls), beside the hand-written floor:');
const f = outside.floor;
const ratio = (a, b) => `${(a / b).toFixed(1)}x`;
for (const name of ['lesson', 'tall', 'embed', 'detailed']) {
  const o = outside[name];
  console.log(`  ${name.padEnd(8)} input -> last visible chart drawn (${o.input.length}): p50 ${ms(pct(o.input, 50))}, p95 ${ms(pct(o.input, 95))}; floor p95 ${ms(pct(f.input, 95))}; ratio ${ratio(pct(o.input, 95), pct(f.input, 95))} (goal <= 3x)`);
}
for (const name of ['lesson', 'embed']) {
  const o = outside[name];
  console.log(`  ${name.padEnd(8)} cold navigation -> first chart (${o.cold.length} loads): median ${ms(pct(o.cold, 50))}; floor ${ms(pct(f.cold, 50))}; ratio ${ratio(pct(o.cold, 50), pct(f.cold, 50))} (goal <= 2x)`);
}
console.log('');
console.log('Measured from inside (the page\'s own marks):');
console.log(`input -> chart repainted (${input.drawn.length} slider inputs): p50 ${ms(pct(input.drawn, 50))}, p95 ${ms(pct(input.drawn, 95))}`);
console.log(`detailed mode, input -> bar and step timeline repainted (${detailed.length} inputs): p50 ${ms(pct(detailed, 50))}, p95 ${ms(pct(detailed, 95))}`);
console.log(`input -> next frame       (${input.frame.length} slider inputs): p50 ${ms(pct(input.frame, 50))}, p95 ${ms(pct(input.frame, 95))}`);
console.log(`cold load -> full calculator's first chart, after the light page (${loads.length} loads): median ${ms(pct(loads, 50))}, max ${ms(Math.max(...loads))}`);
console.log(`sweep chart, 11 points    (${sweep.length} redraws): p50 ${ms(pct(sweep, 50))}, p95 ${ms(pct(sweep, 95))}`);
console.log('');
console.log('file                         raw B    gzip -9 B   brotli 11 B');
for (const [name, raw, gz, br] of rows) {
  console.log(`${name.padEnd(26)} ${String(raw).padStart(8)} ${String(gz).padStart(12)} ${String(br).padStart(13)}`);
}
console.log(`${'total'.padEnd(26)} ${String(totals.raw).padStart(8)} ${String(totals.gzip).padStart(12)} ${String(totals.brotli).padStart(13)}`);
const budget = JSON.parse(fs.readFileSync(path.join(dist, '..', '.ci', 'size-budget.json'), 'utf8'));
console.log(`size budget (gzip total): ${budget.gzip_bytes_total} B`);
console.log(`light lesson page (every file but membudget.js and membudget_bg.wasm): ${light} B gzip; budget ${budget.lesson_gzip_bytes} B`);
