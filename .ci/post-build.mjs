// Trunk post_build hook, run on the staged dist/:
// 1. Moves Trunk's inline module loader into its own file, so the page runs
//    under a Content-Security-Policy without 'unsafe-inline' (script-src
//    'self' 'wasm-unsafe-eval'). Fails the build if the policy is missing or
//    any inline script is left.
// 2. In release builds, minifies wasm-bindgen's JS glue with terser (8.0 KB
//    of gzip become 6.0 KB) and updates its integrity hash, and minifies the
//    boot script and the service worker (classic scripts, no integrity hash).
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { minify } from 'terser';

const dir = process.env.TRUNK_STAGING_DIR;
const publicUrl = process.env.TRUNK_PUBLIC_URL || './';
const file = path.join(dir, 'index.html');
let html = fs.readFileSync(file, 'utf8');
const sri = (code) => 'sha384-' + crypto.createHash('sha384').update(code).digest('base64');

// Minified release HTML drops the quotes around attribute values.
html = html.replace(/<script type="?module"?>([\s\S]*?)<\/script>/g, (_, code) => {
  const hash = crypto.createHash('sha256').update(code).digest('hex').slice(0, 16);
  const name = `loader-${hash}.js`;
  fs.writeFileSync(path.join(dir, name), code);
  return `<script type="module" src="${publicUrl}${name}" integrity="${sri(code)}" crossorigin="anonymous"></script>`;
});

// 3. The wasm and its glue start downloading with the HTML: Trunk puts
//    their preload links at the end of <head>, after the parser-blocking
//    boot script, where Chromium finds them only once that script has run
//    (measured: the wasm request started ~25 ms later). Move them to the top.
{
  const preloads = html.match(/<link[^>]*\brel="?(?:modulepreload|preload)"?[^>]*>/g) || [];
  for (const link of preloads) html = html.replace(link, '');
  html = html.replace(/(<title>[^<]*<\/title>)/, `$1${preloads.join('')}`);
}

const inline = html.match(/<script(?![^>]*\bsrc=)[^>]*>/g);
if (inline) {
  console.error(`inline script left in index.html: ${inline.join(' ')}`);
  process.exit(1);
}
if (!/http-equiv="?Content-Security-Policy/.test(html)) {
  console.error('index.html has no Content-Security-Policy');
  process.exit(1);
}

if (process.env.TRUNK_PROFILE === 'release') {
  // The light lesson page's glue (loaded by index.html, with an integrity
  // hash) and the full calculator's (imported by the light page).
  const glue = fs.readdirSync(dir).filter((f) => /^lesson-[0-9a-f]+\.js$/.test(f));
  if (glue.length !== 1 || !fs.existsSync(path.join(dir, 'membudget.js'))) {
    console.error(`expected lesson-<hash>.js and membudget.js, found: ${glue.join(', ') || 'none'}`);
    process.exit(1);
  }
  const glueFile = path.join(dir, glue[0]);
  const code = fs.readFileSync(glueFile, 'utf8');
  const { code: small } = await minify(code, { module: true, compress: true, mangle: true });
  if (!html.includes(sri(code))) {
    console.error(`index.html does not carry the integrity hash of ${glue[0]}`);
    process.exit(1);
  }
  fs.writeFileSync(glueFile, small);
  html = html.replaceAll(sri(code), sri(small));
  const fullGlue = path.join(dir, 'membudget.js');
  const { code: fullSmall } = await minify(fs.readFileSync(fullGlue, 'utf8'), { module: true, compress: true, mangle: true });
  fs.writeFileSync(fullGlue, fullSmall);
  for (const script of ['boot.js', 'sw.js']) {
    const scriptFile = path.join(dir, script);
    const { code: min } = await minify(fs.readFileSync(scriptFile, 'utf8'), { compress: true, mangle: true });
    fs.writeFileSync(scriptFile, min);
  }
}
fs.writeFileSync(file, html);
