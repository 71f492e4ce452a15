// End-to-end quality checks: the page under its Content-Security-Policy
// talks to no other origin, passes an axe-core audit, is keyboard-operable,
// shows a banner on a panic, and stays within its size budget.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { createRequire } from 'node:module';
import { startServer, launch, openPage, fullPage, dist } from './harness.mjs';

const require = createRequire(import.meta.url);
const axeSource = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const repo = path.resolve(dist, '..');

let server, browser;
before(async () => { server = await startServer(); browser = await launch(); });
after(async () => { await browser?.close(); server?.close(); });

test('under its CSP the page requests nothing from another origin', async () => {
  const context = await browser.newContext({ acceptDownloads: true });
  await context.addInitScript(() => {
    window.__violations = [];
    document.addEventListener('securitypolicyviolation', (e) =>
      window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  const page = await context.newPage();
  const requests = [];
  page.on('request', (r) => requests.push(r.url()));
  await page.goto(server.base + '?gpu=80');
  await fullPage(page);
  const csp = await page.getAttribute('meta[http-equiv="Content-Security-Policy"]', 'content');
  assert.match(csp, /script-src 'self' 'wasm-unsafe-eval'( 'sha256-[A-Za-z0-9+/=]+')+;/);
  assert.doesNotMatch(csp, /unsafe-inline/);
  // Inline code only by hash: the boot script, the module loader and the stylesheet.
  const inline = await page.evaluate(async () => {
    const digest = async (text) => 'sha256-' + btoa(String.fromCharCode(
      ...new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)))));
    return Promise.all([...document.querySelectorAll('script:not([src]), style')]
      .map(async (e) => `${e.tagName} ${await digest(e.textContent)}`));
  });
  assert.equal(inline.length, 3, inline.join(' '));
  for (const entry of inline) {
    const [tag, hash] = entry.split(' ');
    assert.match(csp, new RegExp(`${tag === 'SCRIPT' ? 'script' : 'style'}-src [^;]*'${hash.replace(/[+/=]/g, '\\$&')}'`), entry);
  }
  // Use everything once.
  await page.focus('#batch-slider');
  await page.keyboard.press('ArrowRight');
  await page.click('#pin-baseline');
  await page.check('#unit-gib');
  await page.check('#sweep-seq');
  for (const id of ['copy-link', 'copy-embed', 'copy-markdown', 'copy-csv', 'copy-json']) await page.click(`#${id}`);
  await Promise.all([page.waitForEvent('download'), page.click('#download-chart')]);
  await page.click('#exercise-2-setup');
  await page.waitForTimeout(200);
  const origin = new URL(server.base).origin;
  const foreign = requests.filter((u) => !u.startsWith(origin) && !u.startsWith('data:') && !u.startsWith('blob:'));
  assert.deepEqual(foreign, []);
  assert.deepEqual(await page.evaluate(() => window.__violations), []);
  await context.close();
});

