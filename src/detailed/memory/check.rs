//! Whether a configuration can be priced: each check refuses, in words,
//! what the model cannot express or no trainer runs. The first refusal
//! wins, so the checks run in a fixed order.

use super::{grpo, sac};
use crate::detailed::config::{
    ActOffload, AttentionKernel, BaseQuant, CpComm, DetailedConfig, DetailedError, Fp8, Framework,
    FsdpSharding, LoraDtype, Loss, Objective, Optimizer, Precision, Profile, Recompute, Schedule,
    TpPlan,
};
use crate::detailed::model::{Family, LoraTargets};

/// Refuses what cannot be priced, with the reason: one check per concern,
/// in this order, the first refusal winning.
pub fn check(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    sizes(cfg)?;
    lora(cfg)?;
    optimizer(cfg)?;
    float8(cfg)?;
    grpo_trainer(cfg)?;
    loss(cfg)?;
    selective_op(cfg)?;
    virtual_stages(cfg)?;
    heads(cfg)?;
    family(cfg)?;
    mamba(cfg)?;
    latent_attention(cfg)?;
    experts(cfg)?;
    quantized_base(cfg)?;
    offload(cfg)?;
    expert_layout(cfg)?;
    framework(cfg)?;
    zero_bubble(cfg)?;
    context(cfg)?;
    tp_plan(cfg)?;
    experts_with_tp(cfg)?;
    counts(cfg)?;
    shard_group(cfg)?;
    divides(cfg)?;
    in_backward(cfg)?;
    async_tp(cfg)?;
    fp8_param(cfg)?;
    moe_a2a_overlap(cfg)?;
    recompute_layers(cfg)?;
    compiled(cfg)
}

/// Megatron-Core's block method (`--recompute-layers`): full recomputation
/// of the first layers of each model chunk, which Megatron bounds by the
/// layers a pipeline stage holds ("recompute_num_layers must be between 1
/// and num_layers_per_pipeline_rank", `transformer_config.py`).
fn recompute_layers(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let n = cfg.block_layers();
    if n == 0 {
        return Ok(());
    }
    if cfg.recompute != Recompute::Full || cfg.framework != Framework::Megatron {
        return refuse("--recompute-layers is Megatron-Core's block method (--recompute-method block): it needs --recompute full and --framework megatron");
    }
    let chunk = cfg.chunk_layers(cfg.parallel.stage_layers(&cfg.arch) as u64);
    if n > chunk {
        return Err(DetailedError(format!(
            "--recompute-layers {n} is more than the {chunk} layers of a pipeline stage's model chunk: give 1 to {chunk}, or drop it to recompute every layer"
        )));
    }
    Ok(())
}

/// Megatron-Core's expert all-to-all overlap
/// (`overlap_moe_expert_parallel_comm`) where `TransformerConfig.__post_init__`
/// (`megatron/core/transformer/transformer_config.py` at d98e8a64) allows
/// it: expert parallelism, a virtual pipeline with a pipeline, no full
/// recomputation and no `moe` module recomputed, 16-bit weights; under
/// Megatron-Core.
fn moe_a2a_overlap(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    if !cfg.overlap.moe_a2a {
        return Ok(());
    }
    let p = &cfg.parallel;
    let why = if cfg.framework != Framework::Megatron {
        "needs --framework megatron"
    } else if p.ep < 2 {
        "needs expert parallelism: --ep 2 or more"
    } else if p.pp > 1 && p.vp < 2 {
        "needs interleaving with a pipeline: --vp 2 or more"
    } else if cfg.recompute == Recompute::Full {
        "runs without full recomputation"
    } else if cfg.recompute_modules.moe {
        "runs without the moe module's recomputation"
    } else if cfg.precision == Precision::Fp32 {
        "needs a 16-bit model"
    } else {
        return Ok(());
    };
    Err(DetailedError(format!(
        "Megatron-Core's expert all-to-all overlap (--overlap-moe-expert-parallel-comm) {why}"
    )))
}

/// FP8 primary weights as Megatron-LM runs them (`--fp8-param-gather`,
/// `megatron/training/arguments.py`, `validate_args`: "--fp8-param-gather
/// only supported with distributed optimizer, torch fsdp2, megatron fsdp,
/// or inference mode"; Megatron-LM d98e8a64): Transformer Engine's fp8
/// under Megatron's distributed optimizer (`--zero` 1 or 2), whose fp32
/// main weights are cast to fp8 after each step
/// (`DistributedOptimizer._copy_main_params_to_model_params`,
/// `quantize_param_shard`), or under Megatron-FSDP (`--zero 3`), which
/// keeps them in its float8 buffers
/// ([`super::fp8::te_weight_workspace`]). FSDP2's are not modelled.
fn fp8_param(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    #[cfg(not(target_arch = "wasm32"))]
    if cfg.no_transpose_cache && (!cfg.fp8_param || cfg.parallel.zero >= 3) {
        return refuse("--disable-parameter-transpose-cache is priced beside --fp8-param under --zero 0, 1 or 2 (fp8 parameters' transposes made per use); without them Transformer Engine's per-micro-batch weight copies saved for backward are not modelled");
    }
    if !cfg.fp8_param {
        return Ok(());
    }
    if !matches!(cfg.fp8, Fp8::Te | Fp8::TeMxfp8) {
        return refuse("--fp8-param keeps Transformer Engine's linear weights in fp8 (Megatron's --fp8-param-gather): it needs --fp8 te or te-mxfp8");
    }
    if cfg.framework != Framework::Megatron {
        return refuse(
            "--fp8-param is Megatron-LM's --fp8-param-gather: it needs --framework megatron",
        );
    }
    // LoRA's frozen base needs no main weights to cast from: NeMo builds it
    // in fp8 under plain data parallelism too (AMD's MLPerf LoRA runs,
    // `fp8_params` with `fused_adam`).
    if cfg.parallel.zero == 0 && cfg.lora_rank.is_none() {
        return refuse("--fp8-param is priced under Megatron's distributed optimizer (--zero 1 or 2) or Megatron-FSDP (--zero 3), which keep the fp32 main weights and cast them to fp8 after each step; Megatron refuses it without one");
    }
    let offloaded = cfg.offload.optimizer || cfg.offload.params;
    if cfg.precision != Precision::Mixed || offloaded {
        return refuse("--fp8-param keeps the fp32 main weights in Megatron's distributed optimizer on the GPU: it needs --precision mixed and no offloading");
    }
    // LoRA: the frozen base built in fp8 (Megatron-Bridge's fine-tuning
    // recipes set `fp8_param_gather`, which sets `fp8_param`, beside their
    // adapters), priced with each GPU holding the whole base.
    if cfg.lora_rank.is_some() && (cfg.parallel.zero >= 3 || cfg.base_quant != BaseQuant::None) {
        return refuse("--fp8-param with LoRA keeps the whole frozen base in fp8 on each GPU: it needs --zero 0, 1 or 2 and no --quant-base");
    }
    Ok(())
}

