// End-to-end: the Trunk-built page (dist/) served from a sub-path and driven
// in Debian's Chromium like a person would: keys and drags the batch slider,
// unticks mixed precision, types a bad value. Run: node --test tests/e2e/
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launch, openPage, fullPage, figures, chart } from './harness.mjs';

let server, browser;
before(async () => { server = await startServer(); browser = await launch(); });
after(async () => { await browser?.close(); server?.close(); });

const open = (options = {}) => openPage(browser, server.base, options);

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
  await page.fill('#seq-input', '0');
  await page.press('#seq-input', 'Enter');
  assert.equal(await page.inputValue('#seq-input'), '1');
  assert.equal(await page.textContent('#seq-message'), 'Sequence length must be at least 1 (got 0); using 1.');
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

test('fits a 360 px phone screen without sideways scrolling, lesson and detailed', async () => {
  const { page, context } = await open({ viewport: { width: 360, height: 800 } });
  for (const mode of ['lesson', 'detailed']) {
    await page.check(`#mode-${mode}`);
    if (mode === 'detailed') await page.check('#both-input');
    const [scroll, client] = await page.evaluate(() =>
      [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
    assert.ok(scroll <= client, `${mode}: page is ${scroll}px wide in a ${client}px screen`);
  }
  await context.close();
});

test('after one visit the page works offline (service worker)', async () => {
  const { page, context } = await open();
  await page.evaluate(() => navigator.serviceWorker.ready);
  // Load once under the worker's control so it caches every file.
  await page.reload();
  await fullPage(page);
  assert.ok(await page.evaluate(() => !!navigator.serviceWorker.controller), 'not controlled');
  await context.setOffline(true);
  await page.goto(server.base + '?batch=8');
  await page.waitForSelector('tr[data-term="total"] td.gb:not(:empty):visible');
  assert.deepEqual(await figures(page), ['14.0', '14.0', '28.0', '56.0', '146.0', '258.0']);
  await context.close();
});

test('on a 360 px phone the chart stays in view while a slider below it is dragged', async () => {
  const { page, context } = await open({ viewport: { width: 360, height: 740 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  const inView = async () => {
    const box = await page.locator('#budget-chart').boundingBox();
    return box && box.y >= -1 && box.y + box.height <= 741 && box.height >= 150;
  };
  assert.ok(await inView(), 'chart in view on load');
  // The layers slider is the last of the sliders: scroll it into view and drag it.
  const slider = page.locator('#layers-slider');
  await slider.scrollIntoViewIfNeeded();
  const before = await chart(page);
  const box = await slider.boundingBox();
  assert.ok(box.y > 250, `the slider sits below the chart (${box.y})`);
  await page.mouse.move(box.x + box.width * 0.2, box.y + box.height / 2);
  await page.mouse.down();
  for (let i = 1; i <= 5; i++) {
    await page.mouse.move(box.x + box.width * (0.2 + 0.12 * i), box.y + box.height / 2);
    assert.ok(await inView(), `chart in view while dragging (step ${i})`);
  }
  await page.mouse.up();
  assert.notEqual(await page.inputValue('#layers-input'), '32');
  assert.notEqual(await chart(page), before, 'the chart changed');
  assert.ok(await inView(), 'chart in view after the drag');
  // Scrolled further, to the table, the chart is still on screen.
  await page.locator('tr[data-term="total"]').first().scrollIntoViewIfNeeded();
  assert.ok(await inView(), 'chart in view beside the table');
  await context.close();
});

test('a slider input draws every chart on screen once, in the input\'s own task, before the text changes', async () => {
  for (const [url, charts] of [['', ['budget-chart', 'sweep-chart']], ['?mode=detailed&model=llama-3.1-8b', ['budget-chart', 'timeline-chart']]]) {
    // Opened at its address (navigating away from the lesson page could
    // cancel that page's favicon request, a failed request of our own).
    const { page, problems, context } = await openPage(browser, server.base + url, { viewport: { width: 1280, height: 1700 } });
    const seen = await page.evaluate(async () => {
      const proto = CanvasRenderingContext2D.prototype;
      const fill = proto.fillRect;
      let drawn = new Map();
      // A chart's drawing starts by filling its background.
      proto.fillRect = function (...a) {
        const id = this.canvas.id;
        if (a[0] === 0 && a[1] === 0) drawn.set(id, (drawn.get(id) || 0) + 1);
        return fill.apply(this, a);
      };
      const total = () => document.querySelector('tr[data-term="total"] td.gb:not(:empty)')?.textContent
        ?? document.querySelector('#detailed-sentence').textContent;
      const slider = document.querySelector('#batch-slider');
      const out = [];
      for (let i = 0; i < 4; i++) {
        await new Promise((r) => setTimeout(r, 20));
        drawn = new Map();
        const text = total();
        slider.value = String(Number(slider.value) + 1);
        slider.dispatchEvent(new Event('input', { bubbles: true }));
        // Still in the input's task: the charts are drawn, the text not yet updated.
        out.push({ drawn: Object.fromEntries(drawn), textUnchanged: total() === text });
        await new Promise((r) => setTimeout(r, 0));
        out.at(-1).textChanged = total() !== text;
        out.at(-1).drawnAfter = Object.fromEntries(drawn);
      }
      proto.fillRect = fill;
      return out;
    });
    for (const s of seen) {
      for (const id of charts) {
        assert.equal(s.drawn[id], 1, `${url || 'lesson'}: ${id} drawn once in the input's task: ${JSON.stringify(s)}`);
        assert.equal(s.drawnAfter[id], 1, `${url || 'lesson'}: ${id} not drawn again after it: ${JSON.stringify(s)}`);
      }
      assert.ok(s.textUnchanged && s.textChanged, `${url || 'lesson'}: the text follows in a later task: ${JSON.stringify(s)}`);
    }
    assert.deepEqual(problems, []);
    await context.close();
  }
});

test('while idle after loading, the charts are rehearsed unchanged, and no more once a reader moves a slider', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1700 } });
  // Counts each chart's drawings (one background fill each) from the start.
  await context.addInitScript(() => {
    const proto = CanvasRenderingContext2D.prototype;
    const fill = proto.fillRect;
    window.__fills = {};
    proto.fillRect = function (...a) {
      if (a[0] === 0 && a[1] === 0) window.__fills[this.canvas.id] = (window.__fills[this.canvas.id] || 0) + 1;
      return fill.apply(this, a);
    };
  });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(e.message));
  await page.goto(server.base + '?mode=detailed&model=llama-3.1-8b');
  await fullPage(page);
  const pixels = () => page.evaluate(() => ['budget-chart', 'timeline-chart'].map((id) => document.getElementById(id).toDataURL()));
  const first = await pixels();
  await page.waitForTimeout(1500);
  assert.deepEqual(await pixels(), first, 'rehearsals change no pixel');
  // The first input ends them: one drawing per chart per input from then on
  // (counted and moved in one task, so that no rehearsal comes between).
  const rested = await page.evaluate(() => {
    const counted = { ...window.__fills };
    const slider = document.querySelector('#batch-slider');
    slider.value = String(Number(slider.value) + 1);
    slider.dispatchEvent(new Event('input', { bubbles: true }));
    return counted;
  });
  for (const id of ['budget-chart', 'timeline-chart']) {
    assert.ok(rested[id] > 20, `${id} rehearsed: ${JSON.stringify(rested)}`);
  }
  await page.waitForTimeout(1000);
  const after = await page.evaluate(() => ({ ...window.__fills }));
  for (const id of ['budget-chart', 'timeline-chart']) {
    assert.equal(after[id], rested[id] + 1, `${id}: ${JSON.stringify({ rested, after })}`);
  }
  assert.deepEqual(problems, []);
  await context.close();
});
