// Trunk post_build hook: moves Trunk's inline module loader into its own
// file, so the page runs under a Content-Security-Policy without
// 'unsafe-inline' (script-src 'self' 'wasm-unsafe-eval'). Fails the build if
// the policy is missing or any inline script is left.
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';

const dir = process.env.TRUNK_STAGING_DIR;
const publicUrl = process.env.TRUNK_PUBLIC_URL || './';
const file = path.join(dir, 'index.html');
let html = fs.readFileSync(file, 'utf8');

// Minified release HTML drops the quotes around attribute values.
html = html.replace(/<script type="?module"?>([\s\S]*?)<\/script>/g, (_, code) => {
  const hash = crypto.createHash('sha256').update(code).digest('hex').slice(0, 16);
  const name = `loader-${hash}.js`;
  fs.writeFileSync(path.join(dir, name), code);
  const sri = crypto.createHash('sha384').update(code).digest('base64');
  return `<script type="module" src="${publicUrl}${name}" integrity="sha384-${sri}" crossorigin="anonymous"></script>`;
});

const inline = html.match(/<script(?![^>]*\bsrc=)[^>]*>/g);
if (inline) {
  console.error(`inline script left in index.html: ${inline.join(' ')}`);
  process.exit(1);
}
if (!/http-equiv="?Content-Security-Policy/.test(html)) {
  console.error('index.html has no Content-Security-Policy');
  process.exit(1);
}
fs.writeFileSync(file, html);
