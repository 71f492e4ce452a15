//! The page's state in a URL query string, and back.
//!
//! ```
//! use membudget::state::PageState;
//! use membudget::url::{decode, encode};
//!
//! let state = PageState::default();
//! let query = encode(&state);
//! assert_eq!(query, "params=7&batch=4&seq=2048&hidden=4096&layers=32&mixed=1");
//! assert_eq!(decode(&query).state, state);
//!
//! // What cannot be used falls back to the default, and says so.
//! let d = decode("?batch=0&colour=red");
//! assert_eq!(d.state, state);
//! assert_eq!(d.ignored[0].to_string(), "batch: Batch size must be at least 1 (got 0)");
//! ```
//!
//! Keys: `params batch seq hidden layers` (numbers), `mixed` (`1`/`0`),
//! `base` (a pinned baseline: `params,batch,seq,hidden,layers,mixed`),
//! `gpu` (`80` or `80gib` for a card sold as 80 GB, `85.9gb` in decimal GB),
//! `card` (a card of the table by key, `h100-sxm`: its memory and speeds),
//! `unit` (`gb`/`gib`), `sweep` (`batch`/`seq`), `embed` (`1`), `ex` (`1`/`2`).
//! The detailed model: `mode=detailed`, `model` (a preset) or `arch heads kv
//! ffn vocab tied qkvbias hd rot qknorm sandwich softcap sinks mla moe` (`mla` =
//! `q_rank,kv_rank,rope,nope,v`; `moe` = `experts,top_k,expert_ffn,shared_ffn,dense_layers,router`;
//! `ssm`, a Mamba-2 mixer beside the attention = `heads,head_dim,groups,state,conv,chunk` and
//! four 0/1 flags: gated norm, conv bias, in_proj bias, out_proj bias),
//! `prec opt optbwd attn dropout recompute rmods impl` (`optbwd=1`: the optimizer in backward; `rmods`: Megatron-Core's recomputed modules, comma-separated, of layernorm, moe_act, mla_up_proj), `fp8` (none, tensorwise, rowwise, te, te-mxfp8), `fp8param` (`1`: FP8 primary weights, Megatron's `--fp8-param-gather`), `framework` (megatron, ddp,
//! ddp-bucket-view, fsdp2, fsdp2-no-reshard, deepspeed, fsdp1, fsdp1-grad-op, fsdp1-no-shard; FSDP's CPU offload is `offopt=1&offparams=1`) and after it DeepSpeed's `dsbucket dsprefetch dssubgroup
//! dspersist` (values) and `dsoverlap` (1/0; absent: DeepSpeed's default per stage), `schedule` (1f1b, zb-h1), `cpcomm` (p2p, a2a), `tpplan` (megatron, hf, torchtitan, loss-parallel, layers),
//! Megatron-Core's overlaps `ovgrad ovparam ovtp` (1/0: the gradients' reduction, the
//! parameters' gather, the tensor-parallel overlap; written only when off), `stage` (the
//! pipeline stage the step chart shows: peak, first, last),
//! `dp zero tp sp pp ep etp cp
//! micro`, `shard` (hybrid sharding's group), `lora`, `lorat` (LoRA targets), `loradtype` (fp32, bf16: the adapters'), `loradrop` (LoRA dropout, percent 1–99), `qpath` (peft, bnb, torchao, fsdp-qlora: whose code holds the quantized base), `quant` (none, nf4, nf4-nodq,
//! int8), `offopt offparams offacts gpn` (offload, GPUs per node), `actoff` (whose activation offload: save-on-cpu, torchtune, checkpoints), `offlayers` (Megatron-Core's offloaded first layers),
//! `objective` (sft, dpo, dpo-precomputed, grpo, grpo-kl) with GRPO's `completion` (tokens),
//! `gens` (completions per prompt), `vllm` (a colocated vLLM engine's percent of the card) and
//! `vllmsleep`, `trainer` (the trainer chosen: its name as `--trainer` spells it; the
//! settings its defaults changed are in their own keys), `both` (the lesson's bar beside), `oh=0` (the runtime
//! overhead left out of the verdict; it is counted by default, and an old
//! address's `oh=1` is read as that default) with `ohctx`, `ohws`, `ohcomm`
//! (GB) and `ohfrag` (percent), which turn it back on.
//! The step time's question: `tokens` (to train on, 1 to 10¹⁸) and `price`
//! (per GPU-hour, 0 to 1,000,000).
//! Detailed mode's comparison: `dbase` (a pinned configuration): its keys
//! that differ from the page's, as `key.value` joined by `*`, a key alone
//! where the pinned one has none (`dbase=zero.1*micro`); after a leading
//! `*`, all of its own keys.
//! Unknown keys are ignored without a word; a known key with a bad value is
//! reported in [`Decoded::ignored`] and its default kept. The limits are the
//! command line's (a detailed batch to 2²⁰); what the keys allow one by one
//! but not together is repaired to the nearest configuration that computes,
//! and reported too (`repair`).

use crate::budget::{Field, TrainingConfig};
use crate::detailed::{preset, Architecture, Family, Mla, Moe, Overhead, Profile, PRESETS};
use crate::number::{read, std_to_f64, ToF64};
use crate::state::{
    DetailedOptions, Exercise, GpuCapacity, Mode, PageState, Pinned, SweepAxis, Unit,
};
use std::fmt;

/// A value from the URL that was not used, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Ignored {
    /// The key, shortened to 40 characters.
    pub key: String,
    /// The value as given (percent-decoded), shortened to 40 characters.
    pub value: String,
    /// Why it was not used.
    pub reason: String,
}

/// `key: reason`. The raw value is left out: it is the reader's to see in
/// the address bar, and echoing it would put arbitrary text (or a literal
/// "NaN") on the page.
impl fmt::Display for Ignored {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.reason)
    }
}

/// What [`decode`] found.
#[derive(Clone, Debug, PartialEq)]
pub struct Decoded {
    /// The state: defaults wherever the URL had nothing usable.
    pub state: PageState,
    /// Values that were present but not used.
    pub ignored: Vec<Ignored>,
}

/// Shortens untrusted text for display (by characters, not bytes).
fn shorten(text: &str) -> String {
    const MAX: usize = 40;
    if text.chars().count() <= MAX {
        text.to_string()
    } else {
        text.chars().take(MAX - 1).chain(['…']).collect()
    }
}

/// Reads the page state from a query string (with or without the leading
/// `?`). Never fails: what it cannot use it lists in [`Decoded::ignored`].
pub fn decode(query: &str) -> Decoded {
    decode_with(query, std_to_f64)
}

/// [`decode`] with the decimal conversion `to_f64` (see [`crate::number`]:
/// the page passes the browser's).
pub fn decode_with(query: &str, to_f64: ToF64) -> Decoded {
    let Decoded {
        mut state,
        mut ignored,
    } = decode_keys(query, to_f64);
    repair(&mut state, &mut ignored);
    read_pin_key(
        query.trim_start_matches('?'),
        &mut state,
        &mut ignored,
        to_f64,
    );
    Decoded { state, ignored }
}

