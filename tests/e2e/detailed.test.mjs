// End-to-end: the detailed model on the page (presets, options, per-GPU
// view, lesson beside it), driven in Chromium.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launch, openPage, chart, urlMatches, urlLacks } from './harness.mjs';

let server, browser;
before(async () => { server = await startServer(); browser = await launch(); });
after(async () => { await browser?.close(); server?.close(); });

const open = (query = '', options = {}) => openPage(browser, server.base + query, options);

/** Exact per-GPU bytes, from the page's own JSON export. */
async function bytes(page) {
  await page.click('#copy-json');
  return JSON.parse(await page.inputValue('#export-text')).bytes;
}

/** Sets a whole-number box in a (possibly collapsed) group and commits it. */
async function setCount(page, id, value) {
  await page.evaluate((id) => { document.getElementById(id).closest('details').open = true; }, id);
  await page.fill(`#${id}`, String(value));
  await page.press(`#${id}`, 'Enter');
}

test('the page opens on the lesson, unchanged; the switch reveals the detailed model', async () => {
  const { page, context } = await open();
  assert.equal(await page.isChecked('#mode-lesson'), true);
  assert.equal(await page.isVisible('#model-select'), false);
  assert.equal(await page.isVisible('.detailed-table'), false);
  assert.equal(await page.textContent('tr[data-term="total"] td.gb'), '185.0');
  await page.check('#mode-detailed');
  await page.waitForSelector('#model-select');
  await urlMatches(page, /mode=detailed&model=llama-2-7b/);
  assert.equal(await page.textContent('#param-count'), '6,738,415,616');
  assert.equal(await page.locator('tr[data-term="logits"]').count(), 1);
  assert.equal(await page.isVisible('.detailed-table'), true);
  assert.equal(await page.isVisible('#batch-input'), true);
  for (const lessonOnly of ['#params-input', '#mixed-input', '#pin-baseline', '#sweep-chart', '#exercise-1']) {
    assert.equal(await page.isVisible(lessonOnly), false, lessonOnly);
  }
  await page.check('#mode-lesson');
  assert.equal(await page.isVisible('#model-select'), false);
  assert.equal(await page.textContent('tr[data-term="total"] td.gb'), '185.0');
  await context.close();
});

test('opened in detailed mode, switching to the lesson draws its sweep chart', async () => {
  const { page, context } = await open('?mode=detailed');
  assert.equal(await page.isVisible('#sweep-chart'), false);
  await page.check('#mode-lesson');
  // Sized to its box (not the 1 px of a hidden canvas) and drawn.
  await page.waitForFunction(() => document.querySelector('#sweep-chart').width > 200);
  assert.equal(await page.isVisible('#sweep-chart'), true);
  await context.close();
});

test('picking a preset fills the shape and shows its parameter count', async () => {
  const { page, context } = await open('?mode=detailed');
  await page.selectOption('#model-select', 'gpt2');
  assert.equal(await page.textContent('#param-count'), '124,439,808');
  assert.equal(await page.inputValue('#layers-input'), '12');
  assert.equal(await page.inputValue('#hidden-input'), '768');
  await page.selectOption('#model-select', 'llama-3.1-8b');
  assert.equal(await page.textContent('#param-count'), '8,030,261,248');
  await urlMatches(page, /model=llama-3\.1-8b/);
  // Changing a dimension makes it a custom model, kept in the address.
  await setCount(page, 'ffn-input', 10000);
  assert.equal(await page.inputValue('#model-select'), 'custom');
  await urlMatches(page, /arch=llama&heads=32&kv=8&ffn=10000/);
  await context.close();
});

test('flash attention is the default; eager at a long sequence shows its cost', async () => {
  const { page, context } = await open('?mode=detailed&model=llama-2-7b&seq=32768&batch=1');
  const flash = await bytes(page);
  const before = await chart(page);
  await page.evaluate(() => { document.getElementById('attention-select').closest('details').open = true; });
  assert.match(await page.textContent('#attention-cost'), /Eager attention would keep [\d,.]+ GB more per GPU here/);
  await urlLacks(page, /attn=/);
  await page.selectOption('#attention-select', { label: 'Eager (keeps a·s² scores)' });
  const eager = await bytes(page);
  assert.ok(flash.activations < eager.activations / 4, `${flash.activations} vs ${eager.activations}`);
  assert.equal(flash.params, eager.params);
  assert.notEqual(await chart(page), before);
  await urlMatches(page, /attn=eager/);
  assert.match(await page.textContent('#attention-cost'), /Eager keeps [\d,.]+ GB per GPU of a·s² scores/);
  await context.close();
});

test('ZeRO-3 on 8 GPUs divides parameters, gradients and optimizer state by 8', async () => {
  const { page, context } = await open('?mode=detailed&model=llama-2-7b&batch=8');
  const one = await bytes(page);
  await setCount(page, 'dp-input', 8);
  await setCount(page, 'zero-input', 3);
  const eight = await bytes(page);
  for (const k of ['params', 'grads', 'master_weights', 'optimizer_state']) {
    assert.equal(eight[k], one[k] / 8, k);
  }
  await urlMatches(page, /dp=8&zero=3/);
  // The table shows the same, per GPU.
  assert.equal(await page.textContent('.detailed-table tr[data-term="params"] td.gb'), (one.params / 8 / 1e9).toFixed(1));
  await context.close();
});

test('an impossible combination is explained, not drawn as NaN', async () => {
  const { page, context } = await open('?mode=detailed&model=gpt2-xl');
  await setCount(page, 'tp-input', 2);
  assert.match(await page.textContent('#detailed-sentence'), /tensor parallelism must divide the attention heads/);
  assert.ok(!(await page.innerText('body')).includes('NaN'));
  await context.close();
});

test('the lesson beside the detailed model, with what differs and why', async () => {
  const { page, context } = await open('?mode=detailed&model=llama-2-7b&gpu=80');
  const before = await chart(page);
  await page.check('#both-input');
  await urlMatches(page, /both=1/);
  const text = await page.textContent('#model-difference');
  assert.match(text, /already bytes at 16 bits/);
  assert.match(text, /attention scores/);
  assert.match(text, /logits/);
  assert.notEqual(await chart(page), before);
  assert.match(await page.textContent('#fit-micro'), /^Largest micro-batch per GPU that fits: /);
  await context.close();
});