/// Async tensor parallelism as torchtitan runs it
/// (`torchtitan/distributed/compile.py`, `_maybe_enable_async_tp`: over
/// the TP mesh, whose plan is always sequence-parallel, `apply_tp`): tp
/// above 1 with sequence parallelism, under a PyTorch framework. Megatron's
/// own is Transformer Engine's overlap (`tp_comm_overlap`, on unless
/// `--no-tp-comm-overlap`). torchtitan also needs `compile.enable`
/// (`CompileConfig.__post_init__`); the model prices async TP's time
/// without asking for `--compile`, whose memory under tensor parallelism is
/// not measured.
fn async_tp(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    if !cfg.async_tp {
        return Ok(());
    }
    if cfg.framework == Framework::Megatron {
        return refuse("--async-tp is torchtitan's (PyTorch's micro-pipelined TP); Megatron's own is Transformer Engine's overlap, on by default (--no-tp-comm-overlap turns it off)");
    }
    if cfg.parallel.tp < 2 || !cfg.parallel.sp {
        return refuse("--async-tp pipelines tensor parallelism's all-gathers and reduce-scatters: give --tp 2 or more with --sp");
    }
    Ok(())
}

/// The most bytes a GPU's step may hold to be priced: 2⁶⁰ (1 EiB). The
/// figures are reported in whole bytes as 64-bit integers (JSON, the
/// verdict), which end at 2⁶⁴; the step's peak, its overhead and a
/// lever's doubling stay below that from here. A million-token sequence
/// at a micro-batch of 2²⁰ with eager attention keeps ~2⁶⁸ bytes of
/// scores: no machine holds it, and the model says so rather than
/// printing a saturated figure.
pub const MOST_BYTES: f64 = (1u64 << 60) as f64;

/// Refuses a step whose `bytes` (its memory at rest or its peak) exceed
/// [`MOST_BYTES`], the sizes that make it so named.
pub fn within_bytes(cfg: &DetailedConfig, bytes: f64) -> Result<(), DetailedError> {
    if bytes <= MOST_BYTES {
        return Ok(());
    }
    Err(DetailedError(format!(
        "the step would hold {:.3e} bytes per GPU, more than 2^60 (1 EiB, beyond any machine and the figures' whole bytes): shorten the sequence ({}) or the micro-batch ({}), or split them (--cp, --tp with --sp)",
        bytes,
        cfg.seq,
        cfg.micro()
    )))
}

/// A refusal in words.
fn refuse(m: &str) -> Result<(), DetailedError> {
    Err(DetailedError(m.to_string()))
}

/// Sizes beyond any real model.
fn sizes(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let a = &cfg.arch;
    if a.layers == 0 || a.hidden == 0 || a.heads == 0 || a.vocab == 0 || a.ffn == 0 {
        return refuse("layers, hidden size, heads, FFN size and vocabulary must be at least 1");
    }
    if a.hidden > 1 << 20
        || a.ffn > 1 << 24
        || a.vocab > 1 << 24
        || a.heads > a.hidden
        || a.layers > 1 << 12
    {
        return refuse("sizes beyond any real model: hidden ≤ 2²⁰, FFN and vocabulary ≤ 2²⁴, heads ≤ hidden, layers ≤ 4096");
    }
    if cfg.seq > 1 << 24 || cfg.batch > 1 << 24 || cfg.lora_rank.is_some_and(|r| r > a.hidden) {
        return refuse("sequence and batch must be at most 2²⁴, LoRA rank at most the hidden size");
    }
    Ok(())
}

/// LoRA needs a target, and one the family has.
fn lora(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let a = &cfg.arch;
    if cfg.lora_rank.is_some() {
        if cfg.lora_targets.count() == 0 {
            return refuse("LoRA needs at least one target projection");
        }
        if a.family == Family::Gpt2 && cfg.lora_targets.any(LoraTargets::GATE) {
            return refuse("GPT-2 has no gate projection");
        }
    }
    lora_variants(cfg)
}

/// LoRA's adapter dtype and dropout: bf16 adapters need a 16-bit model
/// (torchtune and litgpt keep them in the model's dtype); dropout is a
/// probability, priced where PEFT's adapters are priced term by term (the
/// hf profile on a plain Llama-family layer).
fn lora_variants(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let a = &cfg.arch;
    if !(0.0..1.0).contains(&cfg.lora_dropout) {
        return refuse("LoRA dropout is a probability from 0 up to (not including) 1");
    }
    if cfg.lora_rank.is_none() {
        return Ok(());
    }
    if cfg.lora_dtype == LoraDtype::Bf16 && cfg.precision == Precision::Fp32 {
        return refuse("bf16 adapters are kept in the model's 16-bit dtype (torchtune, litgpt): choose --precision bf16 or mixed, or fp32 adapters");
    }
    let plain_llama = a.family == Family::Llama
        && a.moe.is_none()
        && a.mla.is_none()
        && a.ssm.is_none()
        && !a.sandwich_norms;
    let outer = cfg.lora_targets.lm_head() || cfg.lora_targets.embed();
    if outer && (cfg.profile != Profile::Hf || !plain_llama || a.tied_embeddings) {
        return refuse("LoRA on lm_head or embed is priced for PEFT's adapters under the hf profile on a plain Llama-family model with untied embeddings");
    }
    if outer && cfg.lora_targets.count() == 0 {
        return refuse("LoRA on lm_head or embed is priced beside the layers' adapters: name at least one of q, k, v, o, gate, up, down");
    }
    if cfg.lora_dropout > 0.0 && (cfg.profile != Profile::Hf || !plain_llama) {
        return refuse("LoRA dropout is priced for PEFT's and torchtune's adapters under the hf profile on a plain Llama-family layer (no experts, latent attention, Gemma norms or Mamba-2 mixer)");
    }
    Ok(())
}