/// Each key of `query` read into the state, before [`repair`]: for a
/// reader that sets more of the state after the keys (a trainer's file).
pub(crate) fn decode_keys(query: &str, to_f64: ToF64) -> Decoded {
    let query = query.strip_prefix('?').unwrap_or(query);
    let mut state = PageState::default();
    let mut ignored = Vec::new();
    let mut recompute_given = false;
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        recompute_given |= key == "recompute";
        let outcome = apply(&mut state, &key, &value, to_f64);
        if let Err(reason) = outcome {
            ignored.push(Ignored {
                key: shorten(&key),
                value: shorten(&value),
                reason,
            });
        }
    }
    // Recomputation left out follows the objective (GRPO checkpoints by
    // default), as the command line and the objective select do.
    if !recompute_given {
        state.detailed.recompute =
            crate::detailed::config::defaults::recompute(state.detailed.objective);
    }
    Decoded {
        state: state.normalized(),
        ignored,
    }
}

/// What the keys allow one by one but not together, repaired to the
/// nearest configuration that computes, and said: the lesson's batch of at
/// most 1,024 and sequence of at most 131,072, and the detailed model's batch, a whole number of
/// micro-batch × dp (the nearest multiple).
pub(crate) fn repair(state: &mut PageState, ignored: &mut Vec<Ignored>) {
    let (seq, lesson_seq) = (state.config.seq_len, Field::SeqLen.range().1 as u32);
    if state.mode != Mode::Detailed && seq > lesson_seq {
        state.config.seq_len = lesson_seq;
        ignored.push(Ignored {
            key: "seq".into(),
            value: seq.to_string(),
            reason: format!(
                "the lesson's sequence is at most {lesson_seq} (the detailed model's 1048576); using {lesson_seq}"
            ),
        });
    }
    let batch = u64::from(state.config.batch);
    if let Some((to, reason)) = repaired_batch(state, batch) {
        state.config.batch = to as u32;
        ignored.push(Ignored {
            key: "batch".into(),
            value: batch.to_string(),
            reason: format!("{reason}; using {to}"),
        });
    }
}

/// The batch [`repair`] puts in place of `batch`, and why; `None` when it
/// stands.
fn repaired_batch(state: &PageState, batch: u64) -> Option<(u64, String)> {
    let lesson_max = Field::Batch.range().1 as u64;
    if state.mode != Mode::Detailed {
        return (batch > lesson_max).then(|| {
            (
                lesson_max,
                format!(
                    "the lesson's batch is at most {lesson_max} (the detailed model's 1048576)"
                ),
            )
        });
    }
    // `DetailedConfig::micro`'s rule, read from the options (the light
    // page's wasm carries this decoder, not the detailed configuration).
    let dp = state.detailed.parallel.dp.max(1);
    let unit = state.detailed.micro_batch.unwrap_or(batch / dp).max(1) * dp;
    let most = crate::budget::DETAILED_BATCH_MAX as u64 / unit * unit;
    if batch.is_multiple_of(unit) || most == 0 {
        return None;
    }
    let nearest = ((batch + unit / 2) / unit * unit).clamp(unit, most);
    Some((
        nearest,
        format!("batch must be a multiple of micro-batch × dp ({unit})"),
    ))
}