for (const [name, query, options] of [
  ['default', '', {}],
  ['embed', '?embed=1', { viewport: { width: 640, height: 480 } }],
  ['dark, compared, GPU', '?base=7,4,2048,4096,32,1&batch=8&gpu=80', { colorScheme: 'dark' }],
  ['detailed, lesson beside', '?mode=detailed&model=llama-3.1-8b&both=1&gpu=80', {}],
]) {
  test(`axe-core finds no serious or critical violations: ${name}`, async () => {
    // The audit script is injected, which the page's own CSP would refuse.
    const { page, context } = await openPage(browser, server.base + query, { ...options, bypassCSP: true });
    await page.addScriptTag({ content: axeSource });
    const violations = await page.evaluate(async () => {
      const result = await window.axe.run(document, { resultTypes: ['violations'] });
      return result.violations
        .filter((v) => v.impact === 'serious' || v.impact === 'critical')
        .map((v) => `${v.impact} ${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
    });
    assert.deepEqual(violations, []);
    await context.close();
  });
}

test('every control is reachable with the Tab key and has a visible focus ring', async () => {
  const { page, context } = await openPage(browser, server.base);
  const reached = new Set();
  for (let i = 0; i < 80; i++) {
    await page.keyboard.press('Tab');
    const id = await page.evaluate(() => document.activeElement?.id || document.activeElement?.textContent?.trim());
    if (id) reached.add(id);
  }
  for (const id of ['params-slider', 'params-input', 'batch-slider', 'batch-input', 'seq-slider', 'hidden-slider',
    'layers-slider', 'layers-input', 'mixed-input', 'gpu-select', 'pin-baseline',
    'exercise-1-setup', 'exercise-2-setup', 'copy-link', 'copy-markdown', 'download-chart']) {
    assert.ok(reached.has(id), `Tab never reaches #${id}`);
  }
  await page.focus('#pin-baseline');
  await page.keyboard.press('Tab');
  await page.keyboard.press('Shift+Tab');
  const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
  assert.notEqual(outline, 'none');
  // Operable too: Space on the checkbox, Enter on a button.
  await page.focus('#mixed-input');
  await page.keyboard.press('Space');
  assert.equal(await page.textContent('tr[data-term="master_weights"] td.gb'), '0.0');
  await page.focus('#pin-baseline');
  await page.keyboard.press('Enter');
  assert.equal(await page.locator('td.baseline').count(), 6);
  await context.close();
});

test('a panic shows a readable banner, not a blank page (debug build)', async () => {
  const debugDist = process.env.MEMBUDGET_DEBUG_DIST || path.join(repo, 'target', 'dist-debug');
  assert.ok(fs.existsSync(path.join(debugDist, 'index.html')), `no debug build in ${debugDist}`);
  const debugServer = await startServer(debugDist);
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(debugServer.base + '?debug_panic=1');
    const banner = await page.waitForSelector('#panic-banner');
    assert.match(await banner.textContent(),
      /^Something went wrong and the calculator stopped: .*debug_panic=1 asked for a panic.*Reload the page/s);
    assert.equal(await page.getAttribute('#panic-banner', 'role'), 'alert');
    // Without the trigger the debug build works as usual.
    await page.goto(debugServer.base + '?batch=8');
    await page.waitForSelector('tr[data-term="total"] td.gb:not(:empty):visible');
    assert.equal(await page.locator('#panic-banner').count(), 0);
  } finally {
    await context.close();
    debugServer.close();
  }
});

test('release build: a wasm that stops or fails to load leaves a banner, not a dead page', async () => {
  // A broken download: the same dist/ with its wasm replaced by garbage.
  const broken = fs.mkdtempSync(path.join(repo, 'target', 'dist-broken-'));
  fs.cpSync(dist, broken, { recursive: true });
  const wasm = fs.readdirSync(broken).find((f) => /^lesson-.*\.wasm$/.test(f));
  fs.writeFileSync(path.join(broken, wasm), Buffer.from('not a wasm module'));
  const brokenServer = await startServer(broken);
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(brokenServer.base);
    const banner = await page.waitForSelector('#panic-banner');
    assert.match(await banner.textContent(), /^Something went wrong and the calculator stopped \(.+\)\. Reload the page/);
    assert.equal(await page.getAttribute('#panic-banner', 'role'), 'alert');

    // A release panic aborts: the page sees a WebAssembly.RuntimeError, thrown
    // from an event handler (an error event) or a task (a rejection).
    for (const how of ['error', 'rejection']) {
      const { page: live, context: c } = await openPage(browser, server.base);
      assert.equal(await live.locator('#panic-banner').count(), 0);
      await live.evaluate((how) => {
        const trap = new WebAssembly.RuntimeError('unreachable');
        if (how === 'error') setTimeout(() => { throw trap; });
        else Promise.reject(trap);
      }, how);
      const text = await (await live.waitForSelector('#panic-banner')).textContent();
      assert.match(text, /stopped \(RuntimeError: unreachable\)/, how);
      await c.close();
    }
    // Other errors (not from the wasm or its loader) are not the calculator stopping.
    const { page: calm, context: c2 } = await openPage(browser, server.base);
    await calm.evaluate(() => { setTimeout(() => { throw new Error('someone else'); }); });
    await calm.waitForTimeout(100);
    assert.equal(await calm.locator('#panic-banner').count(), 0);
    await c2.close();
  } finally {
    await context.close();
    brokenServer.close();
    fs.rmSync(broken, { recursive: true, force: true });
  }
});

/** Every file of dist/ (recursively) with its raw and gzip -9 sizes. */
function shipped() {
  return fs.readdirSync(dist, { recursive: true })
    .filter((name) => fs.statSync(path.join(dist, name)).isFile())
    .map((name) => {
      const bytes = fs.readFileSync(path.join(dist, name));
      return { name, raw: bytes.length, gzip: zlib.gzipSync(bytes, { level: 9 }).length };
    });
}

test('the shipped bytes stay within the size budgets in the repo: the page, the light lesson page, and the readers loaded on first use', () => {
  const budget = JSON.parse(fs.readFileSync(path.join(repo, '.ci', 'size-budget.json'), 'utf8'));
  const files = shipped();
  const rows = files.map((f) => `${f.name} ${f.raw} B, gzip ${f.gzip} B`).join('\n');
  const sum = (list) => list.reduce((s, f) => s + f.gzip, 0);
  // The trainer-file readers: fetched only when a file is dropped or pasted.
  const readers = files.filter((f) => /^readers(_bg\.wasm|\.js)$/.test(f.name));
  assert.equal(readers.length, 2, rows);
  assert.ok(sum(readers) <= budget.readers_gzip_bytes, `the readers ship ${sum(readers)} B gzip, budget ${budget.readers_gzip_bytes} B:\n${rows}`);
  // The page: every file a visitor of the whole calculator may fetch without a file.
  const page = files.filter((f) => !readers.includes(f));
  const total = sum(page);
  assert.ok(total <= budget.gzip_bytes_total, `the page ships ${total} B gzip, budget ${budget.gzip_bytes_total} B:\n${rows}`);
  // The lesson view and embeds: the page but the full calculator's two files.
  const full = page.filter((f) => /^membudget(_bg\.wasm|\.js)$/.test(f.name));
  assert.equal(full.length, 2, rows);
  const lesson = total - sum(full);
  assert.ok(lesson <= budget.lesson_gzip_bytes, `the light page ships ${lesson} B gzip, budget ${budget.lesson_gzip_bytes} B:\n${rows}`);
});
