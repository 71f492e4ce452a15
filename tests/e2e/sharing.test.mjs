// End-to-end: deep links, embed mode, compare, GPU fit, units, exercises,
// export, and hostile links, against the built page in Chromium.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launch, openPage, figures, chart, urlMatches, urlLacks } from './harness.mjs';

let server, browser;
before(async () => { server = await startServer(); browser = await launch(); });
after(async () => { await browser?.close(); server?.close(); });

const open = (query = '', options = {}) => openPage(browser, server.base + query, options);

test('a deep link opens its configuration', async () => {
  const { page, problems, context } = await open('?params=70&batch=1&seq=4096&hidden=8192&layers=80&mixed=1');
  assert.deepEqual(await figures(page), ['140.0', '140.0', '280.0', '560.0', '182.5', '1302.5']);
  assert.equal(await page.inputValue('#params-input'), '70');
  assert.equal(await page.inputValue('#hidden-input'), '8192');
  assert.equal(await page.isVisible('#url-notices'), false);
  assert.deepEqual(problems, []);
  await context.close();
});

test('moving a slider updates the address without adding history', async () => {
  const { page, context } = await open();
  const historyBefore = await page.evaluate(() => history.length);
  await page.focus('#batch-slider');
  await page.keyboard.press('ArrowRight');
  await page.waitForFunction(() => location.search.includes('batch=8'));
  await urlMatches(page, /\?params=7&batch=8&seq=2048&hidden=4096&layers=32&mixed=1$/);
  assert.equal(await page.evaluate(() => history.length), historyBefore);
  // The copied address reopens the same view.
  const again = await open(new URL(page.url()).search);
  assert.deepEqual(await figures(again.page), ['14.0', '14.0', '28.0', '56.0', '146.0', '258.0']);
  await again.context.close();
  await context.close();
});

test('pin a baseline, change, compare; clear with one click', async () => {
  const { page, context } = await open();
  const chartBefore = await chart(page);
  await page.click('#pin-baseline');
  await page.focus('#batch-slider');
  await page.keyboard.press('ArrowRight');
  const row = 'tr[data-term="activations"]';
  assert.equal(await page.locator('td.baseline:visible, td.change:visible').count(), 12);
  assert.equal(await page.textContent(`${row} td.baseline`), '73.0');
  assert.equal(await page.textContent(`${row} td.gb`), '146.0');
  assert.equal(await page.textContent(`${row} td.change`), '+73.0');
  assert.equal(await page.textContent('tr[data-term="params"] td.change'), '0.0');
  assert.match(await page.getAttribute(row, 'class'), /largest-change/);
  await urlMatches(page, /base=7%2C4%2C2048%2C4096%2C32%2C1/);
  assert.notEqual(await chart(page), chartBefore);
  await page.click('#clear-baseline');
  // The columns and the button stay in the page, hidden (so the table keeps one shape).
  assert.equal(await page.locator('td.baseline:visible, td.change:visible, th:visible:text("Baseline")').count(), 0);
  assert.equal(await page.isVisible('#clear-baseline'), false);
  await urlLacks(page, /base=/);
  await context.close();
});

test('embed mode fits a 640x480 iframe without scrollbars', async () => {
  const { page, context } = await open('?embed=1', { viewport: { width: 640, height: 480 } });
  const dims = await page.evaluate(() => {
    const d = document.documentElement;
    return { sw: d.scrollWidth, cw: d.clientWidth, sh: d.scrollHeight, ch: d.clientHeight };
  });
  assert.ok(dims.sw <= dims.cw && dims.sh <= dims.ch, JSON.stringify(dims));
  assert.equal(await page.isVisible('h1'), false);
  assert.equal(await page.isVisible('#batch-slider'), true);
  assert.equal(await page.isVisible('.open-full'), true);
  assert.doesNotMatch(await page.getAttribute('.open-full', 'href'), /embed=1/);
  // And inside a real iframe of that size.
  const host = await browser.newContext();
  const hp = await host.newPage();
  await hp.setContent(`<iframe src="${server.base}?embed=1" width="640" height="480" style="border:0"></iframe>`);
  const frame = await (await hp.waitForSelector('iframe')).contentFrame();
  await frame.waitForSelector('tr[data-term="total"] td.gb:not(:empty):visible');
  const inFrame = await frame.evaluate(() => {
    const d = document.documentElement;
    return d.scrollHeight <= d.clientHeight && d.scrollWidth <= d.clientWidth;
  });
  assert.ok(inFrame, 'scrollbars inside the iframe');
  await host.close();
  await context.close();
});