/// Muon and Adafactor: dense models without latent attention, no LoRA.
fn optimizer(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let a = &cfg.arch;
    if matches!(cfg.optimizer, Optimizer::Muon | Optimizer::Adafactor) {
        if a.layer_matrices().is_none() {
            return refuse("Muon and Adafactor are modelled for dense models without latent attention (the experts' 3-D tensors and MLA's matrices are not enumerated yet)");
        }
        if cfg.lora_rank.is_some() {
            return refuse("Muon and Adafactor with LoRA are not modelled: choose AdamW, Lion or 8-bit Adam for adapters");
        }
    }
    Ok(())
}

/// Float8 casts 16-bit activations; Transformer Engine runs fused kernels.
fn float8(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    if cfg.fp8 != Fp8::None && cfg.precision == Precision::Fp32 {
        return refuse("float8 matmuls cast 16-bit activations (torchtitan trains them under bf16 compute): choose mixed or bf16 precision");
    }
    if matches!(cfg.fp8, Fp8::Te | Fp8::TeMxfp8) && cfg.profile != Profile::Fused {
        return refuse("Transformer Engine's fp8 is Megatron-Core's (the fused kernels): choose --impl fused, or torchao's tensorwise or rowwise recipe for stock transformers");
    }
    Ok(())
}

/// The losses without the full logits and Liger's kernels, as the trainers
/// that ship them run them.
fn loss(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let a = &cfg.arch;
    if cfg.loss == Loss::Full && !cfg.liger {
        return Ok(());
    }
    if cfg.profile != Profile::Hf {
        return refuse("the chunked, Liger and Cut Cross-Entropy losses run on transformers' or torchtune's models (--impl hf or liger); Megatron (--impl fused) computes its own fused cross entropy");
    }
    if a.family != Family::Llama {
        return refuse("torchtune, Liger and Cut Cross-Entropy ship no GPT-2 model: --loss and --impl liger need a Llama-family model");
    }
    if cfg.objective != Objective::Sft {
        return refuse("--loss and --impl liger are modelled for supervised training: TRL's DPO with Liger runs another fused loss, and GRPO its own chunked LM head");
    }
    if cfg.parallel.tp > 1 {
        return refuse("the chunked, Liger and Cut Cross-Entropy losses are modelled with the whole output layer on each GPU (--tp 1)");
    }
    let triton = matches!(cfg.loss, Loss::Liger | Loss::Cce) || cfg.liger;
    if triton && cfg.device == crate::detailed::config::Device::Cpu {
        return refuse("Liger's and Cut Cross-Entropy's kernels are Triton's and need a GPU (on the CPU they fail: \"0 active drivers\"); torchtune's chunked loss runs anywhere");
    }
    if cfg.loss == Loss::Cce && cfg.precision == Precision::Fp32 {
        return refuse("Cut Cross-Entropy's backward needs bf16 or fp16 inputs (\"Backwards requires embeddings to be bf16 or fp16\", cce_backward.py): choose mixed or bf16 precision");
    }
    if cfg.loss == Loss::Chunked && !(1..=4096).contains(&cfg.loss_chunks) {
        return refuse("--loss-chunks must be from 1 to 4096");
    }
    let dense = a.moe.is_none() && a.mla.is_none() && a.ssm.is_none();
    if cfg.liger && (!dense || a.attention_sinks || a.llama4() || cfg.lora_rank.is_some()) {
        return refuse("Liger's RMSNorm, SwiGLU and RoPE kernels are modelled for dense Llama-family models without LoRA (the experts', latent attention's and PEFT's tensors were measured with stock kernels)");
    }
    Ok(())
}

/// GRPO as TRL's GRPOTrainer runs it.
fn grpo_trainer(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let a = &cfg.arch;
    let p = &cfg.parallel;
    if let Objective::Grpo { .. } = cfg.objective {
        let r = &cfg.rollout;
        if r.completion == 0
            || r.completion > 1 << 24
            || r.generations == 0
            || r.generations > 1 << 12
        {
            return refuse(
                "GRPO needs a completion of 1 to 2²⁴ tokens and 1 to 4096 completions per prompt",
            );
        }
        if a.family != Family::Llama {
            return refuse(
                "GRPO is modelled for the Llama family (TRL's fused LM head was measured on it)",
            );
        }
        if a.ssm.is_some() {
            return refuse("GRPO on a hybrid (Mamba-2) model is not modelled: its rollout keeps a recurrent state beside the key/value cache");
        }
        if let Some(v) = r.vllm {
            let weights = grpo::engine_weights(cfg);
            if (v.reserved as f64) <= weights {
                return Err(DetailedError(format!(
                    "the colocated vLLM engine's {:.1} GB cannot hold its own copy of the weights ({:.1} GB): give it a larger fraction of the card",
                    v.reserved as f64 / 1e9,
                    weights / 1e9
                )));
            }
        }
        if !cfg.effective_batch().is_multiple_of(r.generations) {
            return Err(DetailedError(format!(
                "GRPO's batch counts completions: {} sequences per step is not a multiple of {} completions per prompt (change the batch or the completions per prompt)",
                cfg.effective_batch(),
                r.generations
            )));
        }
        if p.tp > 1 || p.pp > 1 || p.cp > 1 {
            return refuse("TRL's GRPOTrainer trains with data parallelism, ZeRO and FSDP: set tp, pp and cp to 1");
        }
        if matches!(cfg.framework, Framework::DeepSpeed { .. }) && p.zero == 3 {
            return refuse("GRPO under DeepSpeed's ZeRO-3 is not modelled: choose FSDP2 or the megatron framework's ZeRO-3");
        }
    }
    Ok(())
}