test('a detailed deep link reopens the same view; exports carry it', async () => {
  const query = '?params=7&batch=4&seq=4096&hidden=4096&layers=32&mixed=1&mode=detailed&model=llama-3.1-8b&attn=flash&recompute=selective&lora=16';
  const { page, problems, context } = await open(query);
  assert.equal(await page.textContent('#param-count'), '8,030,261,248');
  const b = await bytes(page);
  // LoRA rank 16 on q and v: only the adapters train, in fp32 as PEFT
  // keeps them: LoRA prices with stock transformers unless chosen.
  assert.equal(b.grads, 32 * 16 * (4096 + 4096 + 4096 + 1024) * 4);
  assert.equal(await page.textContent('#detailed-computed'),
    'Computed: micro-batch 4 × 1 accumulation step × dp 1 = 4 sequences per step; 1 GPU (dp 1 × tp 1 × pp 1); '
    + 'priced with hf kernels (stock transformers), the default for LoRA. '
    + 'Note: selective recomputation drops only the a·s² attention scores, which flash attention does not keep: priced exactly as none.');
  await page.click('#copy-markdown');
  assert.match(await page.inputValue('#export-text'), /\| Logits \| \d+\.\d \|/);
  await page.click('#copy-link');
  assert.match(await page.inputValue('#export-text'), /mode=detailed&model=llama-3\.1-8b&recompute=selective&lora=16/);
  // Choosing the kernels wins over the default, and the address keeps it.
  await page.evaluate(() => { document.getElementById('impl-select').closest('details').open = true; });
  await page.selectOption('#impl-select', '1');
  await urlMatches(page, /impl=fused/);
  assert.equal((await bytes(page)).grads, 32 * 16 * (4096 + 4096 + 4096 + 1024) * 2);
  assert.match(await page.textContent('#detailed-computed'), /priced with fused kernels \(Megatron\), as chosen\./);
  assert.deepEqual(problems, []);
  await context.close();
});

/** The step timeline chart's pixels. */
const timelineChart = (page) => page.evaluate(() => document.querySelector('#timeline-chart').toDataURL());