/// The detailed settings that are a whole number in a range: key, least,
/// most, and where it goes.
type Count = (&'static str, u64, u64, fn(&mut DetailedOptions) -> &mut u64);
const COUNTS: [Count; 19] = [
    ("heads", 1, 1024, |d| &mut d.arch.heads),
    ("pos", 0, 1 << 20, |d| &mut d.arch.positions),
    ("kv", 1, 1024, |d| &mut d.arch.kv_heads),
    ("ffn", 1, 1 << 20, |d| &mut d.arch.ffn),
    ("vocab", 1, 1 << 22, |d| &mut d.arch.vocab),
    ("hd", 1, 1 << 12, |d| &mut d.arch.head_width),
    ("rot", 1, 1 << 12, |d| &mut d.arch.rotary_dims),
    ("gpn", 1, 72, |d| &mut d.offload.gpus_per_node),
    ("offlayers", 1, 1 << 20, |d| {
        &mut d.offload.activation_layers
    }),
    ("dp", 1, 4096, |d| &mut d.parallel.dp),
    ("tp", 1, 512, |d| &mut d.parallel.tp),
    ("pp", 1, 256, |d| &mut d.parallel.pp),
    ("vp", 1, 64, |d| &mut d.parallel.vp),
    ("ep", 1, 4096, |d| &mut d.parallel.ep),
    ("etp", 1, 512, |d| &mut d.parallel.etp),
    ("cp", 1, 64, |d| &mut d.parallel.cp),
    ("completion", 1, 1 << 24, |d| &mut d.rollout.completion),
    ("gens", 1, 4096, |d| &mut d.rollout.generations),
    ("lchunks", 1, 4096, |d| &mut d.loss_chunks),
];

/// The detailed settings that are on or off (`1`/`0`): key, where it goes.
type Flag = (&'static str, fn(&mut DetailedOptions) -> &mut bool);
const FLAGS: [Flag; 21] = [
    ("vllmsleep", |d| &mut d.vllm_sleep),
    ("ovgrad", |d| &mut d.overlap.grad_reduce),
    ("ovparam", |d| &mut d.overlap.param_gather),
    ("ovtp", |d| &mut d.overlap.tp_comm),
    ("ovmoe", |d| &mut d.overlap.moe_a2a),
    ("fp8param", |d| &mut d.fp8_param),
    ("optbwd", |d| &mut d.optimizer_in_backward),
    ("compile", |d| &mut d.compile),
    ("asynctp", |d| &mut d.async_tp),
    ("tied", |d| &mut d.arch.tied_embeddings),
    ("qkvbias", |d| &mut d.arch.qkv_bias),
    ("qknorm", |d| &mut d.arch.qk_norm),
    ("sandwich", |d| &mut d.arch.sandwich_norms),
    ("softcap", |d| &mut d.arch.softcap),
    ("sinks", |d| &mut d.arch.attention_sinks),
    ("offopt", |d| &mut d.offload.optimizer),
    ("offparams", |d| &mut d.offload.params),
    ("offacts", |d| &mut d.offload.activations),
    ("dropout", |d| &mut d.dropout),
    ("sp", |d| &mut d.parallel.sp),
    ("both", |d| &mut d.show_lesson),
];

/// The detailed settings that are one of their names (as the command line
/// spells them): key, and how it is read into place.
type Choice = (
    &'static str,
    fn(&mut DetailedOptions, &str) -> Result<(), String>,
);
const CHOICES: [Choice; 20] = [
    ("prec", |d, v| v.parse().map(|x| d.precision = x)),
    ("fp8", |d, v| v.parse().map(|x| d.fp8 = x)),
    ("opt", |d, v| v.parse().map(|x| d.optimizer = x)),
    ("attn", |d, v| v.parse().map(|x| d.attention = x)),
    ("recompute", |d, v| v.parse().map(|x| d.recompute = x)),
    ("rmods", |d, v| v.parse().map(|x| d.recompute_modules = x)),
    ("quant", |d, v| v.parse().map(|x| d.base_quant = x)),
    ("qpath", |d, v| v.parse().map(|x| d.quant_path = x)),
    ("objective", |d, v| v.parse().map(|x| d.objective = x)),
    ("lorat", |d, v| v.parse().map(|x| d.lora_targets = x)),
    ("loradtype", |d, v| v.parse().map(|x| d.lora_dtype = x)),
    ("framework", |d, v| v.parse().map(|x| d.framework = x)),
    ("schedule", |d, v| {
        v.parse().map(|x| d.parallel.schedule = x)
    }),
    ("cpcomm", |d, v| v.parse().map(|x| d.parallel.cp_comm = x)),
    ("cscope", |d, v| v.parse().map(|x| d.compile_scope = x)),
    ("tpplan", |d, v| v.parse().map(|x| d.parallel.set_plan(x))),
    ("stage", |d, v| v.parse().map(|x| d.stage_shown = x)),
    ("trainer", |d, v| {
        v.parse()
            .map(|x: crate::detailed::trainers::choice::Trainer| d.trainer = Some(x.0))
    }),
    ("actoff", |d, v| {
        v.parse().map(|x| d.offload.activations_by = x)
    }),
    ("loss", |d, v| {
        d.loss = (v != "auto").then(|| v.parse()).transpose()?;
        Ok(())
    }),
];

/// The keys the light lesson page reads ([`decode_lesson`]) into `state`:
/// the five inputs (in the detailed model's ranges when `detailed_ranges`),
/// `mixed`, the card and its memory, the unit, the sweep, `embed` and the
/// step time's question. `None` for any other key.
fn apply_lesson(
    state: &mut PageState,
    key: &str,
    value: &str,
    to_f64: ToF64,
    detailed_ranges: bool,
) -> Option<Result<(), String>> {
    if let Some(field) = Field::ALL.into_iter().find(|f| f.key() == key) {
        let set = field
            .parse_in(value, to_f64, detailed_ranges)
            .and_then(|v| state.config.with_in(field, v, detailed_ranges));
        return Some(set.map(|c| state.config = c).map_err(|e| e.to_string()));
    }
    let done = match key {
        "mixed" => parse_flag(value).map(|on| state.config.mixed_precision = on),
        "gpu" => parse_gpu(value, to_f64).map(|gpu| state.gpu = Some(gpu)),
        "card" => read_card(state, value),
        "unit" => match value {
            "gb" => Ok(Unit::Gb),
            "gib" => Ok(Unit::Gib),
            _ => Err("unit must be gb or gib".into()),
        }
        .map(|u| state.unit = u),
        "sweep" => match value {
            "batch" => Ok(SweepAxis::Batch),
            "seq" => Ok(SweepAxis::SeqLen),
            _ => Err("sweep must be batch or seq".into()),
        }
        .map(|a| state.sweep = a),
        "embed" => parse_flag(value).map(|on| state.embed = on),
        // The question the step time answers: the token budget and a
        // GPU-hour's price.
        "tokens" => {
            parse_number(value, crate::state::TOKENS, to_f64).map(|t| state.tokens = Some(t))
        }
        "price" => parse_number(value, crate::state::PRICE, to_f64).map(|p| state.price = Some(p)),
        _ => return None,
    };
    Some(done)
}

/// The light lesson page's reader (`src/light.rs`): the lesson's keys
/// alone, each in the lesson's own range, and `mode=lesson`. `None` for an
/// address it leaves to the full decoder, unread: any other key (the
/// detailed model's, a baseline, an exercise, one [`decode`] ignores), or a
/// value that [`decode`] would refuse or repair. When it reads the address,
/// [`decode`] gives the same state and ignores nothing
/// (`tests/state_props.rs`): the light page's wasm carries this reader and
/// [`encode_light`] instead of the whole codec.
pub fn decode_lesson(query: &str, to_f64: ToF64) -> Option<PageState> {
    let query = query.strip_prefix('?').unwrap_or(query);
    let mut state = PageState::default();
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        if key == "mode" && value == "lesson" {
            continue;
        }
        apply_lesson(&mut state, &key, &value, to_f64, false)?.ok()?;
    }
    Some(state.normalized())
}

/// Applies one pair to `state`; unknown keys are accepted and do nothing.
/// The five inputs, the tables' settings and what takes a line or a small
/// `match` are read here, every other key by its reader below (in this
/// order), whose outcome is returned as it is. (Readers per group of keys,
/// each with its own `match` and a "not mine" answer, cost the light
/// page's wasm 0.4 KB; these cost next to nothing.)
fn apply(state: &mut PageState, key: &str, value: &str, to_f64: ToF64) -> Result<(), String> {
    // The detailed model's ranges (its batch goes to 2²⁰): the mode may
    // come later in the query; [`repair`] holds the lesson to its own.
    if let Some(done) = apply_lesson(state, key, value, to_f64, true) {
        return done;
    }
    let d = &mut state.detailed;
    if let Some(&(_, min, max, at)) = COUNTS.iter().find(|c| c.0 == key) {
        *at(d) = parse_count(value, min, max)?;
        return Ok(());
    }
    if let Some(&(_, at)) = FLAGS.iter().find(|f| f.0 == key) {
        *at(d) = parse_flag(value)?;
        return Ok(());
    }
    if let Some(&(_, set)) = CHOICES.iter().find(|c| c.0 == key) {
        return set(d, value);
    }
    match key {
        "base" => state.baseline = Some(parse_config(value, to_f64)?),
        "ex" => return read_exercise(state, value),
        "mode" => {
            state.mode = match value {
                "lesson" => Mode::Lesson,
                "detailed" => Mode::Detailed,
                _ => return Err("mode must be lesson or detailed".into()),
            }
        }
        // The model's shape (its sizes and traits are in the tables).
        "model" => return read_model(state, value),
        "arch" => return read_family(&mut state.detailed.arch, value),
        "mla" => return read_mla(&mut state.detailed.arch, value),
        "ssm" => return read_ssm(&mut state.detailed.arch, value),
        "moe" => return read_moe(&mut state.detailed.arch, value),
        // The run's, outside the tables.
        "impl" => return read_profile(&mut state.detailed, value),
        "zero" => state.detailed.parallel.zero = parse_count(value, 0, 3)? as u8,
        "micro" => state.detailed.micro_batch = Some(parse_count(value, 1, 4096)?),
        "vllm" => state.detailed.vllm_percent = Some(parse_count(value, 5, 95)?),
        "shard" => state.detailed.parallel.dp_shard = Some(parse_count(value, 1, 4096)?),
        "ppfirst" => {
            state.detailed.parallel.first_stage_layers = Some(parse_count(value, 1, 4096)?)
        }
        "pplast" => state.detailed.parallel.last_stage_layers = Some(parse_count(value, 1, 4096)?),
        "lora" => state.detailed.lora_rank = Some(parse_count(value, 1, 1024)?),
        "keep" => {
            state.detailed.keep =
                crate::detailed::plan::diff::Keep::parse(&value.replace('.', ","))?
        }
        "loradrop" => state.detailed.lora_dropout_percent = parse_count(value, 1, 99)?,
        "dsbucket" | "dsprefetch" | "dsoverlap" | "dssubgroup" | "dspersist" => {
            return read_deepspeed(&mut state.detailed.framework, key, value)
        }
        // The runtime overhead.
        "oh" => {
            state.detailed.overhead =
                parse_flag(value)?.then(|| state.detailed.overhead.unwrap_or_default())
        }
        "ohctx" | "ohws" | "ohcomm" | "ohfrag" => {
            return read_overhead(&mut state.detailed.overhead, key, value, to_f64)
        }
        _ => {}
    }
    Ok(())
}

/// `card`: a card of the table by its key (any case), its memory and name.
fn read_card(state: &mut PageState, value: &str) -> Result<(), String> {
    let (key, _) = crate::detailed::time::hardware::memory_of(value).ok_or_else(|| {
        format!(
            "card must be one of {}",
            crate::detailed::time::hardware::MEMORY
                .map(|(k, _)| k)
                .join(", ")
        )
    })?;
    state.choose_card(key);
    Ok(())
}

/// `ex`: the exercise by its number, `1` or `2`.
fn read_exercise(state: &mut PageState, value: &str) -> Result<(), String> {
    state.exercise = Some(
        value
            .parse::<u8>()
            .ok()
            .and_then(Exercise::from_number)
            .ok_or("exercise must be 1 or 2")?,
    );
    Ok(())
}

/// `model`: a preset by its name, which sets the shape (and what follows it).
fn read_model(state: &mut PageState, value: &str) -> Result<(), String> {
    let p = preset(value).ok_or_else(|| {
        let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
        format!("model must be one of {}", names.join(", "))
    })?;
    state.choose_preset(&p);
    Ok(())
}

/// `arch`: the family (`gpt2`, `llama`). Another family's shape keeps the
/// sizes; the same family leaves the shape as it is.
fn read_family(arch: &mut Architecture, value: &str) -> Result<(), String> {
    let family: Family = value.parse()?;
    if family != arch.family {
        let a = *arch;
        *arch = match family {
            Family::Gpt2 => Architecture::gpt2(a.layers, a.hidden, a.heads, a.vocab),
            Family::Llama => {
                Architecture::llama(a.layers, a.hidden, a.heads, a.kv_heads, a.ffn, a.vocab)
            }
        };
    }
    Ok(())
}

/// `mla`: latent attention, `q_rank,kv_rank,rope,nope,v`.
fn read_mla(arch: &mut Architecture, value: &str) -> Result<(), String> {
    let [q_rank, kv_rank, rope_dim, nope_dim, v_dim] = parse_counts(
        value,
        ["query rank", "kv rank", "rope dim", "nope dim", "value dim"],
    )?;
    arch.mla = Some(Mla {
        q_rank,
        kv_rank,
        rope_dim,
        nope_dim,
        v_dim,
    });
    Ok(())
}

/// `ssm`: a Mamba-2 mixer beside the attention,
/// `heads,head_dim,groups,state,conv,chunk` and four 0/1 flags (gated norm,
/// conv bias, in_proj bias, out_proj bias).
fn read_ssm(arch: &mut Architecture, value: &str) -> Result<(), String> {
    let names = [
        "SSM heads",
        "SSM head width",
        "groups",
        "state",
        "conv",
        "chunk",
        "gated norm",
        "conv bias",
        "in bias",
        "out bias",
    ];
    let [heads, head_dim, groups, state, conv, chunk, norm, cb, ib, ob] =
        parse_counts(value, names)?;
    if heads == 0 || head_dim == 0 || groups == 0 || state == 0 || conv == 0 {
        return Err("ssm needs heads, head width, groups, state and conv ≥ 1".into());
    }
    if !heads.is_multiple_of(groups) || chunk == 0 || [norm, cb, ib, ob].iter().any(|&f| f > 1) {
        return Err("ssm needs groups dividing the heads, a chunk ≥ 1 and 0/1 flags".into());
    }
    arch.ssm = Some(crate::detailed::Mamba2 {
        heads,
        head_dim,
        groups,
        state,
        conv,
        chunk,
        gated_norm: norm == 1,
        conv_bias: cb == 1,
        in_bias: ib == 1,
        out_bias: ob == 1,
    });
    Ok(())
}

/// `moe`: mixture of experts,
/// `experts,top_k,expert_ffn,shared_ffn,dense_layers,router`.
fn read_moe(arch: &mut Architecture, value: &str) -> Result<(), String> {
    let (numbers, router) = value
        .rsplit_once(',')
        .ok_or("moe must be experts,top_k,expert_ffn,shared_ffn,dense_layers,router")?;
    // An un-normalised router is written `qwen-raw` (and so on).
    let (router, normalized) = match router.strip_suffix("-raw") {
        Some(r) => (r, false),
        None => (router, true),
    };
    let names = [
        "experts",
        "top-k",
        "expert FFN",
        "shared FFN",
        "dense layers",
    ];
    let [experts, top_k, expert_ffn, shared_ffn, first_dense] = parse_counts(numbers, names)?;
    if experts == 0 || top_k == 0 || top_k > experts || expert_ffn == 0 {
        return Err("moe needs experts ≥ top-k ≥ 1 and an expert FFN ≥ 1".into());
    }
    arch.moe = Some(Moe {
        experts,
        top_k,
        expert_ffn,
        shared_ffn,
        first_dense,
        router: router.parse()?,
        normalized,
    });
    Ok(())
}

/// `impl`: the kernels' implementation, `auto` (none chosen), a profile,
/// or `liger` (the "hf" profile with Liger's kernels).
fn read_profile(d: &mut DetailedOptions, value: &str) -> Result<(), String> {
    let chosen = match value {
        "auto" => None,
        _ => Some(value.parse::<crate::detailed::Implementation>()?),
    };
    d.profile = chosen.map(|i| i.profile());
    d.liger = chosen == Some(crate::detailed::Implementation::Liger);
    Ok(())
}

/// `ohctx`, `ohws`, `ohcomm` (GB) and `ohfrag` (percent): one of the
/// runtime overhead's sizes, which turns it on, if the whole stays valid.
fn read_overhead(
    overhead: &mut Option<Overhead>,
    key: &str,
    value: &str,
    to_f64: ToF64,
) -> Result<(), String> {
    let v = read(value, to_f64).ok_or("must be a number")?;
    let mut o = overhead.unwrap_or_default();
    match key {
        "ohctx" => o.cuda_context_gb = v,
        "ohws" => o.workspaces_gb = v,
        "ohcomm" => o.communication_gb = v,
        _ => o.fragmentation_percent = v,
    }
    if !o.is_valid() {
        return Err("overhead sizes must be 0 to 1000 GB, fragmentation 0 to 100 %".into());
    }
    *overhead = Some(o);
    Ok(())
}

/// A whole number in `min..=max`.
/// A finite number within `(min, max)`.
fn parse_number(value: &str, (min, max): (f64, f64), to_f64: ToF64) -> Result<f64, String> {
    read(value, to_f64)
        .filter(|v| v.is_finite() && (min..=max).contains(v))
        .ok_or_else(|| format!("must be a number from {min} to {max:e}"))
}

fn parse_count(value: &str, min: u64, max: u64) -> Result<u64, String> {
    value
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|v| (min..=max).contains(v))
        .ok_or_else(|| format!("must be a whole number from {min} to {max}"))
}