test('GPU fit: capacity, verdict, largest batch; GiB switch converts honestly', async () => {
  const { page, context } = await open();
  assert.equal(await page.isVisible('#fit-verdict'), false, 'no verdict without a GPU');
  await page.selectOption('#gpu-select', 'p192');
  assert.equal(await page.isVisible('#gpu-custom'), false, 'custom box shown for a preset');
  assert.equal(await page.isVisible('#fit-micro'), false, 'detailed-mode line in lesson mode');
  assert.equal(await page.textContent('#fit-verdict'), 'Fits: 185.0 of 206.2 GB used, 21.1 GB to spare.');
  assert.equal(await page.textContent('#fit-batch'), 'Largest batch that fits: 5');
  assert.match(await page.textContent('#fit-seq'), /^Largest sequence length that fits: \d+$/);
  await urlMatches(page, /gpu=192gib/);
  await page.check('#unit-gib');
  assert.equal(await page.textContent('tr[data-term="total"] td.gb'), '172.3');
  assert.equal(await page.textContent('#fit-verdict'), 'Fits: 172.3 of 192.0 GiB used, 19.7 GiB to spare.');
  await page.selectOption('#gpu-select', 'p80');
  assert.match(await page.textContent('#fit-batch'), /^Largest batch that fits: none/);
  await page.selectOption('#gpu-select', 'custom');
  assert.equal(await page.isVisible('#gpu-custom'), true);
  await page.fill('#gpu-custom', '300');
  await page.press('#gpu-custom', 'Enter');
  await urlMatches(page, /gpu=300gib/);
  await context.close();
});

test('exercise links set up their comparisons and explain after trying', async () => {
  const { page, context } = await open();
  assert.doesNotMatch(await page.textContent('#exercise-1-explanation'), /either way/);
  await page.click('#exercise-1-link');
  await page.waitForSelector('td.baseline');
  assert.equal(await page.textContent('tr[data-term="master_weights"] td.baseline'), '28.0');
  assert.equal(await page.textContent('tr[data-term="master_weights"] td.gb'), '0.0');
  assert.equal(await page.textContent('tr[data-term="total"] td.change'), '0.0');
  assert.match(await page.textContent('#exercise-1-explanation'), /185\.0 GB either way/);
  await context.close();

  const bare = await open('?ex=2');
  assert.equal(await bare.page.textContent('tr[data-term="activations"] td.change'), '+73.0');
  assert.match(await bare.page.textContent('#exercise-2-explanation'), /Only activations grow/);
  await bare.context.close();
});

test('export: Markdown, CSV and JSON of the table, the chart as PNG', async () => {
  const { page, context } = await open();
  await page.click('#copy-markdown');
  assert.match(await page.inputValue('#export-text'), /\| Activations \| 73\.0 \|\n\| Total \| 185\.0 \|/);
  await page.click('#copy-csv');
  assert.match(await page.inputValue('#export-text'), /^term,bytes,gb\n/);
  await page.click('#copy-json');
  const json = JSON.parse(await page.inputValue('#export-text'));
  assert.equal(json.bytes.activations, 73014444032);
  assert.equal(json.gb.total, 185.014444032);
  await page.click('#copy-embed');
  assert.match(await page.inputValue('#export-text'), /^<iframe src="http:\/\/127\.0\.0\.1:\d+\/course\/membudget\/\?params=7&amp;.*embed=1"/);
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download-chart')]);
  assert.equal(download.suggestedFilename(), 'membudget-chart.png');
  await context.close();
});

test('the sweep switches to sequence length and redraws', async () => {
  const { page, context } = await open();
  const before = await page.evaluate(() => document.querySelector('#sweep-chart').toDataURL());
  await page.check('#sweep-seq');
  await urlMatches(page, /sweep=seq/);
  assert.equal(await page.textContent('#sweep-title'), 'How the budget grows with sequence length');
  assert.notEqual(await page.evaluate(() => document.querySelector('#sweep-chart').toDataURL()), before);
  await context.close();
});

test('a hostile link loads with a message, runs no script and shows no NaN', async () => {
  const query = '?batch=abc&params=%3Cscript%3Ewindow.pwned%3D1%3C%2Fscript%3E&seq=NaN&hidden=1e999'
    + '&layers=-1&gpu=&mixed=javascript:alert(1)&unit=%3Cimg%20src%3Dx%20onerror%3Dwindow.pwned%3D1%3E';
  const { page, context } = await open(query);
  let dialogs = 0;
  page.on('dialog', (d) => { dialogs += 1; d.dismiss(); });
  assert.deepEqual(await figures(page), ['14.0', '14.0', '28.0', '56.0', '73.0', '185.0']);
  const notice = await page.textContent('#url-notices');
  for (const key of ['batch: ', 'params: ', 'seq: ', 'hidden: ', 'layers: ', 'gpu: ', 'mixed: ', 'unit: ']) {
    assert.ok(notice.includes(key), `notice lacks ${key}`);
  }
  assert.ok(!notice.includes('<script>') && !notice.includes('javascript:'), 'raw values echoed');
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  assert.equal(await page.locator('#url-notices script, #url-notices img').count(), 0);
  assert.equal(dialogs, 0);
  assert.ok(!(await page.innerText('body')).includes('NaN'));
  await page.click('#url-notices button');
  assert.equal(await page.isVisible('#url-notices'), false);
  await context.close();
});