test('the fit verdict follows the step peak where the sum and the peak disagree', async () => {
  // Llama-3.1-8B, stock Hugging Face on CUDA (AdamW foreach), 2048 tokens:
  // states and saved activations add to 142.8 GB, under the 151.4 GB of a
  // card sold as 141 GB, but the optimizer update's fp32 temporaries take
  // the step to 160.6 GB.
  const { page, problems, context } = await open('?mode=detailed&model=llama-3.1-8b&seq=2048&batch=1&attn=flash&impl=hf&gpu=141&oh=0');
  assert.equal(await page.textContent('.detailed-table tr[data-term="total"] td.gb'), '142.8');
  assert.equal(await page.textContent('#fit-verdict'),
    "Does not fit by the step's peak by 9.2 GB: needs 160.6 GB, the GPU has 151.4 GB.");
  assert.match(await page.textContent('#peak-explanation'),
    /^The step peaks at 160\.6 GB during optimizer update \(optimizer phase\), 17\.8 GB above the sum of states and saved activations \(142\.8 GB\)\./);
  assert.equal(await page.isVisible('#timeline-chart'), true);
  await page.locator('#timeline-chart').scrollIntoViewIfNeeded();
  await page.waitForFunction(() => document.querySelector('#timeline-chart').width > 200);
  const before = await timelineChart(page);
  // Doubling the batch grows the activations in the timeline, not the peak
  // (the optimizer update), so the chart changes and the verdict stays.
  await page.fill('#batch-input', '8');
  await page.press('#batch-input', 'Enter');
  // Scrolled out of view by the typing, the timeline is redrawn once back in view.
  await page.locator('#timeline-chart').scrollIntoViewIfNeeded();
  await page.waitForFunction((b) => document.querySelector('#timeline-chart').toDataURL() !== b, before);
  assert.match(await page.textContent('#peak-explanation'), /during loss backward \(backward phase\)/);
  assert.match(await page.textContent('#fit-verdict'), /^Does not fit by the step's peak/);
  // The update alone needs more than the card: no sequence length fits.
  assert.equal(await page.textContent('#fit-seq-detailed'),
    'Largest sequence length that fits: none (even one token does not fit)');
  assert.deepEqual(problems, []);
  await context.close();
});

test('the verdict counts the runtime overhead by default, its parts beside it; one click leaves it out; bad values are refused', async () => {
  const { page, context } = await open('?mode=detailed&model=llama-3.1-8b&seq=2048&batch=1&attn=flash&gpu=192');
  assert.match(await page.textContent('#fit-verdict'), /^Fits with the runtime overhead: /);
  assert.match(await page.textContent('#fit-verdict-overhead'),
    /^Step's peak [\d.]+ \+ CUDA context 0\.8 \+ workspaces 0\.1 \+ communication buffers 0\.0 \+ fragmentation [\d.]+ = [\d.]+ GB\. A trainer's log prints torch\.cuda\.max_memory_allocated [\d.]+ GB \(the tensors\) and max_memory_reserved [\d.]+ GB/);
  assert.match(await page.textContent('#peak-explanation'), /With the runtime overhead .* it needs /);
  assert.match(await page.getAttribute('#budget-chart', 'aria-label'), /at rest; the step peaks at [\d.]+ GB with the runtime overhead$/);
  const seq = Number((await page.textContent('#fit-seq-detailed')).match(/fits: (\d+)$/)[1]);
  assert.ok(seq > 2048, `${seq}`);
  // One click, no group to open: the tensors' peak alone; the link keeps it.
  await page.uncheck('#overhead-input');
  await urlMatches(page, /oh=0/);
  assert.equal(await page.isVisible('#fit-verdict-overhead'), false);
  assert.match(await page.textContent('#fit-verdict'), /^Fits by the step's peak: /);
  await page.waitForFunction((seq) => Number(document.querySelector('#fit-seq-detailed').textContent.match(/fits: (\d+)$/)[1]) > seq, seq);
  await page.check('#overhead-input');
  await urlLacks(page, /oh=/);
  // Fragmentation of 60 % pushes it over; the link keeps it.
  await page.evaluate(() => { document.getElementById('frag-input').closest('details').open = true; });
  await page.fill('#frag-input', '60');
  await page.press('#frag-input', 'Enter');
  await urlMatches(page, /ohfrag=60/);
  assert.match(await page.textContent('#fit-verdict'), /^Does not fit with the runtime overhead by /);
  // Expandable segments: 5 %.
  await page.check('#expandable-input');
  await urlMatches(page, /ohfrag=5(&|$)/);
  assert.equal(await page.inputValue('#frag-input'), '5');
  // Out of range: refused, message stays, value kept.
  await page.fill('#frag-input', '250');
  await page.press('#frag-input', 'Enter');
  assert.match(await page.textContent('#frag-input-message'), /Fragmentation must be a number from 0 to 100/);
  assert.equal(await page.inputValue('#frag-input'), '5');
  await context.close();
});

test('the step chart is detailed-only; the lesson stays as taught', async () => {
  const { page, context } = await open('?gpu=80');
  assert.equal(await page.isVisible('#timeline-chart'), false);
  assert.equal(await page.textContent('#fit-verdict'), 'Does not fit by 99.1 GB: needs 185.0 GB, the GPU has 85.9 GB.');
  await context.close();
});

/** Waits until the config.json importer's message matches `re`; returns it. */
async function configSays(page, re) {
  await page.waitForFunction((src) => new RegExp(src).test(document.querySelector('#config-message').textContent), re.source);
  return page.textContent('#config-message');
}

test('a pasted config.json sets the shape; a bad one names its field and changes nothing', async () => {
  const { readFileSync } = await import('node:fs');
  const { page, context } = await open('?mode=detailed&model=llama-3.1-8b');
  const total = async () => (await bytes(page)).total;
  const before = await total();
  await page.evaluate(() => { document.querySelector('.config-import').open = true; });
  // A wrong type: the field is named, nothing else moves.
  await page.fill('#config-input', '{"model_type": "llama", "num_hidden_layers": "32"}');
  // (Read by the readers' wasm, fetched on this first file.)
  const msg = await configSays(page, /num_hidden_layers: wrong type, expected a whole number/);
  assert.match(msg, /^Not read: /);
  assert.equal(await page.getAttribute('#config-message', 'class'), 'invalid');
  assert.equal(await page.textContent('#param-count'), '8,030,261,248');
  assert.equal(await total(), before);
  // Qwen3-30B-A3B as transformers writes it: exact count, active per token,
  // the shape (not the text) in the address, and a link that reopens it.
  const json = readFileSync(new URL('../fixtures/configs/saved/qwen3-30b-a3b.json', import.meta.url), 'utf8');
  await page.fill('#config-input', json);
  await configSays(page, /Read as qwen3_moe: 30,532,122,624 parameters/);
  assert.equal(await page.textContent('#param-count'), '30,532,122,624');
  assert.match(await page.textContent('#active-count'), /active per token/);
  await urlMatches(page, /model=qwen3-30b-a3b/);
  assert.notEqual(await total(), before);
  // A config no preset matches travels as its shape.
  const small = JSON.parse(json);
  small.num_experts = 64;
  await page.fill('#config-input', JSON.stringify(small));
  await urlMatches(page, /moe=64%2C8%2C768%2C0%2C0%2Cqwen/);
  const count = await page.textContent('#param-count');
  const again = await openPage(browser, page.url());
  assert.equal(await again.page.textContent('#param-count'), count);
  await again.context.close();
  // Expert parallelism divides the experts' states.
  const four = await openPage(browser, page.url() + '&batch=4&dp=4');
  const states = async (p) => { const b = await bytes(p); return b.params + b.grads; };
  const dp4 = await states(four.page);
  await setCount(four.page, 'ep-input', 4);
  await urlMatches(four.page, /ep=4/);
  assert.ok(await states(four.page) < dp4 / 2, 'ep 4 cuts the experts to a quarter');
  await four.context.close();
  await context.close();
});

test('fine-tuning recipes: QLoRA on an RTX 4090 and DPO with ZeRO-3, and the host RAM of offload', async () => {
  const { page, context } = await open('?mode=detailed');
  await page.click('#recipe-qlora');
  await urlMatches(page, /quant=nf4/);
  await urlMatches(page, /lora=16/);
  assert.equal(await page.inputValue('#quant-select'), '1');
  const qlora = await bytes(page);
  // NF4 projections plus fp32 embeddings, norms and head: 7.9 GB of weights.
  assert.ok(qlora.params > 7.8e9 && qlora.params < 8.0e9, String(qlora.params));
  assert.match(await page.textContent('#fit-verdict'), /Fits/);
  await page.click('#recipe-dpo');
  await urlMatches(page, /objective=dpo/);
  await urlMatches(page, /zero=3/);
  const dpo = await bytes(page);
  assert.ok(dpo.logits > 0 && dpo.params > 3e9, JSON.stringify(dpo));
  await page.evaluate(() => { document.getElementById('objective-select').closest('details').open = true; });
  await page.selectOption('#objective-select', '2');
  await urlMatches(page, /objective=dpo-precomputed/);
  const pre = await bytes(page);
  assert.ok(pre.params < dpo.params, 'no reference model in memory');
  // Offload: the host RAM line appears, the GPU figure falls.
  assert.equal(await page.isVisible('#host-ram'), false);
  await page.evaluate(() => { document.getElementById('offload-opt-input').closest('details').open = true; });
  await page.check('#offload-opt-input');
  await urlMatches(page, /offopt=1/);
  assert.equal(await page.isVisible('#host-ram'), true);
  assert.match(await page.textContent('#host-ram'), /Host RAM per node of 8 GPUs: [\d.]+ GB/);
  const off = await bytes(page);
  assert.equal(off.optimizer_state, 0);
  assert.ok(off.total < pre.total);
  // A bad combination names the conflict and shows no figure.
  await page.evaluate(() => { document.getElementById('quant-select').closest('details').open = true; });
  await page.selectOption('#quant-select', '1');
  assert.match(await page.textContent('#detailed-sentence'), /cannot be computed: .*bitsandbytes/);
  await context.close();
});

test('the issue\'s dead end: "Make it fit" lists what would, and one click applies it', async () => {
  // Llama-3.1-8B at 8,192 tokens on one 80 GB card: 171.5 GB.
  const { page, problems, context } = await open('?mode=detailed&model=llama-3.1-8b&seq=8192&batch=1&gpu=80&oh=0');
  assert.match(await page.textContent('#fit-verdict'), /^Does not fit by the step's peak by 85\.6 GB/);
  // Beside the figures, a pointer down to the verdict's ways out.
  assert.equal(await page.textContent('#fit-pointer'),
    'The step needs 171.5 GB, more than the 85.9 GB GPU: what would make it fit ↓');
  assert.equal(await page.getAttribute('#fit-pointer', 'href'), '#make-it-fit');
  await page.waitForSelector('#plan-apply-0');
  assert.equal(await page.textContent('#plan-status'),
    'Each change priced by the model (the step\'s peak, and the step time on a card of the table), the ones that fit first; each names every flag it changes. As it is, it fits a 180 GB card as sold (B200).');
  const first = await page.textContent('#make-it-fit li:first-child .plan-summary');
  assert.match(first, /^optimizer offloaded to the CPU \(ZeRO-Offload\) \(--zero 1 --offload-optimizer\): needs 59\.0 GB, saves 112\.4 GB of optimizer state; 1 GPU; compute ×1\.00\./);
  // The changes over more GPUs come apart, under their own line.
  assert.match(await page.textContent('#plan-more'), /^With more GPUs than the 1 it runs on:/);
  assert.equal(await page.textContent('#make-it-fit li:first-child .plan-verdict'), 'Fits');
  await page.click('#plan-apply-0');
  assert.match(await page.textContent('#fit-verdict'), /^Fits by the step's peak: 59\.0 of 85\.9 GB used/);
  await urlMatches(page, /offopt=1/);
  // Fitting now, the panel and the pointer have nothing to say.
  await page.waitForFunction(() => document.querySelector('#make-it-fit').hidden);
  assert.equal(await page.isVisible('#fit-pointer'), false);
  assert.deepEqual(problems, []);
  await context.close();
});

test('Lion, Muon and Adafactor from the optimizer select and the address', async () => {
  // Llama-2-7B, mixed precision: the optimizer runs on the fp32 master.
  const { page, problems, context } = await open('?mode=detailed&model=llama-2-7b&opt=lion');
  const params = 6738415616;
  assert.equal((await bytes(page)).optimizer_state, params * 4);
  await page.evaluate(() => { document.getElementById('optimizer-select').closest('details').open = true; });
  await page.selectOption('#optimizer-select', '8');
  await urlMatches(page, /opt=adafactor/);
  // A row and a column per matrix: a few megabytes for 6.7 B parameters.
  const adafactor = (await bytes(page)).optimizer_state;
  assert.ok(adafactor > 1e6 && adafactor < 20e6, String(adafactor));
  await page.selectOption('#optimizer-select', '7');
  await urlMatches(page, /opt=muon/);
  const muon = (await bytes(page)).optimizer_state;
  assert.ok(muon > params * 4 && muon < params * 8, String(muon));
  assert.deepEqual(problems, []);
  await context.close();
});

test('GRPO: the recipe generates, then trains; its rollout is on the page and in the step time', async () => {
  const { page, problems, context } = await open('?mode=detailed');
  await page.click('#recipe-grpo');
  await urlMatches(page, /objective=grpo/);
  await urlMatches(page, /completion=4096/);
  // The fused LM head keeps no logits; the rollout's cache is the next line.
  const b = await bytes(page);
  assert.equal(b.logits, 0);
  assert.match(await page.textContent('#rollout-line'),
    /^Rollout: each GPU generates 8 completions of 4096 tokens after 512-token prompts at once; their key\/value cache reaches 5\.4 GB, and the generation phase peaks at 22\.0 GB/);
  assert.match(await page.textContent('#fit-verdict'), /^Fits/);
  const legend = async () => page.$$eval('#step-time-legend li', (els) => els.map((e) => e.textContent));
  const generation = (texts) => Number(texts.find((t) => t.startsWith('generation')).match(/^generation (\d+) %/)[1]);
  const long = generation(await legend());
  assert.ok(long > 50, `${await legend()}`);
  // Shorter completions after longer prompts: the same cache, less decoding.
  await setCount(page, 'completion-input', 1024);
  await urlMatches(page, /completion=1024/);
  assert.match(await page.textContent('#rollout-line'), /8 completions of 1024 tokens after 3584-token prompts/);
  assert.ok(generation(await legend()) < long, `${await legend()}`);
  // A colocated vLLM engine takes 30 % of the H100 (25.8 GB) through the
  // step; asleep, only while generating.
  const before = (await bytes(page)).total;
  await setCount(page, 'vllm-input', 30);
  await urlMatches(page, /vllm=30/);
  assert.match(await page.textContent('#rollout-line'), /A colocated vLLM engine holds 25\.8 GB throughout\./);
  assert.match(await page.textContent('#fit-verdict'), /^Fits with the runtime overhead: [\d.]+ of 85\.9 GB/);
  await page.check('#vllm-sleep-input');
  await urlMatches(page, /vllmsleep=1/);
  assert.match(await page.textContent('#rollout-line'), /while generating, asleep in training/);
  assert.equal((await bytes(page)).total, before, 'the budget terms do not hold the engine');
  // Completions per prompt that do not divide the batch: refused, in words.
  await setCount(page, 'gens-input', 3);
  await urlMatches(page, /gens=3/);
  assert.match(await page.textContent('#detailed-sentence'), /cannot be computed: GRPO's batch counts completions: 8 sequences per step is not a multiple of 3/);
  assert.equal(await page.isVisible('#rollout-line'), false);
  assert.deepEqual(problems, []);
  await context.close();
});

test('a hybrid: Falcon-H1-7B from the list and from its config.json, its Mamba-2 mixer named, priced and carried by a link', async () => {
  const { readFileSync } = await import('node:fs');
  const { page, problems, context } = await open('?mode=detailed&model=llama-3.1-8b&seq=4096&batch=1');
  const llama = await bytes(page);
  await page.selectOption('#model-select', 'falcon-h1-7b');
  assert.equal(await page.textContent('#param-count'), '7,585,654,880');
  assert.match(await page.textContent('#active-count'),
    /^, 1,319,085,152 in a Mamba-2 mixer beside the attention in every layer \(24 heads of 128, state 256\)$/);
  await urlMatches(page, /model=falcon-h1-7b/);
  const falcon = await bytes(page);
  assert.ok(falcon.activations > llama.activations * 0.5 && falcon.params < llama.params, JSON.stringify(falcon));
  // The mixer's tensors grow with the sequence like the rest.
  const longer = await openPage(browser, page.url().replace('seq=4096', 'seq=8192'));
  const doubled = await bytes(longer.page);
  assert.ok(doubled.activations > 1.9 * falcon.activations, `${doubled.activations} vs ${falcon.activations}`);
  await longer.context.close();
  // Its config.json: the same model; a shape no preset matches travels as ssm=.
  const json = JSON.parse(readFileSync(new URL('../fixtures/configs/hub/falcon-h1-7b.json', import.meta.url), 'utf8'));
  await page.evaluate(() => { document.querySelector('.config-import').open = true; });
  json.mamba_d_state = 128;
  await page.fill('#config-input', JSON.stringify(json));
  await configSays(page, /Read as falcon_h1: [\d,]+ parameters, a Mamba-2 mixer beside the attention/);
  await urlMatches(page, /ssm=24%2C128%2C1%2C128%2C4%2C256%2C1%2C1%2C0%2C0/);
  const count = await page.textContent('#param-count');
  const again = await openPage(browser, page.url());
  assert.equal(await again.page.textContent('#param-count'), count);
  await again.context.close();
  // A bad head split is refused in words.
  json.mamba_d_head = 100;
  await page.fill('#config-input', JSON.stringify(json));
  await configSays(page, /mamba_d_head: times mamba_n_heads must equal the inner width \(3072\)/);
  assert.equal(await page.textContent('#param-count'), count);
  assert.deepEqual(problems, []);
  await context.close();
});

test('float8 from its select: torchao is faster on an H100 at the same bytes; Transformer Engine saves fp8 inputs; an A100 has no fp8', async () => {
  const { page, problems, context } = await open('?mode=detailed&model=llama-3.1-8b&seq=4096&batch=8&dp=8&zero=3&card=h100-sxm');
  const seconds = async () => {
    const m = (await page.textContent('#step-time-summary')).match(/: ([\d.]+) (ms|s) per optimizer step/);
    return Number(m[1]) * (m[2] === 'ms' ? 1e-3 : 1);
  };
  const bf16 = await seconds();
  const before = await bytes(page);
  await page.evaluate(() => { document.getElementById('fp8-select').closest('details').open = true; });
  await page.selectOption('#fp8-select', '1');
  await urlMatches(page, /fp8=tensorwise/);
  assert.ok(await seconds() < bf16, 'float8 matmuls are faster');
  assert.match(await page.textContent('#step-time-summary'), /Float8 matmuls at the card's fp8 rate/);
  assert.deepEqual(await bytes(page), before, 'torchao keeps the states and the saved activations');
  await page.selectOption('#fp8-select', '3');
  await urlMatches(page, /fp8=te/);
  const te = await bytes(page);
  assert.ok(te.activations < before.activations && te.params > before.params, JSON.stringify(te));
  await page.selectOption('#gpu-select', 'c:a100-80gb');
  assert.match(await page.textContent('#step-time-summary'), /This card has no tensor cores for this fp8 recipe/);
  assert.deepEqual(problems, []);
  await context.close();
});

test('a card of the table prices the step in time: the bar, the token budget, and the faster layouts', async () => {
  // The dead end on an H100 picked by name: the time it would take, and the
  // make-it-fit rows priced in GPU-time.
  const { page, problems, context } = await open('?mode=detailed&model=llama-3.1-8b&seq=8192&batch=1&card=h100-sxm&oh=0');
  assert.match(await page.textContent('#fit-verdict'), /^Does not fit by the step's peak by 85\.6 GB/);
  assert.match(await page.textContent('#step-time-summary'),
    /^On 1 × H100 SXM: [\d.]+ (ms|s) per optimizer step, [\d,]+ tokens\/s per GPU, \d+ model TFLOPS per GPU \(MFU [\d.]+ %, HFU [\d.]+ %\)\. By the validation on H100 SXM \(Megatron-Bridge, Megatron-Core: 15 rows, errors -12\.1 % to \+16\.1 %\): [\d.]+ (ms|s)–[\d.]+ (ms|s), [\d,]+–[\d,]+ tokens\/s per GPU, MFU [\d.]+–[\d.]+ %\.$/);
  assert.equal(await page.isVisible('#step-time-fit'), true);
  // The bar's parts fill it, in a fixed order, each named in the legend.
  const widths = await page.$$eval('#step-time-bar .time-part', (els) => els.map((e) => parseFloat(e.style.width)));
  assert.ok(widths.length >= 3, `${widths}`);
  assert.ok(Math.abs(widths.reduce((a, b) => a + b, 0) - 100) < 1, `${widths}`);
  assert.match(await page.textContent('#step-time-legend li:first-child'), /^matmul \d+ %/);
  await page.waitForSelector('#plan-apply-0');
  assert.match(await page.textContent('#make-it-fit li:first-child .plan-summary'),
    /^optimizer offloaded to the CPU \(ZeRO-Offload\) \(--zero 1 --offload-optimizer\): .*GPU-time per token \+\d+ %\./);
  // A token budget: days and GPU-hours at this rate.
  await page.fill('#tokens-input', '1e9');
  await page.press('#tokens-input', 'Tab');
  assert.match(await page.textContent('#step-time-budget'), /^1e9 tokens: [\d.]+ days \([\d.]+–[\d.]+ by the validation on H100 SXM\) on 1 GPU, [\d,]+ GPU-hours\.$/);
  await urlMatches(page, /[?&]tokens=1000000000(&|$)/);
  // Each of the planner's rows says its own days.
  assert.match(await page.textContent('#make-it-fit li:first-child .plan-summary'), / [\d.]+ days on 1 GPU\.$/);
  await page.fill('#price-input', '3');
  await page.press('#price-input', 'Tab');
  await urlMatches(page, /[?&]price=3(&|$)/);
  const [, hours, cost] = (await page.textContent('#step-time-budget')).match(/([\d,]+) GPU-hours, ([\d,]+) \([\d,]+–[\d,]+\) at 3\.00 per GPU-hour\.$/);
  const n = (x) => Number(x.replaceAll(',', ''));
  assert.ok(Math.abs(n(cost) - 3 * n(hours)) <= 3, `${hours} ${cost}`);
  await page.fill('#tokens-input', 'lots');
  await page.press('#tokens-input', 'Tab');
  assert.match(await page.textContent('.step-time .field-message'), /Tokens must be a number/);
  await context.close();
  assert.deepEqual(problems, []);
});

test('"Faster and still fits": a fitting layout on 8 H100s, one click to a faster one', async () => {
  const { page, problems, context } = await open(
    '?mode=detailed&model=llama-3.1-8b&seq=4096&batch=64&dp=8&zero=3&micro=1&recompute=full&card=h100-sxm&oh=0');
  assert.match(await page.textContent('#fit-verdict'), /^Fits by the step's peak/);
  const before = await page.textContent('#step-time-summary');
  const seconds = (t) => {
    const m = t.match(/: ([\d.]+) (ms|s) per optimizer step/);
    return parseFloat(m[1]) * (m[2] === 'ms' ? 1e-3 : 1);
  };
  await page.waitForSelector('#plan-apply-0');
  assert.equal(await page.textContent('#plan-title'), 'Faster and still fits');
  const row = await page.textContent('#make-it-fit li:first-child .plan-summary');
  assert.match(row, /^--micro-batch 2 --recompute none --zero 2: [\d.]+ s per step \(-\d+ %\)/);
  await page.click('#plan-apply-0');
  await urlMatches(page, /micro=2/);
  await urlMatches(page, /zero=2/);
  await urlLacks(page, /recompute=/);
  assert.match(await page.textContent('#fit-verdict'), /^Fits by the step's peak/);
  assert.ok(seconds(await page.textContent('#step-time-summary')) < seconds(before));
  // Picking another card by name keeps the address in step.
  await page.selectOption('#gpu-select', 'c:a100-80gb');
  await urlMatches(page, /card=a100-80gb/);
  assert.match(await page.textContent('#step-time-summary'), /^On 8 × A100 SXM 80GB:/);
  // Memory alone has no speeds: no step time.
  await page.selectOption('#gpu-select', 'p80');
  assert.equal(await page.isVisible('#step-time'), false);
  await context.close();
  assert.deepEqual(problems, []);
});

test('context parallelism from the address: 128k tokens on 8 H100s, the sequence split 8 ways', async () => {
  const { page, problems, context } = await open(
    '?mode=detailed&model=llama-3.1-8b&seq=131072&batch=1&recompute=full&zero=3&cp=8&card=h100-sxm&oh=0');
  assert.match(await page.textContent('#detailed-computed'), /8 GPUs \(dp 1 × tp 1 × pp 1 × cp 8\)/);
  assert.match(await page.textContent('#fit-verdict'), /^Fits by the step's peak: 35\.1 of 85\.9 GB used/);
  assert.match(await page.textContent('#step-time-summary'), /^On 8 × H100 SXM: /);
  // Eager attention cannot split the sequence: named, not drawn.
  await page.evaluate(() => { document.getElementById('attention-select').closest('details').open = true; });
  await page.selectOption('#attention-select', { label: 'Eager (keeps a·s² scores)' });
  assert.match(await page.textContent('#detailed-sentence'), /cannot be computed: context parallelism needs flash attention/);
  await context.close();
  assert.deepEqual(problems, []);
});

test('the framework picker: DDP buckets double the gradients, bucket views undo it, the address keeps it', async () => {
  const { page, problems, context } = await open('?mode=detailed&model=llama-2-7b&dp=2&framework=ddp');
  const ddp = await bytes(page);
  await page.evaluate(() => { document.getElementById('framework-select').closest('details').open = true; });
  await page.selectOption('#framework-select', { label: 'PyTorch DDP, gradient_as_bucket_view' });
  await urlMatches(page, /framework=ddp-bucket-view/);
  const view = await bytes(page);
  assert.equal(ddp.grads, 2 * view.grads);
  // FSDP2 needs ZeRO-3: refused with the reason until it is set.
  await page.selectOption('#framework-select', { label: 'PyTorch FSDP2 (ZeRO-3)' });
  assert.match(await page.textContent('#detailed-sentence'), /cannot be computed: FSDP2 shards/);
  await context.close();
  assert.deepEqual(problems, []);
});

test('DeepSpeed in the framework picker: its fp32 partition and bucket, and at ZeRO-3 the bucket kept from start-up; the all-to-all exchange of context parallelism', async () => {
  const { page, problems, context } = await open('?mode=detailed&model=llama-3.2-1b&dp=4&zero=2');
  const doc = async () => {
    await page.click('#copy-json');
    return JSON.parse(await page.inputValue('#export-text'));
  };
  const megatron = await doc();
  assert.match(await page.textContent('#peak-explanation'), /during loss \(forward phase\)/);
  await page.evaluate(() => { document.getElementById('framework-select').closest('details').open = true; });
  await page.selectOption('#framework-select', { label: 'DeepSpeed (fp32 partition, 5e8-value bucket)' });
  await urlMatches(page, /framework=deepspeed/);
  const ds = await doc();
  // Mixed precision: the fp32 master partition is Megatron's too. DeepSpeed
  // allocates its gradient partitions each step, and its 1 GB bucket (5e8
  // bf16 values) from the first gradient on moves the peak there.
  assert.equal(ds.bytes.master_weights, megatron.bytes.master_weights);
  assert.match(await page.textContent('#peak-explanation'),
    /during output layer backward.* Of the transient buffers, 1\.0 GB is DeepSpeed's gradient bucket/);
  await setCount(page, 'zero-input', 3);
  await urlMatches(page, /zero=3/);
  assert.doesNotMatch(await page.textContent('#detailed-sentence'), /cannot be computed/);
  assert.match(await page.textContent('#peak-explanation'),
    /Of the transient buffers, 1\.0 GB is DeepSpeed's gradient bucket \(reduce_bucket_size\), allocated at start-up and kept\./);
  // Stage 3 partitions the bf16 weights too.
  const ds3 = await doc();
  assert.ok(ds3.bytes.params < ds.bytes.params / 3, `${ds3.bytes.params} vs ${ds.bytes.params}`);
  await context.close();
  assert.deepEqual(problems, []);

  // Context parallelism's exchange: the ring overlaps, the all-to-all shows in the time bar.
  const second = await open('?mode=detailed&model=llama-3.1-8b&seq=131072&batch=1&cp=8&recompute=full&card=h100-sxm');
  const legend = () => second.page.textContent('#step-time-legend');
  assert.doesNotMatch(await legend(), /context parallel/);
  await second.page.evaluate(() => { document.getElementById('cp-comm-select').closest('details').open = true; });
  await second.page.selectOption('#cp-comm-select', { label: 'All-to-all (a2a, Ulysses; heads divisible by cp)' });
  await urlMatches(second.page, /cpcomm=a2a/);
  assert.match(await legend(), /context parallel \d+ %/);
  await setCount(second.page, 'cp-input', 16);
  assert.match(await second.page.textContent('#detailed-sentence'), /cannot be computed: all-to-all context parallelism/);
  await second.context.close();
  assert.deepEqual(second.problems, []);
});

test('the step chart says which GPU it shows: a pipeline stage, or any of alike GPUs', async () => {
  const { page, problems, context } = await open('?mode=detailed&model=llama-3.1-70b&seq=4096&batch=16&micro=1&tp=8&sp=1&pp=4');
  assert.match(await page.textContent('#peak-explanation'),
    /Shown: pipeline stage 1 of 4, the one with the higher peak \(the first holds the micro-batches in flight, the last the logits\); its 8 GPUs are alike\./);
  const fit = await page.textContent('#fit-verdict');
  // The reader picks the last stage: the chart and its sentence follow, the verdict keeps the first's peak.
  await page.evaluate(() => { document.getElementById('stage-select').closest('details').open = true; });
  await page.selectOption('#stage-select', { label: 'Last (logits and loss)' });
  await urlMatches(page, /stage=last/);
  assert.match(await page.textContent('#peak-explanation'),
    /Shown: pipeline stage 4 of 4, as picked; stage 1 peaks higher, at [\d.]+ GB, and decides the fit\. Its 8 GPUs are alike\./);
  assert.match(await page.textContent('#peak-explanation'), /during (loss|output layer backward|loss backward)/);
  assert.equal(await page.textContent('#fit-verdict'), fit);
  await page.selectOption('#stage-select', { label: 'The one with the higher peak' });
  await page.evaluate(() => { document.getElementById('pp-input').closest('details').open = true; });
  await page.fill('#pp-input', '1');
  await page.press('#pp-input', 'Tab');
  assert.match(await page.textContent('#peak-explanation'), /Shown: any one of the 8 GPUs; they are alike\./);
  await context.close();
  assert.deepEqual(problems, []);
});

test('hybrid sharding: a shard group of 8 among 16 data-parallel GPUs holds the states 8 GPUs would; the address keeps it', async () => {
  const { page, problems, context } = await open('?mode=detailed&model=llama-3.1-8b&dp=16&zero=3&batch=16');
  const whole = await bytes(page);
  await setCount(page, 'shard-input', 8);
  await urlMatches(page, /shard=8/);
  const hybrid = await bytes(page);
  assert.ok(Math.abs(hybrid.optimizer_state / whole.optimizer_state - 2) < 1e-6);
  assert.ok(Math.abs(hybrid.params / whole.params - 2) < 1e-6);
  // A group that does not divide dp is refused, with the reason on screen.
  await setCount(page, 'shard-input', 6);
  assert.match(await page.textContent('#detailed-sentence'), /must divide the data-parallel GPUs/);
  await context.close();
  assert.deepEqual(problems, []);
});

test('per-operator checkpointing (torchtitan): between full and none in memory, its cost in the step time; refused with LoRA in words', async () => {
  const { page, problems, context } = await open('?mode=detailed&model=llama-3.1-8b&seq=4096&batch=2&impl=hf&recompute=full&card=h100-sxm');
  const full = await bytes(page);
  const stepOf = async () => {
    const m = (await page.textContent('#step-time-summary')).match(/: ([\d.]+) (ms|s) per optimizer step/);
    return Number(m[1]) * (m[2] === 'ms' ? 1e-3 : 1);
  };
  const fullStep = await stepOf();
  await page.evaluate(() => { document.getElementById('recompute-select').closest('details').open = true; });
  await page.selectOption('#recompute-select', '2');
  await urlMatches(page, /recompute=selective-op/);
  const op = await bytes(page);
  const opStep = await stepOf();
  await page.selectOption('#recompute-select', '0');
  await urlLacks(page, /recompute=/);
  const none = await bytes(page);
  assert.ok(full.activations < op.activations && op.activations < none.activations,
    `${full.activations} ${op.activations} ${none.activations}`);
  // Beyond full recomputation's input, each layer keeps q, v, the gate,
  // the down projection's output and SDPA's output and fp32 log-sum-exp:
  // at 2 × 4,096 tokens in bf16 over 32 layers, exactly
  // 32 · 8,192 · (2·(4096 + 1024 + 14336 + 4096 + 4096) + 4·32) bytes.
  assert.equal(op.activations - full.activations, 32 * 8192 * (2 * (4096 + 1024 + 14336 + 4096 + 4096) + 4 * 32));
  // It reruns less than full recomputation does.
  assert.ok(opStep < fullStep, `${opStep} ${fullStep}`);
  // With LoRA the adapters' multiplies join the count: refused, in words.
  await page.selectOption('#recompute-select', '2');
  await urlMatches(page, /recompute=selective-op/);
  await setCount(page, 'lora-input', 16);
  assert.match(await page.textContent('#detailed-sentence'), /per-operator checkpointing with LoRA is not modelled/);
  await context.close();
  assert.deepEqual(problems, []);
});

test('at 1,280 px no select cuts off its longest option (detailed mode)', async () => {
  const { page, context } = await open('?mode=detailed&model=llama-3.1-8b&card=h100-sxm', { viewport: { width: 1280, height: 900 } });
  await page.evaluate(() => document.querySelectorAll('details').forEach((d) => { d.open = true; }));
  // Each select's widest option, in its own font, against the room its box
  // leaves inside the padding and the arrow (20 px).
  const cut = await page.evaluate(() => {
    const ctx = document.createElement('canvas').getContext('2d');
    return [...document.querySelectorAll('select')].filter((s) => s.clientWidth > 0).map((s) => {
      const cs = getComputedStyle(s);
      ctx.font = `${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
      const room = s.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) - 20;
      const widest = Math.max(...[...s.options].map((o) => ctx.measureText(o.text).width));
      return widest > room ? `${s.id}: ${Math.round(widest)} px in ${Math.round(room)}` : null;
    }).filter(Boolean);
  });
  assert.deepEqual(cut, []);
  await context.close();
});

test('the link keeps the question: tokens and price open with the page, a 2,048-sequence batch opens as it is', async () => {
  const { page, context, problems } = await open('?batch=2048&seq=8192&card=h100-sxm&mode=detailed&model=llama-3.1-70b&dp=8&tp=8&sp=1&zero=1&micro=1&recompute=full&tokens=1000000000000&price=2');
  assert.equal(await page.inputValue('#batch-input'), '2048');
  assert.equal(await page.inputValue('#tokens-input'), '1e12');
  assert.equal(await page.inputValue('#price-input'), '2');
  assert.match(await page.textContent('#step-time-budget'), /^1e12 tokens: [\d.]+ days \([\d.]+–[\d.]+ by the validation on H100 SXM\) on 64 GPUs, [\d,]+ GPU-hours, [\d,]+ \([\d,]+–[\d,]+\) at 2\.00 per GPU-hour\.$/);
  await context.close();
  assert.deepEqual(problems, []);
});

test('Megatron\'s overlaps and FP8 weights are the page\'s to set, kept in the address and priced in the step', async () => {
  const { page, context } = await open('?mode=detailed&model=llama-3.1-8b&seq=8192&batch=64&micro=1&dp=8&zero=1&fp8=te&card=h100-sxm&ovgrad=0&ovparam=0');
  await page.evaluate(() => { for (const d of document.querySelectorAll('details')) d.open = true; });
  assert.equal(await page.isChecked('#ovgrad-input'), false);
  assert.equal(await page.isChecked('#ovparam-input'), false);
  assert.equal(await page.isChecked('#ovtp-input'), true);
  const legend = () => page.textContent('#step-time-legend, .time-legend');
  assert.match(await legend(), /data parallel/);
  // Both overlaps on: the gradients' reduction and the gather hide behind compute.
  await page.check('#ovgrad-input');
  await page.check('#ovparam-input');
  await urlLacks(page, /ov(grad|param)=/);
  assert.doesNotMatch(await legend(), /data parallel/);
  // FP8 weights: the layers' bf16 copy is gone.
  const before = await bytes(page);
  await page.check('#fp8param-input');
  await urlMatches(page, /fp8param=1/);
  const after = await bytes(page);
  assert.equal(before.params - after.params, 2 * 6979321856);
  // Under another framework the overlaps are not Megatron's to show.
  await page.selectOption('#framework-select', { index: 3 });
  assert.equal(await page.isVisible('#megatron-overlaps'), false);
  await context.close();
});

test('Megatron\'s expert all-to-all overlap: off by default, its switch shortens the step, rides in the address, and a pipeline without interleaving is refused on screen', async () => {
  const { page, problems, context } = await open('?mode=detailed&model=qwen3-30b-a3b&seq=4096&batch=128&micro=1&dp=16&ep=16&card=h100-sxm');
  await page.evaluate(() => { for (const d of document.querySelectorAll('details')) d.open = true; });
  const seconds = async () => {
    const m = (await page.textContent('#step-time-summary')).match(/: ([\d.]+) (ms|s) per optimizer step/);
    return Number(m[1]) * (m[2] === 'ms' ? 1e-3 : 1);
  };
  assert.equal(await page.isChecked('#ovmoe-input'), false);
  const exposed = await seconds();
  await page.check('#ovmoe-input');
  await urlMatches(page, /ovmoe=1/);
  assert.ok(await seconds() < exposed);
  // Megatron-Core's refusal: a pipeline needs interleaving for it.
  await setCount(page, 'pp-input', 2);
  await page.waitForFunction(() => document.body.textContent.includes('needs interleaving with a pipeline: --vp 2 or more'));
  await context.close();
  assert.deepEqual(problems, []);
});

test('Megatron\'s whole-module recomputation from its boxes: moe keeps a MoE layer\'s input alone, rides in the address, and refuses the all-to-all overlap on screen', async () => {
  const { page, problems, context } = await open('?mode=detailed&model=qwen3-30b-a3b&seq=4096&batch=64&micro=1&dp=8&ep=8&card=h100-sxm');
  await page.evaluate(() => { for (const d of document.querySelectorAll('details')) d.open = true; });
  const kept = await bytes(page);
  assert.equal(await page.isChecked('#rm-moe-input'), false);
  await page.check('#rm-moe-input');
  await urlMatches(page, /rmods=moe(&|$)/);
  const whole = await bytes(page);
  // Qwen3-30B-A3B's 48 MoE layers: the router's logits and the experts' tensors go.
  assert.ok(whole.activations < 0.5 * kept.activations, `${whole.activations} ${kept.activations}`);
  await page.check('#ovmoe-input');
  await page.waitForFunction(() => document.body.textContent.includes("runs without the moe module's recomputation"));
  await context.close();
  assert.deepEqual(problems, []);
});

test('Megatron\'s offloaded first layers: the count turns the offload on, keeps the other layers on the GPU, rides in the address, and Megatron\'s limits are said on screen', async () => {
  const { page, problems, context } = await open('?mode=detailed&model=llama-3.1-8b&seq=8192&batch=8&micro=1&dp=8&zero=1');
  const kept = await bytes(page);
  await setCount(page, 'offload-layers-input', 16);
  await urlMatches(page, /offlayers=16/);
  await urlMatches(page, /offacts=1/);
  assert.equal(await page.isChecked('#offload-acts-input'), true);
  const half = await bytes(page);
  // Every layer on the host keeps one in flight; 16 of 32 keep 17.
  await setCount(page, 'offload-layers-input', '');
  await urlLacks(page, /offlayers=/);
  const all = await bytes(page);
  const layer = (kept.activations - all.activations) / 31;
  assert.ok(Math.abs(kept.activations - half.activations - 15 * layer) < 1e3,
    `${kept.activations} ${half.activations} ${all.activations}`);
  // Megatron-Core refuses it with recomputation, and so does the page, in words.
  await setCount(page, 'offload-layers-input', 16);
  await page.evaluate(() => { document.getElementById('recompute-select').closest('details').open = true; });
  await page.selectOption('#recompute-select', '3');
  assert.match(await page.textContent('#detailed-sentence'), /CPU offloading runs without recomputation/);
  await context.close();
  assert.deepEqual(problems, []);
  // NVIDIA's GB200 recipe (40 of 80 layers offloaded), which ran: over the
  // card by the allocator's fragmentation band alone, it may run at the edge.
  const gb200 = await open('?mode=detailed&model=llama-3.1-70b&seq=8192&batch=128&micro=2&dp=64&zero=3&fp8=te&fp8param=1&card=gb200&offacts=1&offlayers=40');
  assert.match(await gb200.page.textContent('#fit-verdict'),
    /^Does not fit with the runtime overhead by 24\.0 GB: needs 223\.7 GB, the GPU has 199\.7 GB\. Without the allocator's fragmentation band it needs 194\.7 GB, so it may run at the card's edge/);
  await gb200.context.close();
  assert.deepEqual(gb200.problems, []);
});
