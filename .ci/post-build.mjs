// Trunk post_build hook, run on the staged dist/:
// 1. Keeps Trunk's inline module loader inline, made `async`.
// 2. In release builds, minifies wasm-bindgen's JS glue with terser (the
//    light page's, updating its integrity hash, and the full calculator's),
//    the boot script and the service worker.
// 3. Moves the preload links to the top of <head>.
// 4./5. Inlines the boot script and keeps the (Trunk-inlined) stylesheet
//    inline, each allowed by its sha256 in the Content-Security-Policy, so
//    the static lesson markup is parsed and laid out, with its styles, while
//    the wasm downloads. Fails the build if the policy is missing or any
//    inline script lacks its hash in it ('unsafe-inline' is never needed).
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { minify } from 'terser';

const dir = process.env.TRUNK_STAGING_DIR;
const publicUrl = process.env.TRUNK_PUBLIC_URL || './';
const file = path.join(dir, 'index.html');
let html = fs.readFileSync(file, 'utf8');
const sri = (code) => 'sha384-' + crypto.createHash('sha384').update(code).digest('base64');

// 1. Trunk's module loader stays inline, made `async` (so it runs as soon as
//    its imports are loaded, not after the whole document is parsed;
//    src/light.rs waits for the markup itself when it is not parsed yet),
//    and allowed by its sha256 in the policy (step 4 adds it). As a file it
//    was one more request in the cold load's critical chain (README
//    "Benchmark"). Minified release HTML drops the quotes around values.
const inlineScripts = [];
html = html.replace(/<script type="?module"?>([\s\S]*?)<\/script>/g, (_, code) => {
  inlineScripts.push(code);
  return `<script type="module" async>${code}</script>`;
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


if (process.env.TRUNK_PROFILE === 'release') {
  // The light lesson page's glue (loaded by index.html, with an integrity
  // hash) and the full calculator's (imported by the light page).
  const glue = fs.readdirSync(dir).filter((f) => /^lesson-[0-9a-f]+\.js$/.test(f));
  if (glue.length !== 1 || !['membudget.js', 'readers.js'].every((f) => fs.existsSync(path.join(dir, f)))) {
    console.error(`expected lesson-<hash>.js, membudget.js and readers.js, found: ${glue.join(', ') || 'none'}`);
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
  // The full calculator's glue and the trainer-file readers' (imported by boot.js).
  for (const glue of ['membudget.js', 'readers.js']) {
    const glueFile = path.join(dir, glue);
    const { code: min } = await minify(fs.readFileSync(glueFile, 'utf8'), { module: true, compress: true, mangle: true });
    fs.writeFileSync(glueFile, min);
  }
  for (const script of ['boot.js', 'sw.js']) {
    const scriptFile = path.join(dir, script);
    const { code: min } = await minify(fs.readFileSync(scriptFile, 'utf8'), { compress: true, mangle: true });
    fs.writeFileSync(scriptFile, min);
  }
}
// 4. The boot script goes inline, its hash added to the policy's
//    script-src: as a file it held the parser (and so the static lesson
//    markup and its first paint) until it arrived.
{
  const bootFile = path.join(dir, 'boot.js');
  const boot = fs.readFileSync(bootFile, 'utf8').trim();
  const tag = html.match(/<script src="?boot\.js"?><\/script>/);
  if (!tag || boot.includes('</script')) {
    console.error('index.html has no <script src="boot.js"></script> to inline');
    process.exit(1);
  }
  html = html.replace(tag[0], () => `<script>${boot}</script>`);
  const hashes = [boot, ...inlineScripts]
    .map((code) => `'sha256-${crypto.createHash('sha256').update(code).digest('base64')}'`)
    .join(' ');
  html = html.replace(/script-src 'self' 'wasm-unsafe-eval'/, (m) => `${m} ${hashes}`);
  fs.rmSync(bootFile);
}

// 5. The stylesheet is inline too (Trunk's rel="inline"), its hash added to
//    style-src: the markup is laid out once, with its styles, as soon as
//    it is parsed, instead of once without them and again when they came.
{
  const styles = [...html.matchAll(/<style[^>]*>([\s\S]*?)<\/style>/g)];
  if (styles.length !== 1) {
    console.error(`expected one inline stylesheet, found ${styles.length}`);
    process.exit(1);
  }
  const hash = `'sha256-${crypto.createHash('sha256').update(styles[0][1]).digest('base64')}'`;
  html = html.replace(/style-src 'self'/, (m) => `${m} ${hash}`);
}

// Only hashed inline scripts, and a policy at all.
const policy = html.match(/http-equiv="?Content-Security-Policy"?[^>]*|content="[^"]*"[^>]*http-equiv="?Content-Security-Policy/);
if (!policy) {
  console.error('index.html has no Content-Security-Policy');
  process.exit(1);
}
for (const [, code] of html.matchAll(/<script(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/g)) {
  const hash = `sha256-${crypto.createHash('sha256').update(code).digest('base64')}`;
  if (!html.includes(`'${hash}'`)) {
    console.error(`inline script without its hash in the policy: ${code.slice(0, 60)}`);
    process.exit(1);
  }
}
fs.writeFileSync(file, html);