/// `N` comma-separated whole numbers up to 2²⁴, each named in the error.
fn parse_counts<const N: usize>(value: &str, names: [&str; N]) -> Result<[u64; N], String> {
    let parts: Vec<&str> = value.split(',').collect();
    if parts.len() != N {
        return Err(format!("must be {N} numbers: {}", names.join(", ")));
    }
    let mut out = [0; N];
    for ((slot, part), name) in out.iter_mut().zip(parts).zip(names) {
        *slot = parse_count(part, 0, 1 << 24).map_err(|e| format!("{name} {e}"))?;
    }
    Ok(out)
}

/// DeepSpeed's settings (after `framework=deepspeed`): `dsbucket`
/// (`reduce_bucket_size`), `dsprefetch`, `dssubgroup`, `dspersist` (values,
/// 0 to 1e10; the bucket from 1,000) and `dsoverlap` (1/0).
fn read_deepspeed(
    framework: &mut crate::detailed::Framework,
    key: &str,
    value: &str,
) -> Result<(), String> {
    let crate::detailed::Framework::DeepSpeed {
        reduce_bucket_size,
        prefetch_bucket_size,
        overlap_comm,
        sub_group_size,
        param_persistence_threshold,
    } = framework
    else {
        return Err("needs framework=deepspeed before it".into());
    };
    let (slot, min) = match key {
        "dsoverlap" => {
            *overlap_comm = Some(parse_flag(value)?);
            return Ok(());
        }
        "dsbucket" => (reduce_bucket_size, 1_000),
        "dsprefetch" => (prefetch_bucket_size, 0),
        "dssubgroup" => (sub_group_size, 0),
        _ => (param_persistence_threshold, 0),
    };
    *slot = parse_count(value, min, 10_000_000_000)?;
    Ok(())
}

