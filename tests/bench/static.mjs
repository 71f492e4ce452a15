// Cold navigation -> first chart, as an outside harness measures it: the
// page and the hand-written floor each served by a plain static server
// (`python3 -m http.server`: HTTP/1.0, a new connection per request, no
// cache headers), each load in a browser launched afresh (an empty cache,
// no compiled code kept, no warm process), the page's own marks unused.
// Prints the medians, the ratio, and what was fetched before the first
// draw. Asserts nothing about time.
//   node tests/bench/static.mjs [DIST] [LOADS]
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launch, dist as defaultDist } from '../e2e/harness.mjs';
import { RECORDER } from './outside.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const dist = path.resolve(process.argv[2] || defaultDist);
const LOADS = Number(process.argv[3] || 15);

/** `python3 -m http.server` on `dir`; resolves with its address once it answers. */
async function pythonServer(dir) {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const child = spawn('python3', ['-m', 'http.server', String(port), '--bind', '127.0.0.1', '--directory', dir], {
    stdio: 'ignore',
  });
  const base = `http://127.0.0.1:${port}/`;
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(base)).ok) return { child, base };
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  child.kill();
  throw new Error(`python3 -m http.server did not start on ${dir}`);
}

/** One cold load of `url` in a browser launched for it: the first drawing
 *  call's time after navigation, and the resources fetched before it. */
async function coldLoad(url) {
  const browser = shared || await launch();
  try {
    const ctx = await browser.newContext();
    await ctx.addInitScript(RECORDER);
    const page = await ctx.newPage();
    await page.goto(url);
    const first = await (await page.waitForFunction(() => window.__draws && window.__draws.first)).jsonValue();
    const frame = await (await page.waitForFunction(() => window.__draws.frame)).jsonValue();
    const before = await page.evaluate((t) => performance.getEntriesByType('resource')
      .filter((e) => e.startTime < t)
      .map((e) => `${e.name.split('/').pop()} ${e.startTime.toFixed(0)}-${e.responseEnd.toFixed(0)} ms`), first);
    return { first, frame, before };
  } finally {
    if (shared) await browser.contexts()[0]?.close();
    else await browser.close();
  }
}

// FRESH=context: one browser, a fresh context (empty cache) per load, as
// tests/bench/bench.mjs does; the default launches a browser per load.
const shared = process.env.FRESH === 'context' ? await launch() : null;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const page = await pythonServer(dist);
const floor = await pythonServer(path.join(here, 'floor'));
const times = { lesson: [], floor: [] };
const frames = { lesson: [], floor: [] };
let fetched;
try {
  // One of each in turn, so that both see the same machine.
  for (let i = 0; i < LOADS; i++) {
    const f = await coldLoad(floor.base);
    times.floor.push(f.first);
    frames.floor.push(f.frame);
    const l = await coldLoad(page.base);
    times.lesson.push(l.first);
    frames.lesson.push(l.frame);
    fetched = l.before;
  }
} finally {
  page.child.kill();
  floor.child.kill();
  await shared?.close();
}
const ms = (x) => `${x.toFixed(1)} ms`;
console.log(`python3 -m http.server, a fresh ${shared ? 'context' : 'browser'} per load (${LOADS} loads each):`);
console.log(`  floor  cold navigation -> first chart: median ${ms(median(times.floor))} (min ${ms(Math.min(...times.floor))})`);
console.log(`  lesson cold navigation -> first chart: median ${ms(median(times.lesson))} (min ${ms(Math.min(...times.lesson))})`);
console.log(`  ratio ${(median(times.lesson) / median(times.floor)).toFixed(2)}x (goal <= 2x)`);
console.log(`  the frame after the first draw begins: floor ${ms(median(frames.floor))}, lesson ${ms(median(frames.lesson))}, ratio ${(median(frames.lesson) / median(frames.floor)).toFixed(2)}x`);
console.log(`  fetched before the lesson's first draw (last load): ${fetched.join('; ')}`);
