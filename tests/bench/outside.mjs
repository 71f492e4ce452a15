// Measures from outside the page what a reader waits for: the harness wraps
// the canvas 2D context's drawing calls in an init script (before any page
// script runs) and records when each canvas last drew. No marks the page
// sets are used. Shared by bench.mjs for membudget and the floor page.

/** Installed in every page before its scripts: records, per canvas id, the
 *  time of its first and last drawing call, and when the frame after the
 *  first drawing call began (`frame`). */
export const RECORDER = () => {
  const seen = (window.__draws = { first: null, last: new Map() });
  const proto = CanvasRenderingContext2D.prototype;
  for (const name of ['fillRect', 'fillText', 'fill', 'stroke', 'strokeRect', 'drawImage', 'putImageData']) {
    const original = proto[name];
    proto[name] = function (...args) {
      const t = performance.now();
      if (seen.first === null) {
        seen.first = t;
        // The frame that shows it starts once the task that drew it (and
        // whatever else that task does) has finished.
        requestAnimationFrame(() => { seen.frame = performance.now(); });
      }
      seen.last.set(this.canvas.id || '?', t);
      return original.apply(this, args);
    };
  }
};

/** Installed beside [`RECORDER`] on the pages with the lesson's table:
 *  records when the frame after the table's total was first written began
 *  (`figures`): the chart and every figure on screen. */
export const FIGURES = () => {
  const seen = (window.__figures = { at: null });
  new MutationObserver((_, observer) => {
    const total = document.querySelector('tr[data-term="total"] td.gb');
    if (seen.at === null && total && total.textContent.trim()) {
      observer.disconnect();
      seen.at = -1;
      requestAnimationFrame(() => { seen.at = performance.now(); });
    }
  }).observe(document, { subtree: true, childList: true, characterData: true });
};

/** Input → last drawing call on any canvas on screen, for `n` slider inputs
 *  on `page` (slider `#batch-slider`, values 0..`span`-1). Waits two frames
 *  after each input so that drawing scheduled for the next frame counts. */
export async function inputToLastDraw(page, n, span) {
  return page.evaluate(async ({ n, span }) => {
    const slider = document.querySelector('#batch-slider');
    const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
    // On screen: a box of some size that meets the viewport.
    const visible = (id) => {
      const c = document.getElementById(id);
      if (!c) return false;
      const r = c.getBoundingClientRect();
      return r.width > 1 && r.height > 1 && r.bottom > 0 && r.right > 0 &&
        r.top < innerHeight && r.left < innerWidth;
    };
    const out = [];
    for (let i = 0; i < n; i++) {
      await frame();
      window.__draws.last.clear();
      const t0 = performance.now();
      slider.value = String((Number(slider.value) + 1) % span);
      slider.dispatchEvent(new Event('input', { bubbles: true }));
      await frame();
      await frame();
      const times = [...window.__draws.last.entries()].filter(([id]) => visible(id)).map(([, t]) => t);
      if (times.length) out.push(Math.max(...times) - t0);
    }
    return out;
  }, { n, span });
}

/** Cold navigation → first canvas drawing call, in a fresh context; with
 *  `frame`, → the start of the frame after it instead (what a harness that
 *  watches the canvas's pixels sees: the drawing task's other work, and
 *  anything else it starts, delays it). */
export async function coldFirstDraw(browser, url, frame = false) {
  return cold(browser, url, RECORDER, (key) => window.__draws && window.__draws[key], frame ? 'frame' : 'first');
}

/** Cold navigation → the frame after the table's total is written, in a
 *  fresh context. */
export async function coldFigures(browser, url) {
  return cold(browser, url, FIGURES, () => window.__figures && window.__figures.at > 0 && window.__figures.at);
}

/** Opens `url` in a fresh context with `script` installed first, and
 *  returns the first truthy value of `probe(arg)` in the page. */
async function cold(browser, url, script, probe, arg) {
  const ctx = await browser.newContext();
  await ctx.addInitScript(script);
  const p = await ctx.newPage();
  await p.goto(url);
  const t = await p.waitForFunction(probe, arg);
  const value = await t.jsonValue();
  await ctx.close();
  return value;
}