fn parse_flag(value: &str) -> Result<bool, String> {
    match value {
        "1" | "true" | "on" => Ok(true),
        "0" | "false" | "off" => Ok(false),
        _ => Err("must be 1 or 0".into()),
    }
}

/// `params,batch,seq,hidden,layers,mixed`, each checked like its own key.
fn parse_config(value: &str, to_f64: ToF64) -> Result<TrainingConfig, String> {
    let parts: Vec<&str> = value.split(',').collect();
    if parts.len() != Field::ALL.len() + 1 {
        return Err("baseline must be params,batch,seq,hidden,layers,mixed".into());
    }
    let mut cfg = TrainingConfig::default();
    for (field, text) in Field::ALL.into_iter().zip(&parts) {
        let v = field
            .parse_with(text, to_f64)
            .map_err(|e| format!("baseline: {e}"))?;
        cfg = cfg.with(field, v).map_err(|e| format!("baseline: {e}"))?;
    }
    cfg.mixed_precision =
        parse_flag(parts[Field::ALL.len()]).map_err(|e| format!("baseline mixed {e}"))?;
    Ok(cfg)
}

/// `80` or `80gib` (vendor GB, which are GiB) or `85.9gb` (decimal GB).
fn parse_gpu(value: &str, to_f64: ToF64) -> Result<GpuCapacity, String> {
    let lower = value.trim().to_ascii_lowercase();
    let (number, unit) = if let Some(n) = lower.strip_suffix("gib") {
        (n, Unit::Gib)
    } else if let Some(n) = lower.strip_suffix("gb") {
        (n, Unit::Gb)
    } else {
        (lower.as_str(), Unit::Gib)
    };
    let gpu = GpuCapacity {
        amount: read(number, to_f64).ok_or("GPU memory must be a number, like 80 or 85.9gb")?,
        unit,
    };
    if gpu.is_valid() {
        Ok(gpu)
    } else {
        Err(format!(
            "GPU memory must be above 0 and at most {}",
            crate::state::MAX_GPU_AMOUNT
        ))
    }
}

/// Writes the state as a query string (no leading `?`): the five inputs and
/// `mixed` always, the rest only when they differ from the default.
pub fn encode(state: &PageState) -> String {
    let mut out = form_urlencoded::Serializer::new(String::new());
    encode_lesson(state, &mut out);
    if state.mode == Mode::Detailed {
        encode_detailed(state, &mut out);
        if let Some(pin) = state.pin {
            out.append_pair(PIN_KEY, &pin_value(state, &pin));
        }
    }
    out.finish()
}

/// The light lesson page's writer (`src/light.rs`): a state of the lesson's
/// keys alone (as [`decode_lesson`] reads), and `mode=detailed` when the
/// reader asks for the detailed model, which the full decoder then reads
/// with the detailed model's defaults (the shape from the lesson's layers
/// and hidden size). [`decode`] reads it back to the same state
/// (`tests/state_props.rs`).
pub fn encode_light(state: &PageState) -> String {
    let mut out = form_urlencoded::Serializer::new(String::new());
    encode_lesson(state, &mut out);
    if state.mode == Mode::Detailed {
        out.append_pair("mode", "detailed");
    }
    out.finish()
}

/// The lesson's and the page's keys, in this order: the five inputs and
/// `mixed` always, the rest only when set or not the default.
fn encode_lesson(state: &PageState, out: &mut Query<'_>) {
    for field in Field::ALL {
        out.append_pair(field.key(), &format_value(state.config.get(field)));
    }
    out.append_pair("mixed", flag(state.config.mixed_precision));
    if let Some(base) = state.baseline {
        let mut parts: Vec<String> = Field::ALL
            .into_iter()
            .map(|f| format_value(base.get(f)))
            .collect();
        parts.push(flag(base.mixed_precision).into());
        out.append_pair("base", &parts.join(","));
    }
    if let Some(card) = state.card {
        out.append_pair("card", card);
    } else if let Some(gpu) = state.gpu {
        out.append_pair(
            "gpu",
            &format!("{}{}", format_value(gpu.amount), gpu.unit.key()),
        );
    }
    if state.unit != Unit::default() {
        out.append_pair("unit", state.unit.key());
    }
    if state.sweep != SweepAxis::default() {
        out.append_pair("sweep", state.sweep.key());
    }
    if state.embed {
        out.append_pair("embed", "1");
    }
    if let Some(ex) = state.exercise {
        out.append_pair("ex", &ex.number().to_string());
    }
    // The question the step time answers (the trainer, issue 37, beside).
    if let Some(tokens) = state.tokens {
        out.append_pair("tokens", &format_value(tokens));
    }
    if let Some(price) = state.price {
        out.append_pair("price", &format_value(price));
    }
}

/// The query string being written.
type Query<'a> = form_urlencoded::Serializer<'a, String>;

