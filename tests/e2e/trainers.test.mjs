// End-to-end: the trainer on the page (issue 37) — the Trainer select, the
// configuration and Make it fit's rows as that trainer's file (`--emit`'s
// output, copied), and a trainer's config file dropped or pasted (read as
// `--from` reads it, by the readers' wasm, which is fetched on the first
// file and not before).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, launch, openPage, urlMatches } from './harness.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
let server, browser;
before(async () => { server = await startServer(); browser = await launch(); });
after(async () => { await browser?.close(); server?.close(); });

const open = (query = '') => openPage(browser, server.base + query, { permissions: ['clipboard-read', 'clipboard-write'] });

/** The command line's output for `args` (built by cargo if needed). */
function membudget(args) {
  return execFileSync('cargo', ['run', '--quiet', '--bin', 'membudget', '--', ...args], { cwd: root, encoding: 'utf8' });
}

/** Exact per-GPU bytes, from the page's own JSON export. */
async function bytes(page) {
  await page.click('#copy-json');
  return JSON.parse(await page.inputValue('#export-text')).bytes;
}

// A small torchtune LoRA recipe of our own.
const RECIPE = `# our own small recipe
model:
  _component_: torchtune.models.llama3_2.lora_llama3_2_1b
  lora_attn_modules: ['q_proj', 'v_proj']
  apply_lora_to_mlp: False
  lora_rank: 8
tokenizer:
  _component_: torchtune.models.llama3.llama3_tokenizer
  max_seq_len: 512
batch_size: 2
gradient_accumulation_steps: 4
dtype: bf16
enable_activation_checkpointing: True
optimizer:
  _component_: torch.optim.AdamW
  lr: 3e-4
`;

/** The readers' files the page has requested so far. */
function readersRequests(page) {
  const seen = [];
  page.on('request', (r) => { if (/\/readers(_bg\.wasm|\.js)$/.test(r.url())) seen.push(r.url()); });
  return seen;
}

test('the Trainer select applies its defaults, the address keeps them, and the copied file is --emit\'s', async () => {
  const { page, problems, context } = await open('?mode=detailed&gpu=8');
  const before = await bytes(page);
  await page.selectOption('#trainer-select', 'torchtune');
  await page.waitForFunction(() => /--trainer torchtune: that trainer's defaults, before your flags \(docs\/trainers\.md\): --impl hf --precision bf16 --loss chunked/.test(document.querySelector('#trainer-message').textContent));
  assert.match(await page.textContent('#detailed-computed'), /Trainer: torchtune, its defaults applied when chosen \(--impl hf --precision bf16 --loss chunked; docs\/trainers\.md\)/);
  const after = await bytes(page);
  assert.notDeepEqual(after, before);
  await urlMatches(page, /trainer=torchtune/);
  for (const key of [/prec=bf16/, /impl=hf/, /loss=chunked/]) assert.match(page.url(), key);
  const again = await open(new URL(page.url()).search);
  assert.deepEqual(await bytes(again.page), after);
  assert.equal(await again.page.inputValue('#trainer-select'), 'torchtune');
  await again.context.close();
  const want = membudget(['--trainer', 'torchtune', '--model', 'llama-2-7b', '--seq', '2048', '--batch', '4', '--emit', 'torchtune']);
  await page.evaluate(() => { document.getElementById('trainer-file-out').open = true; });
  assert.equal(await page.textContent('#fragment-text'), want);
  await page.click('#fragment-copy');
  await page.waitForFunction(() => document.querySelector('#trainer-file-out [role=status]').textContent === 'Copied.');
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), want);
  // It does not fit 8 GB: each of Make it fit's rows offers its own file,
  // the file of the configuration that row applies.
  await page.waitForSelector('#plan-file-0');
  await page.click('#plan-file-0');
  await page.waitForFunction(() => document.querySelector('.plan-file-text').textContent !== '');
  const row = await page.locator('.plan-file-text').first().textContent();
  // A file is copied; a configuration torchtune cannot say is refused in words.
  if (!row.startsWith('--emit torchtune:')) {
    await page.waitForFunction((row) => navigator.clipboard.readText().then((c) => c === row), row);
  }
  assert.notEqual(row, want);
  await page.click('#plan-apply-0');
  await page.waitForFunction((row) => document.querySelector('#fragment-text').textContent === row, row);
  assert.deepEqual(problems, []);
  await context.close();
});