/// torchtitan's per-operator checkpointing where it is measured.
fn selective_op(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    if cfg.recompute == Recompute::SelectiveOp {
        if let Some(why) = sac::unsupported(cfg) {
            return refuse(why);
        }
    }
    Ok(())
}

/// The interleaved schedule's virtual stages.
fn virtual_stages(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let a = &cfg.arch;
    let p = &cfg.parallel;
    if p.vp == 0 || p.vp > 64 {
        return refuse("virtual pipeline stages must be 1 to 64");
    }
    let uneven = p.first_stage_layers.is_some() || p.last_stage_layers.is_some();
    if p.vp > 1 && !uneven && (p.pp < 2 || !a.layers.is_multiple_of(p.pp * p.vp)) {
        return refuse("the interleaved schedule (virtual stages above 1) needs pipeline stages and layers divisible by stages × virtual stages");
    }
    uneven_split(cfg)
}

/// An uneven pipeline split as Megatron-Core accepts it
/// (`megatron/core/transformer/transformer_block.py`,
/// `get_num_layers_to_build`, 2026: "the left over layers must be
/// divisible by left over stages"; under the interleaved schedule each
/// middle stage's layers divide by the virtual stages). The first or last
/// stage's count need not divide by them: that is the split
/// `account_for_embedding_in_pipeline_split` /
/// `account_for_loss_in_pipeline_split` build (one layer fewer in the
/// first or last model chunk). torchtitan's own split is of this form when
/// its weighted count divides over the stages
/// (`torchtitan/distributed/pipeline_parallel.py`,
/// `_generate_llm_fqn_per_model_part` at b5bcd76c: the embedding and the
/// output each count as a layer, `first/last_stage_less_layers = 1`):
/// Llama-3.1-405B's 126 layers over 8 stages are 15, 16 × 6, 15, and over
/// 8 × 2 virtual stages 7 + 8 on the first GPU, 8 + 8 between, 8 + 7 on
/// the last.
fn uneven_split(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let (a, p) = (&cfg.arch, &cfg.parallel);
    let given: Vec<u64> = p
        .first_stage_layers
        .iter()
        .chain(&p.last_stage_layers)
        .copied()
        .collect();
    if given.is_empty() {
        return Ok(());
    }
    if p.pp < 2 {
        return refuse(
            "--first-stage-layers and --last-stage-layers split a pipeline: give --pp 2 or more",
        );
    }
    let taken: u64 = given.iter().sum();
    let left = p.pp - given.len() as u64;
    if given.contains(&0) || taken > a.layers || (left == 0 && taken != a.layers) {
        return refuse(&format!("the first and last stages' layers must be at least 1 and leave the other stages theirs: {taken} of the model's {} layers given", a.layers));
    }
    let rest = a.layers - taken;
    if left > 0 && (!rest.is_multiple_of(left) || rest / left == 0) {
        return refuse(&format!("with an uneven pipeline split the layers left ({rest}) must divide evenly over the stages left ({left}), at least one each (Megatron-Core's rule; torchtitan's splits of this form)"));
    }
    if left > 0 && p.vp > 1 && !(rest / left).is_multiple_of(p.vp) {
        return refuse(&format!("under the interleaved schedule each middle stage's layers ({}) must divide by the virtual stages ({})", rest / left, p.vp));
    }
    Ok(())
}

/// Heads that divide the hidden size and group the key/value heads.
fn heads(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let a = &cfg.arch;
    if a.kv_heads == 0 || !a.heads.is_multiple_of(a.kv_heads) {
        return refuse("kv heads must divide the attention heads");
    }
    if a.head_width == 0 && !a.hidden.is_multiple_of(a.heads) {
        return refuse("hidden size must be a multiple of the heads (or give the head width)");
    }
    if a.head_width > 1 << 12 {
        return refuse("head width must be at most 4096");
    }
    Ok(())
}

/// What only the Llama family has.
fn family(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let a = &cfg.arch;
    if a.family == Family::Gpt2
        && (a.moe.is_some() || a.mla.is_some() || a.sandwich_norms || a.ssm.is_some())
    {
        return refuse(
            "experts, latent attention, sandwich norms and Mamba-2 mixers need the Llama family",
        );
    }
    // Only the gpt2 shape counts learned positions
    // ([`crate::detailed::model::Architecture::outer_matrices`]).
    if a.family == Family::Llama && a.positions > 0 {
        return refuse(
            "learned positions are the gpt2 shape's: the llama family's are rotary (positions 0)",
        );
    }
    // The hf profile prices `transformers`' GPT-2 modules, whose fused
    // c_attn has as many key/value heads as query heads.
    if a.family == Family::Gpt2 && a.kv_heads != a.heads && cfg.profile != Profile::Fused {
        return refuse("transformers' GPT-2 has no grouped-query attention: the gpt2 shape with fewer kv heads is Megatron's GPT (fused kernels)");
    }
    Ok(())
}