/// The detailed model's keys, where they differ from the defaults, in this
/// order: the model, training and precision, parallelism, fine-tuning,
/// offload, the objective, the settings absent by default, the overhead.
fn encode_detailed(state: &PageState, out: &mut Query<'_>) {
    let d = &state.detailed;
    let def = DetailedOptions::default();
    out.append_pair("mode", "detailed");
    match state.preset_name() {
        Some(name) => {
            out.append_pair("model", name);
        }
        None => encode_arch(&d.arch, out),
    }
    encode_training(d, &def, out);
    encode_parallel(d, &def, out);
    encode_fine_tuning(d, &def, out);
    encode_offload(d, &def, out);
    encode_objective(d, &def, out);
    encode_optional(d, out);
    match d.overhead {
        Some(o) => encode_overhead(o, out),
        None => {
            out.append_pair("oh", "0");
        }
    }
}

/// Writes `key=value` unless `value` is the default's.
fn pair(out: &mut Query<'_>, key: &str, value: &str, default: &str) {
    if value != default {
        out.append_pair(key, value);
    }
}

/// A shape that is no preset: its family and sizes always, its traits where
/// set (tied embeddings and QKV bias where not the family's), then its
/// optional blocks.
fn encode_arch(a: &Architecture, out: &mut Query<'_>) {
    out.append_pair("arch", a.family.name());
    out.append_pair("heads", &a.heads.to_string());
    out.append_pair("kv", &a.kv_heads.to_string());
    out.append_pair("ffn", &a.ffn.to_string());
    out.append_pair("vocab", &a.vocab.to_string());
    let gpt2 = a.family == Family::Gpt2;
    if a.tied_embeddings != gpt2 {
        out.append_pair("tied", flag(a.tied_embeddings));
    }
    if a.positions != Architecture::GPT2_POSITIONS * u64::from(gpt2) {
        out.append_pair("pos", &a.positions.to_string());
    }
    if a.qkv_bias != gpt2 {
        out.append_pair("qkvbias", flag(a.qkv_bias));
    }
    if a.rotary_dims > 0 {
        out.append_pair("rot", &a.rotary_dims.to_string());
    }
    if a.head_width > 0 {
        out.append_pair("hd", &a.head_width.to_string());
    }
    if a.qk_norm {
        out.append_pair("qknorm", "1");
    }
    if a.sandwich_norms {
        out.append_pair("sandwich", "1");
    }
    if a.softcap {
        out.append_pair("softcap", "1");
    }
    if a.attention_sinks {
        out.append_pair("sinks", "1");
    }
    encode_blocks(a, out);
}

/// The shape's optional blocks: latent attention (`mla`), mixture of experts
/// (`moe`) and a Mamba-2 mixer (`ssm`).
fn encode_blocks(a: &Architecture, out: &mut Query<'_>) {
    if let Some(m) = a.mla {
        let v = [m.q_rank, m.kv_rank, m.rope_dim, m.nope_dim, m.v_dim];
        out.append_pair("mla", &join(&v));
    }
    if let Some(m) = a.moe {
        let v = [
            m.experts,
            m.top_k,
            m.expert_ffn,
            m.shared_ffn,
            m.first_dense,
        ];
        let raw = if m.normalized { "" } else { "-raw" };
        out.append_pair("moe", &format!("{},{}{raw}", join(&v), m.router.name()));
    }
    if let Some(m) = a.ssm {
        let v = [
            m.heads,
            m.head_dim,
            m.groups,
            m.state,
            m.conv,
            m.chunk,
            u64::from(m.gated_norm),
            u64::from(m.conv_bias),
            u64::from(m.in_bias),
            u64::from(m.out_bias),
        ];
        out.append_pair("ssm", &join(&v));
    }
}

/// Training and precision: storage precision, fp8, optimizer, attention
/// kernel, dropout, recomputation (against the objective's default) and the
/// kernels' implementation.
fn encode_training(d: &DetailedOptions, def: &DetailedOptions, out: &mut Query<'_>) {
    pair(out, "prec", d.precision.name(), def.precision.name());
    pair(out, "fp8", d.fp8.name(), def.fp8.name());
    pair(out, "fp8param", flag(d.fp8_param), "0");
    pair(out, "opt", d.optimizer.name(), def.optimizer.name());
    pair(out, "optbwd", flag(d.optimizer_in_backward), "0");
    pair(out, "attn", d.attention.name(), def.attention.name());
    pair(out, "dropout", flag(d.dropout), flag(def.dropout));
    pair(out, "compile", flag(d.compile), "0");
    pair(out, "cscope", d.compile_scope.name(), "model");
    pair(out, "asynctp", flag(d.async_tp), "0");
    pair(
        out,
        "recompute",
        d.recompute.name(),
        crate::detailed::config::defaults::recompute(d.objective).name(),
    );
    pair(out, "rmods", &d.recompute_modules.names().join(","), "");
    let implementation = if d.liger {
        "liger"
    } else {
        d.profile.map_or("auto", Profile::name)
    };
    pair(out, "impl", implementation, "auto");
    pair(out, "loss", d.loss.map_or("auto", |l| l.name()), "auto");
    pair(
        out,
        "lchunks",
        &d.loss_chunks.to_string(),
        &def.loss_chunks.to_string(),
    );
}

/// Parallelism: the layout, the context ring's communication, the pipeline
/// stage the step chart shows, the framework and the pipeline schedule.
fn encode_parallel(d: &DetailedOptions, def: &DetailedOptions, out: &mut Query<'_>) {
    let p = &d.parallel;
    pair(out, "dp", &p.dp.to_string(), "1");
    pair(out, "zero", &p.zero.to_string(), "0");
    pair(out, "tp", &p.tp.to_string(), "1");
    pair(out, "sp", flag(p.sp), "0");
    pair(out, "pp", &p.pp.to_string(), "1");
    pair(out, "vp", &p.vp.to_string(), "1");
    pair(out, "ep", &p.ep.to_string(), "1");
    pair(out, "etp", &p.etp.to_string(), "1");
    pair(out, "cp", &p.cp.to_string(), "1");
    pair(out, "cpcomm", p.cp_comm.name(), "p2p");
    pair(out, "stage", d.stage_shown.name(), "peak");
    pair(out, "framework", d.framework.name(), def.framework.name());
    pair(out, "schedule", p.schedule.name(), "1f1b");
    pair(out, "tpplan", p.plan().name(), "megatron");
    pair(out, "ovgrad", flag(d.overlap.grad_reduce), "1");
    pair(out, "ovparam", flag(d.overlap.param_gather), "1");
    pair(out, "ovtp", flag(d.overlap.tp_comm), "1");
    pair(out, "ovmoe", flag(d.overlap.moe_a2a), "0");
    encode_deepspeed(d.framework, out);
}

/// DeepSpeed's settings where not its defaults, after `framework`.
fn encode_deepspeed(f: crate::detailed::Framework, out: &mut Query<'_>) {
    use crate::detailed::Framework;
    let (
        Framework::DeepSpeed {
            reduce_bucket_size,
            prefetch_bucket_size,
            overlap_comm,
            sub_group_size,
            param_persistence_threshold,
        },
        Framework::DeepSpeed {
            reduce_bucket_size: b,
            prefetch_bucket_size: pf,
            sub_group_size: g,
            param_persistence_threshold: t,
            ..
        },
    ) = (f, Framework::DEEPSPEED)
    else {
        return;
    };
    pair(
        out,
        "dsbucket",
        &reduce_bucket_size.to_string(),
        &b.to_string(),
    );
    pair(
        out,
        "dsprefetch",
        &prefetch_bucket_size.to_string(),
        &pf.to_string(),
    );
    if let Some(o) = overlap_comm {
        out.append_pair("dsoverlap", flag(o));
    }
    pair(
        out,
        "dssubgroup",
        &sub_group_size.to_string(),
        &g.to_string(),
    );
    pair(
        out,
        "dspersist",
        &param_persistence_threshold.to_string(),
        &t.to_string(),
    );
}