test('a dropped torchtune recipe sets the figures, the address keeps them, and the copied file is --emit\'s', async () => {
  const { page, problems, context } = await open('?mode=detailed');
  const fetched = readersRequests(page);
  const before = await bytes(page);
  await page.selectOption('#trainer-select', 'torchtune');
  await page.waitForFunction(() => /--trainer torchtune: that trainer's defaults/.test(document.querySelector('#trainer-message').textContent));
  // The readers' wasm is fetched on the first file, not before.
  assert.deepEqual(fetched, []);
  await page.evaluate((body) => {
    const dt = new DataTransfer();
    dt.items.add(new File([body], 'mine.yaml', { type: 'text/yaml' }));
    document.getElementById('trainer-input').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, RECIPE);
  await page.waitForFunction(() => /read from mine\.yaml \(torchtune recipe\)/.test(document.querySelector('#trainer-message').textContent));
  assert.equal(fetched.filter((u) => u.endsWith('readers_bg.wasm')).length, 1, fetched.join(' '));
  const said = await page.textContent('#trainer-message');
  assert.match(said, /batch_size=2 → --micro-batch 2/);
  assert.match(said, /ignored: .*optimizer\.lr=3e-4 \(a hyperparameter: no memory\)/);
  assert.match(await page.textContent('#detailed-computed'), /Trainer: torchtune, its defaults applied/);
  const after = await bytes(page);
  assert.notDeepEqual(after, before);
  await urlMatches(page, /model=llama-3\.2-1b/);
  for (const key of [/seq=512/, /batch=8/, /micro=2/, /lora=8/, /prec=bf16/, /recompute=full/, /loss=chunked/, /trainer=torchtune/]) {
    assert.match(page.url(), key);
  }
  // The address alone gives the same figures and trainer.
  const query = new URL(page.url()).search;
  const again = await open(query);
  assert.deepEqual(await bytes(again.page), after);
  assert.equal(await again.page.inputValue('#trainer-select'), 'torchtune');
  await again.context.close();
  // The file offered is --emit's for the same configuration, and copied.
  const want = membudget(['--trainer', 'torchtune', '--from', writeTemp('mine.yaml', RECIPE), '--emit', 'torchtune']);
  await page.evaluate(() => { document.getElementById('trainer-file-out').open = true; });
  assert.equal(await page.textContent('#fragment-text'), want);
  await page.click('#fragment-copy');
  await page.waitForFunction(() => document.querySelector('#trainer-file-out [role=status]').textContent === 'Copied.');
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), want);
  assert.deepEqual(problems, []);
  await context.close();
});

test('a pasted DeepSpeed JSON sets ZeRO; a bad one is refused in words and changes nothing', async () => {
  const { page, problems, context } = await open('?mode=detailed');
  const fetched = readersRequests(page);
  await page.evaluate(() => { document.getElementById('trainer-input').closest('details').open = true; });
  await page.fill('#trainer-input', '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3}, "bf16": {"enabled": true}}');
  await page.waitForFunction(() => /read from pasted\.json \(DeepSpeed JSON\)/.test(document.querySelector('#trainer-message').textContent));
  await urlMatches(page, /framework=deepspeed/);
  assert.match(page.url(), /zero=3/);
  const set = page.url();
  await page.fill('#trainer-input', '{"zero_optimization": {"stage": 7}}');
  await page.waitForFunction(() => document.querySelector('#trainer-message').classList.contains('invalid'));
  assert.equal(await page.textContent('#trainer-message'),
    'Not read: pasted.json: zero_optimization.stage: ZeRO stages are 0 to 3, got 7. Nothing was changed.');
  assert.equal(page.url(), set);
  // Loaded once for both files.
  assert.equal(fetched.filter((u) => u.endsWith('readers_bg.wasm')).length, 1, fetched.join(' '));
  assert.deepEqual(problems, []);
  await context.close();
});

test('readers that cannot be fetched (offline before a first file) are said in words; nothing changes', async () => {
  // (Blocking the service worker, so that the page's own route sees the request.)
  const { page, context } = await openPage(browser, server.base + '?mode=detailed', { serviceWorkers: 'block' });
  await page.route(/\/readers(_bg\.wasm|\.js)$/, (route) => route.abort());
  // The page writes its whole address once the state has rested.
  await urlMatches(page, /model=/);
  const set = page.url();
  await page.evaluate(() => { document.getElementById('trainer-input').closest('details').open = true; });
  await page.fill('#trainer-input', '{"train_micro_batch_size_per_gpu": 1}');
  await page.waitForFunction(() => document.querySelector('#trainer-message').classList.contains('invalid'));
  assert.match(await page.textContent('#trainer-message'),
    /^Not read: the file readers could not be loaded \(.*\); the command line reads it: membudget --from FILE\. Nothing was changed\.$/);
  assert.equal(page.url(), set);
  assert.equal(await page.locator('#panic-banner').count(), 0);
  await context.close();
});

function writeTemp(name, body) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'membudget-e2e-'));
  const file = path.join(dir, name);
  fs.writeFileSync(file, body);
  return file;
}