/// A hybrid's Mamba-2 mixer.
fn mamba(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let a = &cfg.arch;
    let p = &cfg.parallel;
    if let Some(m) = a.ssm {
        let dims = [m.heads, m.head_dim, m.groups, m.state, m.conv, m.chunk];
        if dims.contains(&0)
            || dims.iter().any(|&d| d > 1 << 16)
            || !m.heads.is_multiple_of(m.groups)
        {
            return refuse("a Mamba-2 mixer needs heads, head width, groups, state, conv and chunk from 1 to 65536, the groups dividing the heads");
        }
        if p.cp > 1 {
            return refuse("context parallelism splits attention's sequence; a Mamba-2 scan across GPUs is not modelled: set cp to 1");
        }
        // `FalconH1ForCausalLM._tp_plan` names only `lm_head`: transformers
        // does not shard its layers; Megatron-Bridge's Falcon-H1 does.
        if p.tp > 1 && cfg.profile == Profile::Hf {
            return refuse("transformers has no tensor-parallel plan for Falcon-H1's layers (only its output layer): set tp to 1, or choose the fused kernels (Megatron-Bridge shards them)");
        }
        if a.moe.is_some() || a.mla.is_some() {
            return refuse("a Mamba-2 mixer beside experts or latent attention is not modelled");
        }
    }
    Ok(())
}

/// DeepSeek's latent attention.
fn latent_attention(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let a = &cfg.arch;
    if let Some(m) = a.mla {
        let dims = [m.kv_rank, m.rope_dim, m.nope_dim, m.v_dim];
        if dims.contains(&0) || dims.iter().chain([&m.q_rank]).any(|&d| d > 1 << 16) {
            return refuse("latent attention needs kv rank, rope, nope and value dims from 1 to 65536 (query rank 0 to 65536)");
        }
    }
    Ok(())
}

/// A mixture of experts: its counts, expert parallelism, LoRA, capacity.
fn experts(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let a = &cfg.arch;
    let p = &cfg.parallel;
    if let Some(m) = a.moe {
        if m.experts == 0 || m.top_k == 0 || m.top_k > m.experts || m.experts > 1 << 12 {
            return refuse("experts must be 1 to 4096 and top-k from 1 to the experts");
        }
        if m.expert_ffn == 0 || m.expert_ffn > 1 << 20 || m.shared_ffn > 1 << 20 {
            return refuse("expert FFN must be 1 to 2²⁰ (shared FFN up to 2²⁰)");
        }
        if m.first_dense >= a.layers {
            return refuse("dense layers before the first MoE layer must be fewer than the layers");
        }
        if !m.experts.is_multiple_of(p.ep) {
            return refuse("expert parallelism must divide the experts");
        }
        if cfg.lora_rank.is_some()
            && cfg
                .lora_targets
                .any(LoraTargets::GATE | LoraTargets::UP | LoraTargets::DOWN)
        {
            return refuse(
                "LoRA on experts' MLPs is not modelled: choose attention targets (q, k, v, o)",
            );
        }
    }
    if cfg
        .capacity_factor
        .is_some_and(|c| !(c.is_finite() && (0.1..=64.0).contains(&c)))
    {
        return refuse("capacity factor must be from 0.1 to 64");
    }
    Ok(())
}

/// A quantized frozen base (QLoRA): bitsandbytes' own rules.
fn quantized_base(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let a = &cfg.arch;
    if cfg.base_quant != BaseQuant::None {
        if cfg.lora_rank.is_none() {
            return refuse("a quantized base is frozen: QLoRA needs LoRA (a LoRA rank); full fine-tuning of a 4- or 8-bit base is not a thing bitsandbytes does");
        }
        if a.moe.is_some() {
            return refuse("a quantized base with mixture of experts is not modelled (bitsandbytes does not quantize fused expert tensors)");
        }
        if cfg.precision == Precision::Fp32 {
            return refuse("a quantized base computes in 16 bits: choose mixed or bf16 precision");
        }
    }
    quant_path(cfg)
}

/// The quantization path: each trainer's code quantizes what it can.
fn quant_path(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    use crate::detailed::config::QuantPath;
    match (cfg.quant_path, cfg.base_quant) {
        (QuantPath::Peft, _) => Ok(()),
        (_, BaseQuant::None) => refuse("a quantization path other than peft needs a 4-bit base: add --quant-base nf4"),
        (QuantPath::Torchao, BaseQuant::Nf4 { double_quant: false }) | (QuantPath::Torchao, BaseQuant::Int8) => refuse("torchao's NF4Tensor (torchtune's QLoRA) is 4-bit with its scalers always double-quantized: use --quant-base nf4"),
        (QuantPath::FsdpQlora, BaseQuant::Int8) => refuse("FSDP-QLoRA stores its base in 4 bits (bitsandbytes' Params4bit with quant_storage): use --quant-base nf4 or nf4-nodq"),
        _ => Ok(()),
    }
}

/// ZeRO-Offload: what it needs, what it cannot run.
fn offload(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let p = &cfg.parallel;
    let o = &cfg.offload;
    if (o.optimizer || o.params) && p.zero == 0 {
        return refuse(
            "offloading the optimizer or the parameters needs ZeRO (stage 1–3): it is ZeRO-Offload",
        );
    }
    if o.activations
        && o.activations_by == ActOffload::Torchtune
        && cfg.recompute != Recompute::Full
    {
        return refuse("torchtune's activation offloading runs with activation checkpointing only: its recipes refuse it otherwise (\"enable_activation_offloading should only be True when enable_activation_checkpointing is True\"): add --recompute full");
    }
    if o.activations
        && o.activations_by == ActOffload::Checkpoints
        && cfg.recompute != Recompute::Full
    {
        return refuse("offloaded checkpoints (Unsloth's gradient checkpointing) move each checkpointed layer input to the host: add --recompute full");
    }
    if o.activation_layers > 0 {
        megatron_offload(cfg)?;
    }
    if o.params && (p.zero < 3 || !o.optimizer) {
        return refuse("offloading the parameters needs ZeRO-3 and the optimizer offloaded too (DeepSpeed's offload_param)");
    }
    if o.optimizer && (cfg.optimizer.paged() || cfg.base_quant != BaseQuant::None) {
        return refuse("paged optimizers and quantized bases are bitsandbytes' own: DeepSpeed's CPU offload does not run them");
    }
    if o.gpus_per_node == 0 || o.gpus_per_node > 72 {
        return refuse("GPUs per node must be 1 to 72");
    }
    Ok(())
}