/// Fine-tuning: LoRA's targets and the quantized base (the rank is among the
/// settings absent by default).
fn encode_fine_tuning(d: &DetailedOptions, def: &DetailedOptions, out: &mut Query<'_>) {
    pair(
        out,
        "lorat",
        &d.lora_targets.names(),
        &def.lora_targets.names(),
    );
    pair(out, "quant", d.base_quant.name(), def.base_quant.name());
    pair(out, "qpath", d.quant_path.name(), def.quant_path.name());
    pair(out, "loradtype", d.lora_dtype.name(), def.lora_dtype.name());
    pair(out, "loradrop", &d.lora_dropout_percent.to_string(), "0");
}

/// Offload: the optimizer, the weights and the activations to the host, and
/// the GPUs per node that share its memory.
fn encode_offload(d: &DetailedOptions, def: &DetailedOptions, out: &mut Query<'_>) {
    pair(out, "offopt", flag(d.offload.optimizer), "0");
    pair(out, "offparams", flag(d.offload.params), "0");
    pair(out, "offacts", flag(d.offload.activations), "0");
    pair(
        out,
        "actoff",
        d.offload.activations_by.name(),
        "save-on-cpu",
    );
    pair(
        out,
        "gpn",
        &d.offload.gpus_per_node.to_string(),
        &def.offload.gpus_per_node.to_string(),
    );
    pair(
        out,
        "offlayers",
        &d.offload.activation_layers.to_string(),
        "0",
    );
}

/// The objective, and GRPO's rollout: completion length, completions per
/// prompt and a colocated vLLM engine (its share, whether it sleeps).
fn encode_objective(d: &DetailedOptions, def: &DetailedOptions, out: &mut Query<'_>) {
    pair(out, "objective", d.objective.name(), def.objective.name());
    if matches!(d.objective, crate::detailed::Objective::Grpo { .. }) {
        let (r, dr) = (&d.rollout, &def.rollout);
        pair(
            out,
            "completion",
            &r.completion.to_string(),
            &dr.completion.to_string(),
        );
        pair(
            out,
            "gens",
            &r.generations.to_string(),
            &dr.generations.to_string(),
        );
        if let Some(pct) = d.vllm_percent {
            pair(out, "vllm", &pct.to_string(), "");
            pair(out, "vllmsleep", flag(d.vllm_sleep), "0");
        }
    }
}

/// The settings absent by default, written when set: the micro-batch,
/// hybrid sharding's group, an uneven pipeline's first and last stages'
/// layers, the LoRA rank, the lesson's bar beside and
/// the levers the planner keeps.
fn encode_optional(d: &DetailedOptions, out: &mut Query<'_>) {
    if let Some(m) = d.micro_batch {
        out.append_pair("micro", &m.to_string());
    }
    if let Some(n) = d.parallel.dp_shard {
        out.append_pair("shard", &n.to_string());
    }
    if let Some(n) = d.parallel.first_stage_layers {
        out.append_pair("ppfirst", &n.to_string());
    }
    if let Some(n) = d.parallel.last_stage_layers {
        out.append_pair("pplast", &n.to_string());
    }
    if let Some(r) = d.lora_rank {
        out.append_pair("lora", &r.to_string());
    }
    if let Some(t) = d.trainer {
        out.append_pair("trainer", t);
    }
    if d.show_lesson {
        out.append_pair("both", "1");
    }
    if d.keep != crate::detailed::plan::diff::Keep::NONE {
        out.append_pair("keep", &d.keep.names().replace(',', "."));
    }
}

/// The runtime overhead, on (the default, no key): its sizes where they
/// differ from the defaults.
fn encode_overhead(o: Overhead, out: &mut Query<'_>) {
    let def = Overhead::default();
    let mut pair = |key: &str, v: f64, default: f64| {
        if v != default {
            out.append_pair(key, &v.to_string());
        }
    };
    pair("ohctx", o.cuda_context_gb, def.cuda_context_gb);
    pair("ohws", o.workspaces_gb, def.workspaces_gb);
    pair("ohcomm", o.communication_gb, def.communication_gb);
    pair("ohfrag", o.fragmentation_percent, def.fragmentation_percent);
}

/// The key of a configuration pinned in detailed mode ([`pin_value`]).
const PIN_KEY: &str = "dbase";

/// A query's pairs, percent-decoded, in order.
fn pairs(query: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// `dbase`'s value for `pin` on the page `state`: the pinned
/// configuration's address pairs that differ from the page's, `key.value`
/// joined by `*`, and a key alone where the pinned one has none
/// (`zero.3*micro`), read back over the page's own pairs in their places,
/// new ones after. When they change a key whose meaning depends on the
/// keys before it (`model` and `arch` set the shape's sizes and expert
/// parallelism, `framework` DeepSpeed's settings), all of the pinned
/// configuration's own pairs after a leading `*`, read from the defaults.
fn pin_value(state: &PageState, pin: &Pinned) -> String {
    let page = PageState {
        pin: None,
        ..*state
    };
    let now = pairs(&encode(&page));
    let base = pairs(&encode(&pin.over(&page)));
    let mut diff: Vec<(&str, Option<&str>)> = base
        .iter()
        .filter(|p| !now.contains(p))
        .map(|(k, v)| (k.as_str(), Some(v.as_str())))
        .collect();
    diff.extend(
        now.iter()
            .filter(|(k, _)| !base.iter().any(|(b, _)| b == k))
            .map(|(k, _)| (k.as_str(), None)),
    );
    let whole = diff
        .iter()
        .any(|(k, _)| ["model", "arch", "framework"].contains(k));
    let alone;
    let (lead, items) = if whole {
        let default = PageState {
            mode: Mode::Detailed,
            ..PageState::default()
        };
        alone = pairs(&encode(&pin.over(&default)));
        let all = alone.iter().map(|(k, v)| (k.as_str(), Some(v.as_str())));
        ("*", all.collect())
    } else {
        ("", diff)
    };
    let items: Vec<String> = items
        .into_iter()
        .map(|(k, v)| v.map_or(k.to_string(), |v| format!("{k}.{v}")))
        .collect();
    format!("{lead}{}", items.join("*"))
}

/// Reads `query`'s `dbase` over the decoded page `state` into its pin:
/// a pinned key's bad value keeps that setting's default and a batch is
/// repaired as the address's own, each listed in `ignored`; outside
/// detailed mode it is dropped, and said.
fn read_pin_key(query: &str, state: &mut PageState, ignored: &mut Vec<Ignored>, to_f64: ToF64) {
    let Some((_, value)) = form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == PIN_KEY)
    else {
        return;
    };
    let said = |reason: String| Ignored {
        key: PIN_KEY.into(),
        value: shorten(&value),
        reason,
    };
    if state.mode != Mode::Detailed {
        ignored.push(said(
            "a pinned configuration needs mode=detailed; dropped".into(),
        ));
        return;
    }
    let (pin, problems) = read_pin(&value, state, to_f64);
    ignored.extend(problems.into_iter().map(|i| {
        said(format!(
            "the pinned configuration's {}: {}",
            i.key, i.reason
        ))
    }));
    state.pin = Some(pin);
}