/** Pixels of each term's own colour in the sweep chart: only the marked
 * (current) bar is drawn in full colour, the others faded. */
const sweepTermPixels = (page) => page.evaluate(() => {
  const c = document.querySelector('#sweep-chart');
  const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  const colours = { params: [0x00, 0x72, 0xB2], grads: [0x56, 0xB4, 0xE9], master: [0x00, 0x9E, 0x73],
    optimizer: [0xE6, 0x9F, 0x00], activations: [0xD5, 0x5E, 0x00] };
  const counts = Object.fromEntries(Object.keys(colours).map((k) => [k, 0]));
  for (let i = 0; i < px.length; i += 4) {
    for (const [k, [r, g, b]] of Object.entries(colours)) {
      if (px[i] === r && px[i + 1] === g && px[i + 2] === b) counts[k]++;
    }
  }
  return counts;
});

test('the sweep draws each setting to 100 %: at batch 8 the activations are 57 % of the current bar', async () => {
  const { page, context } = await open('?batch=8', { viewport: { width: 1280, height: 1700 } });
  await page.locator('#sweep-chart').scrollIntoViewIfNeeded();
  await page.waitForFunction(() => document.querySelector('#sweep-chart').width > 200);
  const share = async () => {
    const n = await sweepTermPixels(page);
    const all = Object.values(n).reduce((a, b) => a + b, 0);
    return { acts: n.activations / all, params: n.params / all };
  };
  // 146 of 258 GB; the parameters 14 of 258.
  const at8 = await share();
  assert.ok(Math.abs(at8.acts - 146 / 258) < 0.03, JSON.stringify(at8));
  assert.ok(Math.abs(at8.params - 14 / 258) < 0.02, JSON.stringify(at8));
  assert.match(await page.textContent('.sweep .derived'), /share/);
  // Two notches up (batch 32): the activations' share grows to 84 %.
  await page.focus('#batch-slider');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  assert.equal(await page.inputValue('#batch-input'), '32');
  const at32 = await share();
  assert.ok(Math.abs(at32.acts - 584.1 / 696.1) < 0.03, JSON.stringify(at32));
  await context.close();
});

test('an embedded exercise shows its question and, set up, its answer folded, within 640x480', async () => {
  const { page, context } = await open('?embed=1&ex=2', { viewport: { width: 640, height: 480 } });
  await page.waitForSelector('#embed-exercise');
  assert.match(await page.textContent('#embed-exercise .question'), /^Exercise 2: Raise the batch size/);
  // The answer is folded until asked for.
  assert.equal(await page.isVisible('#embed-exercise .explanation summary'), true);
  assert.match(await page.textContent('#embed-exercise .explanation'), /Only activations grow/);
  // The comparison it sets up is on screen too.
  assert.match(await page.textContent('tr[data-term="activations"]'), /\+/);
  const dims = await page.evaluate(() => {
    const d = document.documentElement;
    return { sw: d.scrollWidth, cw: d.clientWidth, sh: d.scrollHeight, ch: d.clientHeight };
  });
  assert.ok(dims.sw <= dims.cw && dims.sh <= dims.ch, JSON.stringify(dims));
  // Not in a plain embed, nor on the full page.
  for (const q of ['?embed=1', '?ex=2']) {
    const { page: p, context: c } = await open(q);
    assert.equal(await p.locator('#embed-exercise').count(), 0, q);
    await c.close();
  }
  await context.close();
});

test('at 360 px the comparison fits: bars, labels and every table column in the screen', async () => {
  const { page, context } = await open('', { viewport: { width: 360, height: 800 } });
  await page.click('#pin-baseline');
  await page.focus('#batch-slider');
  await page.keyboard.press('ArrowRight');
  await page.waitForFunction(() => document.querySelectorAll('table.budget th, table.budget td').length > 20);
  const out = await page.evaluate(() => {
    const d = document.documentElement;
    const cut = [...document.querySelectorAll('table.budget th, table.budget td, canvas')]
      .filter((e) => e.offsetParent && e.getBoundingClientRect().right > d.clientWidth + 0.5)
      .map((e) => `${e.tagName}.${e.className}: ${Math.round(e.getBoundingClientRect().right)}`);
    return { sw: d.scrollWidth, cw: d.clientWidth, cut };
  });
  assert.ok(out.sw <= out.cw, `page is ${out.sw}px wide in a ${out.cw}px screen`);
  assert.deepEqual(out.cut, []);
  await context.close();
});