/// Megatron-Core's CPU offloading of its first layers
/// (`--cpu-offloading-num-layers`), as `TransformerConfig.__post_init__`
/// (`megatron/core/transformer/transformer_config.py` at d98e8a64) allows
/// it: fewer layers than the model's, no pipeline parallelism, no
/// recomputation; Transformer Engine's offload of each saved tensor.
fn megatron_offload(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let o = &cfg.offload;
    if !o.activations || o.activations_by != ActOffload::SaveOnCpu {
        return refuse("--offload-layers counts the layers Megatron-Core offloads (its cpu_offloading_num_layers): with --offload-activations save-on-cpu");
    }
    if o.activation_layers >= cfg.arch.layers {
        return refuse(&format!("Megatron-Core offloads fewer layers than the model's {} (\"CPU offloading can be done only for layers less than num_layers\"): lower --offload-layers", cfg.arch.layers));
    }
    if cfg.parallel.pp > 1 {
        return refuse("Megatron-Core's CPU offloading runs without pipeline parallelism (\"Currently there is no support for Pipeline parallelism with CPU offloading\"): --pp 1");
    }
    if cfg.recompute != Recompute::None || cfg.recompute_modules.any() {
        return refuse("Megatron-Core's CPU offloading runs without recomputation (\"CPU offloading does not work when activation recomputation is enabled\"): --recompute none");
    }
    Ok(())
}

/// Expert parallelism laid out over the data-, context- and tensor-parallel GPUs.
fn expert_layout(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let a = &cfg.arch;
    let p = &cfg.parallel;
    if p.ep == 0 || p.etp == 0 {
        return refuse("ep and etp must be at least 1");
    }
    if (p.ep > 1 || p.etp > 1) && a.moe.is_none() {
        return refuse("expert parallelism needs a mixture-of-experts model");
    }
    if !(p.data_group() * p.tp).is_multiple_of(p.ep * p.etp) {
        return refuse("ep × etp must divide dp × cp × tp (experts are laid out over the data-, context- and tensor-parallel GPUs)");
    }
    Ok(())
}

/// What each framework runs: FSDP2 is ZeRO-3, DeepSpeed stages 1–3, DDP no ZeRO.
fn framework(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let p = &cfg.parallel;
    let o = &cfg.offload;
    if matches!(cfg.framework, Framework::Fsdp2 { .. }) && p.zero != 3 {
        return refuse(
            "FSDP2 shards parameters, gradients and optimizer state: it is ZeRO-3 (--zero 3)",
        );
    }
    if let Framework::DeepSpeed {
        reduce_bucket_size,
        prefetch_bucket_size,
        sub_group_size,
        param_persistence_threshold,
        ..
    } = cfg.framework
    {
        if !(1..=3).contains(&p.zero) {
            return refuse("DeepSpeed runs ZeRO stages 1 to 3 (--zero 1, 2 or 3)");
        }
        if !(1_000..=10_000_000_000).contains(&reduce_bucket_size) {
            return refuse("DeepSpeed's reduce bucket must be 1e3 to 1e10 values");
        }
        if prefetch_bucket_size > 10_000_000_000 {
            return refuse("DeepSpeed's prefetch bucket must be 0 to 1e10 values");
        }
        if sub_group_size > 10_000_000_000 {
            return refuse("DeepSpeed's sub-group size must be 0 to 1e10 values");
        }
        if param_persistence_threshold > 10_000_000_000 {
            return refuse("DeepSpeed's persistence threshold must be 0 to 1e10 values");
        }
        if p.zero == 3 {
            // DeepSpeed's pipeline engine runs ZeRO stage 1 at most
            // (`runtime/pipe/engine.py`: "ZeRO-2 and ZeRO-3 are incompatible
            // with pipeline parallelism").
            if p.pp > 1 {
                return refuse("DeepSpeed's ZeRO-3 does not run with pipeline parallelism (its pipeline engine takes stage 1 at most)");
            }
            if o.activations {
                return refuse("DeepSpeed's ZeRO-3 is modelled without activation offload here: offload its optimizer and parameters (--offload-optimizer, --offload-params), or choose the megatron framework");
            }
            if cfg.lora_rank.is_some() || cfg.base_quant != BaseQuant::None {
                return refuse("DeepSpeed's ZeRO-3 is modelled for full training: LoRA and quantized bases are not");
            }
            if cfg.objective.reference_model() {
                return refuse(
                    "DeepSpeed's ZeRO-3 is modelled without a reference model (DPO, GRPO with KL)",
                );
            }
        }
    }
    if let Framework::Fsdp1 { sharding } = cfg.framework {
        if sharding == FsdpSharding::NoShard && p.zero != 0 {
            return refuse("FSDP1's NO_SHARD shards nothing: it is --zero 0");
        }
        if sharding != FsdpSharding::NoShard && p.zero != 3 {
            return refuse("FSDP1's FULL_SHARD and SHARD_GRAD_OP shard parameters, gradients and optimizer state: they are ZeRO-3 (--zero 3)");
        }
    }
    if matches!(cfg.framework, Framework::Ddp { .. }) && p.zero > 0 {
        return refuse("DistributedDataParallel shards nothing: ZeRO needs the Megatron framework (its distributed optimizer) here");
    }
    Ok(())
}

/// ZB-H1 is a schedule of its own.
fn zero_bubble(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let p = &cfg.parallel;
    if p.schedule == Schedule::ZbH1 && p.vp > 1 {
        return refuse("ZB-H1 is a schedule of its own: give it without virtual stages (--vp 1)");
    }
    Ok(())
}

