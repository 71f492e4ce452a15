// Cold navigation -> first chart (drawing call, and the frame after it) for
// the floor and for one or more builds, by turns, each load in a fresh
// context of one browser, served as tests/bench/bench.mjs serves them (the
// harness's Node server). For comparing a build with another on the same
// machine at the same time. Asserts nothing.
//   node tests/bench/cold.mjs DIST [DIST...]   (LOADS=15 by default)
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, launch } from '../e2e/harness.mjs';
import { coldFirstDraw, coldFigures } from './outside.mjs';

const LOADS = Number(process.env.LOADS || 15);
const floorDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'floor');
const dirs = process.argv.slice(2);
const servers = [['floor', await startServer(floorDir)], ...(await Promise.all(dirs.map(async (d) => [d, await startServer(path.resolve(d))])))];
const browser = await launch();
const times = Object.fromEntries(servers.map(([name]) => [name, { first: [], frame: [], figures: [] }]));
for (let i = 0; i < LOADS; i++) {
  for (const [name, server] of servers) {
    times[name].first.push(await coldFirstDraw(browser, server.base));
    times[name].frame.push(await coldFirstDraw(browser, server.base, true));
    if (name !== 'floor') times[name].figures.push(await coldFigures(browser, server.base));
  }
}
await browser.close();
for (const [, server] of servers) server.close();
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const floor = times.floor;
for (const [name] of servers) {
  const t = times[name];
  console.log(`${name}: first drawing call ${median(t.first).toFixed(1)} ms (${(median(t.first) / median(floor.first)).toFixed(2)}x the floor), frame after it ${median(t.frame).toFixed(1)} ms (${(median(t.frame) / median(floor.frame)).toFixed(2)}x)${t.figures.length ? `, every figure (the frame after the table's total) ${median(t.figures).toFixed(1)} ms (${(median(t.figures) / median(floor.frame)).toFixed(2)}x the floor's frame)` : ''}`);
}