/// `dbase`'s `value` read over `state`'s pairs (or, after a leading `*`,
/// over the defaults), decoded and repaired as an address is.
fn read_pin(value: &str, state: &PageState, to_f64: ToF64) -> (Pinned, Vec<Ignored>) {
    let (all, value) = match value.strip_prefix('*') {
        Some(rest) => (true, rest),
        None => (false, value),
    };
    let items: Vec<(&str, Option<&str>)> = value
        .split('*')
        .filter(|i| !i.is_empty())
        .map(|i| match i.split_once('.') {
            Some((k, v)) => (k, Some(v)),
            None => (i, None),
        })
        .collect();
    let page = PageState {
        pin: None,
        ..*state
    };
    let now = if all {
        Vec::new()
    } else {
        pairs(&encode(&page))
    };
    let mut out = form_urlencoded::Serializer::new(String::new());
    for (k, v) in &now {
        match items.iter().find(|(i, _)| i == k) {
            Some((_, Some(new))) => out.append_pair(k, new),
            Some((_, None)) => &mut out,
            None => out.append_pair(k, v),
        };
    }
    for (k, v) in &items {
        if let (Some(v), false) = (v, now.iter().any(|(n, _)| n == k)) {
            out.append_pair(k, v);
        }
    }
    let Decoded {
        mut state,
        mut ignored,
    } = decode_keys(&out.finish(), to_f64);
    repair(&mut state, &mut ignored);
    (Pinned::of(&state), ignored)
}

fn join(values: &[u64]) -> String {
    let parts: Vec<String> = values.iter().map(u64::to_string).collect();
    parts.join(",")
}

fn flag(on: bool) -> &'static str {
    if on {
        "1"
    } else {
        "0"
    }
}

/// Shortest text that reads back to the same f64 (`7`, `0.124`).
fn format_value(v: f64) -> String {
    format!("{v}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_values_fall_back_and_are_reported() {
        let cases: &[(&str, &str)] = &[
            ("batch=abc", "batch: Batch size must be a number"),
            ("seq=NaN", "seq: Sequence length must be a number"),
            (
                "params=1e400",
                "params: Model size must be at most 1000 (got inf)",
            ),
            ("layers=-3", "layers: Layers must be at least 1 (got -3)"),
            ("hidden=", "hidden: Hidden size needs a value"),
            ("mixed=maybe", "mixed: must be 1 or 0"),
            ("unit=furlong", "unit: unit must be gb or gib"),
            (
                "gpu=-80",
                "gpu: GPU memory must be above 0 and at most 100000",
            ),
            (
                "gpu=lots",
                "gpu: GPU memory must be a number, like 80 or 85.9gb",
            ),
            ("ex=3", "ex: exercise must be 1 or 2"),
            (
                "base=7,4",
                "base: baseline must be params,batch,seq,hidden,layers,mixed",
            ),
            (
                "base=7,0,2048,4096,32,1",
                "base: baseline: Batch size must be at least 1 (got 0)",
            ),
            (
                "batch=%3Cscript%3Ealert(1)%3C%2Fscript%3E",
                "batch: Batch size must be a number",
            ),
        ];
        for (query, want) in cases {
            let d = decode(query);
            assert_eq!(d.state, PageState::default(), "{query}");
            let got: Vec<String> = d.ignored.iter().map(|i| i.to_string()).collect();
            assert_eq!(got, [*want], "{query}");
        }
    }

    #[test]
    fn unknown_keys_are_ignored_silently_and_long_values_shortened() {
        let d = decode("?utm_source=x&batch=8&&=&colour");
        assert_eq!(d.state.config.batch, 8);
        assert!(d.ignored.is_empty());
        let long = "9".repeat(500);
        let d = decode(&format!("batch={long}"));
        assert_eq!(d.ignored[0].value.chars().count(), 40);
        let d = decode("batch=%3Cscript%3E");
        assert_eq!(
            d.ignored[0].value, "<script>",
            "value kept, percent-decoded"
        );
    }

    #[test]
    fn full_state_reads_back() {
        let d = decode(
            "params=0.124&batch=8&seq=1024&hidden=768&layers=12&mixed=0\
             &base=7,4,2048,4096,32,1&gpu=80gib&unit=gib&sweep=seq&embed=1&ex=2",
        );
        assert!(d.ignored.is_empty(), "{:?}", d.ignored);
        let s = d.state;
        assert_eq!(s.config.params_b, 0.124);
        assert_eq!(
            (s.config.batch, s.config.layers, s.config.mixed_precision),
            (8, 12, false)
        );
        assert_eq!(s.baseline, Some(TrainingConfig::default()));
        assert_eq!(
            s.gpu,
            Some(GpuCapacity {
                amount: 80.0,
                unit: Unit::Gib
            })
        );
        assert_eq!(
            (s.unit, s.sweep, s.embed),
            (Unit::Gib, SweepAxis::SeqLen, true)
        );
        assert_eq!(s.exercise, Some(Exercise::LargerBatch));
        assert_eq!(decode(&encode(&s)).state, s);
        assert_eq!(
            decode("gpu=80").state.gpu,
            Some(GpuCapacity {
                amount: 80.0,
                unit: Unit::Gib
            })
        );
    }

    /// A card of the table by its key: its memory and its name, which the
    /// address keeps instead of the memory; an unknown key is named with the
    /// keys it could be, and a memory that is not the card's drops the name.
    #[test]
    fn a_card_by_name() {
        let d = decode("mode=detailed&card=H100-SXM");
        assert!(d.ignored.is_empty(), "{:?}", d.ignored);
        assert_eq!(d.state.card, Some("h100-sxm"));
        assert_eq!(
            d.state.gpu,
            Some(GpuCapacity {
                amount: 80.0,
                unit: Unit::Gib
            })
        );
        let q = encode(&d.state);
        assert!(q.contains("card=h100-sxm") && !q.contains("gpu="), "{q}");
        assert_eq!(decode(&q).state, d.state);
        let bad = decode("card=v100");
        assert!(bad.state.card.is_none() && bad.state.gpu.is_none());
        assert!(bad.ignored[0]
            .reason
            .starts_with("card must be one of a100-40gb, a100-80gb, h100-sxm"));
        // A memory given after the card that is not the card's: the memory.
        let both = decode("card=h200&gpu=80").state;
        assert_eq!((both.card, both.gpu.map(|g| g.amount)), (None, Some(80.0)));
        let same = decode("card=h200&gpu=141").state;
        assert_eq!(same.card, Some("h200"));
    }
}