/// The tensor-parallel plans as their trainers write them:
/// transformers' Llama plan has no sequence parallelism
/// (`base_model_tp_plan` names only the layers' projections), torchtitan's
/// `apply_tp` always puts the norms `SequenceParallel` and its embedding's
/// output is split over the sequence (`output_layouts=Shard(1)`).
fn tp_plan(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let par = &cfg.parallel;
    match par.plan() {
        TpPlan::Hf if par.sp => {
            refuse("transformers' tensor-parallel plan (hf) has no sequence parallelism: drop --sp")
        }
        TpPlan::Torchtitan | TpPlan::LossParallel if !par.sp && par.tp > 1 => {
            refuse("torchtitan's tensor-parallel plan always splits the sequence: add --sp")
        }
        _ => Ok(()),
    }
}

/// Context parallelism as Megatron-Core and Transformer Engine run it.
fn context(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let a = &cfg.arch;
    let p = &cfg.parallel;
    if p.cp == 0 || p.cp > 64 {
        return refuse("context parallelism must be 1 to 64");
    }
    // Megatron-Core splits each sequence into 2·cp chunks (two per GPU, to
    // balance the causal mask) and runs context parallelism through
    // Transformer Engine's fused (flash) attention only.
    if p.cp > 1 && !cfg.seq.is_multiple_of(2 * p.cp) {
        return refuse("context parallelism needs a sequence length divisible by 2 × cp");
    }
    // Transformer Engine's all-to-all gives each GPU heads / cp of the
    // heads, the key/value heads included (`AttnFuncWithCPAndQKVOA2A`).
    if p.cp > 1
        && p.cp_comm == CpComm::A2a
        && (!(a.heads / p.tp.max(1)).is_multiple_of(p.cp)
            || !(a.kv_heads / p.tp.max(1)).is_multiple_of(p.cp))
    {
        return refuse("all-to-all context parallelism (a2a) needs the attention and key/value heads per tensor-parallel GPU divisible by cp");
    }
    if p.cp > 1 && cfg.attention != AttentionKernel::Flash {
        return refuse(
            "context parallelism needs flash attention (ring attention runs in the fused kernel)",
        );
    }
    Ok(())
}

/// Experts with tensor parallelism need sequence parallelism.
fn experts_with_tp(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let a = &cfg.arch;
    let p = &cfg.parallel;
    // Megatron-LM's arguments.py: "When using MoE and tensor parallelism,
    // sequence parallelism must be used."
    if a.moe.is_some() && p.tp > 1 && !p.sp {
        return refuse("a mixture of experts with tensor parallelism needs sequence parallelism on (--sp), as Megatron-LM requires");
    }
    Ok(())
}

/// Sequence, batch, micro-batch, parallel degrees and ZeRO stage in range.
fn counts(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let p = &cfg.parallel;
    if cfg.seq == 0 || cfg.batch == 0 || cfg.micro_batch == Some(0) {
        return refuse("sequence length, batch and micro-batch must be at least 1");
    }
    if p.dp == 0 || p.tp == 0 || p.pp == 0 {
        return refuse("dp, tp and pp must be at least 1");
    }
    if p.zero > 3 {
        return refuse("ZeRO stage must be 0, 1, 2 or 3");
    }
    Ok(())
}

/// Hybrid sharding's group.
fn shard_group(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let p = &cfg.parallel;
    if let Some(n) = p.dp_shard {
        if n == 0 || !p.dp.is_multiple_of(n) {
            return refuse("the shard group (--dp-shard) must divide the data-parallel GPUs");
        }
        if p.zero == 0 && n < p.dp {
            return refuse(
                "hybrid sharding (--dp-shard) shards ZeRO's states: give --zero 1, 2 or 3",
            );
        }
        if matches!(cfg.framework, Framework::DeepSpeed { .. }) && n < p.dp {
            return refuse("hybrid sharding (--dp-shard) is PyTorch FSDP's; DeepSpeed's ZeRO++ partitions differently and is not modelled");
        }
    }
    Ok(())
}

/// The layout divides the heads, layers and batch.
fn divides(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let a = &cfg.arch;
    let p = &cfg.parallel;
    if !a.heads.is_multiple_of(p.tp) {
        return refuse("tensor parallelism must divide the attention heads");
    }
    if p.pp > a.layers {
        return refuse("pipeline stages cannot exceed the layers");
    }
    if !cfg.batch.is_multiple_of(cfg.micro() * p.dp) {
        return refuse("batch must be a multiple of micro-batch × dp");
    }
    Ok(())
}

/// The optimizer in backward as torchtune runs it (torchtune 0.6.1,
/// `recipes/full_finetune_single_device.py`, `__init__`: "Gradient
/// accumulation is not supported with optimizer in bwd", "Gradient clipping
/// is not supported with optimizer in bwd"; `_setup_optimizer`: one
/// optimizer per parameter, `training.register_optim_in_bwd_hooks`), priced
/// on one GPU with PyTorch's own gradients: each parameter's step runs when
/// its gradient is ready, so nothing can be accumulated, clipped or
/// reduced across GPUs first.
fn in_backward(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    if !cfg.optimizer_in_backward {
        return Ok(());
    }
    if cfg.batch > cfg.micro() * cfg.parallel.dp.max(1) {
        return refuse("the optimizer in backward steps each parameter as soon as its gradient is ready, so gradients cannot be accumulated: torchtune refuses it (\"Gradient accumulation is not supported with optimizer in bwd\"); set the batch to micro-batch × dp");
    }
    if cfg.lora_rank.is_some() {
        return refuse("the optimizer in backward is torchtune's full fine-tuning recipes' option (optimizer_in_bwd); its LoRA recipes and PEFT do not offer it");
    }
    if cfg.objective != Objective::Sft {
        return refuse("the optimizer in backward is priced for supervised fine-tuning (torchtune's full fine-tuning recipes); TRL's DPO and GRPO trainers do not offer it");
    }
    if cfg.optimizer == Optimizer::Muon {
        return refuse("Muon splits the parameters between Muon and AdamW; the optimizer in backward runs one optimizer per parameter");
    }
    if cfg.profile == Profile::Fused {
        return refuse("Megatron keeps every gradient in buffers for the whole run; the optimizer in backward frees each as PyTorch's autograd makes it: use the hf profile");
    }
    if cfg.gpus() > 1 || cfg.parallel.zero > 0 || cfg.offload.optimizer || cfg.offload.params {
        return refuse("the optimizer in backward is priced on one GPU (torchtune's full_finetune_single_device): across GPUs each gradient must first be reduced, which this model does not price");
    }
    Ok(())
}

/// `torch.compile` as measured (`tests/fixtures/compile_measured.tsv`):
/// stock `transformers`' dense GPT-2 and Llama with SDPA, the full loss or
/// torchtune's chunked loss compiled per chunk
/// (`tests/fixtures/compile_loss_measured.tsv`),
/// no dropout, no adapters, no recomputation or full recomputation, over
/// the layouts of [`compiled_layout`]. What the partitioner saves elsewhere
/// is not measured, so it is refused rather than guessed.
fn compiled(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    if !cfg.compile {
        return Ok(());
    }
    let a = &cfg.arch;
    if cfg.profile != Profile::Hf || cfg.liger {
        return refuse("torch.compile is priced over stock transformers' modules: use --impl hf (Megatron's and Liger's kernels are already fused)");
    }
    if a.moe.is_some()
        || a.mla.is_some()
        || a.ssm.is_some()
        || a.sandwich_norms
        || a.qk_norm
        || a.softcap
        || a.attention_sinks
        || a.llama4()
    {
        return refuse("torch.compile is measured on dense GPT-2 and Llama layers only (no experts, latent attention, Mamba mixer, q/k or sandwich norms, soft cap or sinks)");
    }
    if cfg.compile_scope.per_layer() && a.family != Family::Llama {
        return refuse("torch.compile layer by layer (--compile-scope layers or layers-loss) is measured on Llama-family models only: use --compile-scope model");
    }
    if cfg.attention != AttentionKernel::Flash || cfg.dropout {
        return refuse("torch.compile is measured with SDPA and no dropout: use --attention flash without --dropout");
    }
    if cfg.lora_rank.is_some()
        || !matches!(cfg.loss, Loss::Full | Loss::Chunked)
        || cfg.objective != Objective::Sft
    {
        return refuse("torch.compile is measured for full supervised fine-tuning with the full or torchtune's chunked loss: no LoRA, fused loss (Liger, Cut Cross-Entropy), DPO or GRPO");
    }
    if cfg.fp8 != Fp8::None {
        compiled_float8(cfg)?;
    }
    if cfg.loss == Loss::Chunked && a.family != Family::Llama {
        return refuse("torch.compile with the chunked loss is measured on Llama-family models only (torchtune's)");
    }
    if cfg.recompute == Recompute::Selective {
        return refuse(
            "torch.compile is measured without recomputation, with full recomputation or with torchtitan's per-operator checkpointing (--recompute selective-op)",
        );
    }
    // Per-operator checkpointing inside the compiled graph: measured on
    // bias-free Llama layers (`tests/fixtures/compile_sac_measured.tsv`).
    if cfg.recompute == Recompute::SelectiveOp && (a.family != Family::Llama || a.qkv_bias) {
        return refuse("torch.compile with per-operator checkpointing is measured on Llama layers with bias-free projections only: choose full or none");
    }
    // GPT-2 with checkpointing inside the compiled graph: the saved bytes
    // are as priced, but the backward's peak is not (the walk's tied-table
    // moment is 10 to 19 % above the measured peak), so it is not priced.
    if cfg.recompute == Recompute::Full && a.family == Family::Gpt2 {
        return refuse("torch.compile with full recomputation is priced for Llama-family layers only: GPT-2's compiled backward with checkpointing was measured up to 19 % below the model's peak");
    }
    compiled_layout(cfg)
}

/// torchao's float8 under `torch.compile`, on Llama layers: tensorwise
/// and rowwise without recomputation and with full recomputation
/// (`tests/fixtures/compile_fp8_measured.tsv`), tensorwise and rowwise
/// with torchtitan's per-operator checkpointing on whole layers
/// (`tests/fixtures/compile_sac_fp8_measured.tsv`, priced by
/// `activations::compiled::selective_op`), and those under torchtitan's
/// tensor-parallel plan (`compile_sac_fp8_tp_measured.tsv`; the plans
/// [`crate::detailed::memory::sac::unsupported`] allows with float8).
fn compiled_float8(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let measured = cfg.arch.family == Family::Llama
        && match cfg.recompute {
            Recompute::None | Recompute::Full => {
                matches!(cfg.fp8, Fp8::Tensorwise | Fp8::Rowwise)
            }
            Recompute::SelectiveOp => matches!(cfg.fp8, Fp8::Tensorwise | Fp8::Rowwise),
            Recompute::Selective => false,
        };
    if !measured {
        return refuse("torch.compile with float8 is measured on Llama layers for torchao's tensorwise and rowwise recipes, without recomputation, with full recomputation or with torchtitan's per-operator checkpointing (--recompute selective-op); Transformer Engine's recipes compiled are not");
    }
    Ok(())
}

/// `torch.compile` over a layout: torchtitan compiles each decoder layer
/// on its own (`apply_compile`), so a pipeline stage's layers are priced as
/// any compiled layer, and under a DTensor tensor-parallel plan the
/// partitioner sees each GPU's shard: the compiled layer's tensors split as
/// eager autograd's are (measured, `tests/fixtures/compile_tp_measured.tsv`).
/// Context parallelism is composed the same way (each GPU's seq / cp
/// tokens beside the eager ring's buffers), an assumption: context
/// parallelism is not measured here, eager or compiled.
fn compiled_layout(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let p = &cfg.parallel;
    if p.tp > 1 && !p.dtensor_layers() {
        return refuse("torch.compile under tensor parallelism is measured with DTensor plans (PyTorch's): choose --tp-plan torchtitan, loss-parallel, hf or layers");
    }
    if p.ep > 1 || cfg.offload.activations {
        return refuse(
            "torch.compile is measured without expert parallelism and without activation offload",
        );
    }
    Ok(())
}
