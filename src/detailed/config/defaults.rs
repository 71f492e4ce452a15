//! The defaults of the detailed model, in one place for the page and the
//! command line, and the ones that follow what the reader chose.
//!
//! A setting the reader did not choose takes the value a reader would
//! expect from what they did choose:
//!
//! | setting | default | why |
//! |---|---|---|
//! | attention | flash | PyTorch's SDPA and FlashAttention keep no a·s² scores; `transformers` picks SDPA by default (`attn_implementation`), Megatron uses flash attention |
//! | dropout | off | Llama, Qwen, Mistral and Gemma configs set their dropouts to 0 |
//! | recomputation | none; full under GRPO | nothing is recomputed unless asked for; TRL's GRPO trainer checkpoints every layer by default |
//! | precision, optimizer | mixed (bf16 + fp32 master), AdamW | the lesson's set-up |
//! | kernels (profile) | `hf` with LoRA, a quantized base, DPO, GRPO or an imported config.json; `fused` otherwise | PEFT, bitsandbytes and TRL (DPO, GRPO) run stock `transformers`; pre-training at scale runs Megatron-style fused kernels |
//!
//! ```
//! use membudget::detailed::{config::defaults, preset, DetailedConfig, Profile};
//!
//! let mut cfg = DetailedConfig::new(preset("llama-3.1-8b").unwrap().arch, 4096, 1);
//! cfg.lora_rank = Some(16);
//! let (profile, why) = defaults::profile(&cfg, false);
//! assert_eq!(profile, Profile::Hf);
//! assert_eq!(why, "LoRA");
//! ```

use super::{AttentionKernel, BaseQuant, DetailedConfig, Objective, Profile, Recompute};

/// Attention kernel unless chosen: flash (no a·s² scores kept).
pub const ATTENTION: AttentionKernel = AttentionKernel::Flash;
/// Dropout unless chosen: off.
pub const DROPOUT: bool = false;
/// Recomputation unless chosen: none.
pub const RECOMPUTE: Recompute = Recompute::None;

/// Recomputation unless chosen, for an objective: full under GRPO, whose
/// trainer checkpoints every layer by default (TRL's `GRPOConfig`:
/// "`gradient_checkpointing`: Defaults to `True`"), [`RECOMPUTE`]
/// otherwise.
pub fn recompute(objective: Objective) -> Recompute {
    match objective {
        Objective::Grpo { .. } => Recompute::Full,
        _ => RECOMPUTE,
    }
}
/// Sequence length unless given, tokens.
pub const SEQ: u64 = 2048;
/// Micro-batch unless given, sequences. Without `--batch` the command
/// line's batch is then micro-batch × dp (no accumulation); the page's
/// batch is its slider.
pub const MICRO_BATCH: u64 = 1;

/// The kernel profile for `cfg` when the reader did not choose one, and the
/// reason in a few words: stock `transformers` (`hf`) for what people run
/// with it (LoRA and QLoRA through PEFT and bitsandbytes, DPO through TRL,
/// torchtune's optimizer in backward, `torch.compile` over `transformers`'
/// modules, a model imported from its
/// config.json, a loss without the full logits), Megatron-style fused
/// kernels
/// otherwise.
pub fn profile(cfg: &DetailedConfig, imported: bool) -> (Profile, &'static str) {
    if cfg.base_quant != BaseQuant::None {
        (Profile::Hf, "QLoRA")
    } else if cfg.lora_rank.is_some() {
        (Profile::Hf, "LoRA")
    } else if matches!(cfg.objective, Objective::Dpo { .. }) {
        (Profile::Hf, "DPO")
    } else if matches!(cfg.objective, Objective::Grpo { .. }) {
        (Profile::Hf, "GRPO")
    } else if cfg.optimizer_in_backward {
        (Profile::Hf, "the optimizer in backward")
    } else if cfg.compile {
        (Profile::Hf, "torch.compile")
    } else if imported {
        (Profile::Hf, "a config.json")
    } else if cfg.loss != super::Loss::Full {
        (Profile::Hf, "a loss without the full logits")
    } else {
        (Profile::Fused, "full training")
    }
}

/// Options chosen in `cfg` that change nothing under its profile, each with
/// what was priced instead.
///
/// Selective recomputation (Korthikanti et al. 2022, §5) recomputes only
/// the attention's a·s² part, which flash attention never keeps, so with
/// flash attention it prices exactly as none (`activations::saved`). It is
/// Megatron's: stock `transformers` has only whole-layer checkpointing.
pub fn ignored(cfg: &DetailedConfig) -> Vec<&'static str> {
    let mut out = Vec::new();
    if cfg.recompute == Recompute::Selective && cfg.attention == AttentionKernel::Flash {
        out.push(
            "selective recomputation drops only the a·s² attention scores, which flash \
             attention does not keep: priced exactly as none",
        );
    } else if cfg.recompute == Recompute::Selective && cfg.profile == Profile::Hf {
        out.push(
            "stock transformers has no selective recomputation (only full checkpointing); \
             priced as Megatron's, without the a·s² scores",
        );
    }
    out.extend(ignored_modules(cfg));
    if cfg.profile == Profile::Hf && cfg.capacity_factor.is_some() {
        out.push("the capacity factor is Megatron's; transformers' experts are dropless");
    }
    if cfg.moe_dispatcher != super::MoeDispatcher::AllToAll
        && (cfg.profile != Profile::Fused || cfg.arch.moe.is_none() || cfg.parallel.ep <= 1)
    {
        out.push("the token dispatcher is Megatron-Core's expert parallelism's (fused, a mixture of experts, --ep above 1): it changes nothing here");
    }
    if cfg.profile == Profile::Fused
        && cfg.experts_impl != super::ExpertsImpl::Grouped
        && cfg.arch.moe.is_some()
    {
        out.push("the experts' implementation applies to transformers (hf) only");
    }
    if cfg.loss != super::Loss::Chunked && cfg.loss_chunks != super::LOSS_CHUNKS {
        out.push("the loss's chunks count only under torchtune's chunked loss");
    }
    out
}

/// What a configuration means beyond its inputs, in one line the page and
/// the command line both show: `micro-batch 2 × 4 accumulation steps × dp 8
/// = 64 sequences per step; 16 GPUs (dp 8 × tp 2 × pp 1)`.
pub fn layout(cfg: &DetailedConfig) -> String {
    let p = &cfg.parallel;
    let (acc, seqs, gpus) = (cfg.accumulation_steps(), cfg.effective_batch(), cfg.gpus());
    let plural = |n: u64| if n == 1 { "" } else { "s" };
    let asked = if seqs == cfg.batch {
        String::new()
    } else {
        format!(" (a batch of {} asked)", cfg.batch)
    };
    let cp = if p.cp > 1 {
        format!(" × cp {}", p.cp)
    } else {
        String::new()
    };
    format!(
        "micro-batch {} × {acc} accumulation step{} × dp {} = {seqs} sequence{} per step{asked}; \
         {gpus} GPU{} (dp {} × tp {} × pp {}{cp})",
        cfg.micro(),
        plural(acc),
        p.dp,
        plural(seqs),
        plural(gpus),
        p.dp,
        p.tp,
        p.pp,
    )
}

/// Which kernels priced `cfg` and why: `priced with hf kernels (stock
/// transformers), the default for LoRA`, or `…, as chosen`.
pub fn kernels(cfg: &DetailedConfig, reason: &str) -> String {
    let kernels = match cfg.profile {
        Profile::Fused => "fused kernels (Megatron)",
        Profile::Hf => "hf kernels (stock transformers)",
    };
    if reason == "chosen" {
        format!("priced with {kernels}, as chosen")
    } else {
        format!("priced with {kernels}, the default for {reason}")
    }
}

/// The recomputed modules (`--recompute-modules`) that change nothing in
/// `cfg`, each with why: they are Megatron-Core's, full recomputation
/// reruns them already, `moe_act` needs experts, and `layernorm` acts only
/// on norms that are modules of their own (a MoE layer's pre-MLP norm,
/// multi-latent attention's input norm).
fn ignored_modules(cfg: &DetailedConfig) -> Vec<&'static str> {
    let rm = cfg.recompute_modules;
    if !rm.any() {
        return Vec::new();
    }
    if !cfg.megatron_kernels() {
        return vec!["the recomputed modules are Megatron-Core's (fused kernels, --framework megatron): they change nothing here"];
    }
    if matches!(cfg.recompute, Recompute::Full | Recompute::SelectiveOp) {
        return vec!["the recomputed modules are selective recomputation's: under this --recompute they change nothing"];
    }
    let mut out = Vec::new();
    if rm.moe_act && cfg.arch.moe.is_none() {
        out.push("moe_act recomputes the routed experts' activation: the model has no experts");
    }
    if rm.mla_up_proj && cfg.arch.mla.is_none() {
        out.push(
            "mla_up_proj recomputes multi-latent attention's up-projections: the model has none",
        );
    }
    if (rm.moe || rm.shared_experts) && cfg.arch.moe.is_none() {
        out.push("moe and shared_experts: the model has no experts");
    }
    if rm.shared_experts && cfg.arch.moe.is_some_and(|e| e.shared_ffn == 0) {
        out.push("shared_experts: the model has no shared experts");
    }
    if rm.mlp && cfg.arch.moe_layers() == cfg.arch.layers {
        out.push("mlp: every layer here is a MoE layer");
    }
    if rm.layernorm && cfg.arch.moe.is_none() && cfg.arch.mla.is_none() {
        out.push("layernorm recomputes the norms that are modules of their own (a MoE layer's pre-MLP norm, multi-latent attention's input norm); this model's norms are fused into their projections (LayerNormLinear): it changes nothing");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detailed::{estimate, preset, Reference};

    fn llama() -> DetailedConfig {
        DetailedConfig::new(preset("llama-3.1-8b").unwrap().arch, 4096, 1)
    }

    #[test]
    fn layout_says_micro_batch_accumulation_and_gpus() {
        let mut cfg = llama();
        cfg.batch = 64;
        cfg.micro_batch = Some(2);
        cfg.parallel.dp = 8;
        cfg.parallel.tp = 2;
        assert_eq!(
            layout(&cfg),
            "micro-batch 2 × 4 accumulation steps × dp 8 = 64 sequences per step; \
             16 GPUs (dp 8 × tp 2 × pp 1)"
        );
        cfg.batch = 66;
        assert!(layout(&cfg).contains("= 64 sequences per step (a batch of 66 asked)"));
        assert_eq!(
            layout(&llama()),
            "micro-batch 1 × 1 accumulation step × dp 1 = 1 sequence per step; 1 GPU (dp 1 × tp 1 × pp 1)"
        );
    }

    #[test]
    fn profile_follows_the_choice() {
        let full = llama();
        let mut lora = llama();
        lora.lora_rank = Some(16);
        let mut qlora = lora;
        qlora.base_quant = BaseQuant::Nf4 { double_quant: true };
        let mut dpo = llama();
        dpo.objective = Objective::Dpo {
            reference: Reference::Model,
        };
        for (cfg, imported, want) in [
            (full, false, (Profile::Fused, "full training")),
            (full, true, (Profile::Hf, "a config.json")),
            (lora, false, (Profile::Hf, "LoRA")),
            (qlora, false, (Profile::Hf, "QLoRA")),
            (dpo, false, (Profile::Hf, "DPO")),
        ] {
            assert_eq!(profile(&cfg, imported), want);
        }
    }

    #[test]
    fn selective_with_flash_is_named_because_it_prices_as_none() {
        for profile in [Profile::Hf, Profile::Fused] {
            let mut cfg = llama();
            cfg.profile = profile;
            cfg.attention = AttentionKernel::Flash;
            cfg.recompute = Recompute::Selective;
            let selective = estimate(&cfg).unwrap();
            assert_eq!(ignored(&cfg).len(), 1);
            cfg.recompute = Recompute::None;
            assert_eq!(estimate(&cfg).unwrap(), selective);
            // With eager attention it drops the scores: not ignored under
            // fused kernels, named (but priced) under hf.
            cfg.attention = AttentionKernel::Eager;
            let none = estimate(&cfg).unwrap();
            cfg.recompute = Recompute::Selective;
            assert!(estimate(&cfg).unwrap().activations < none.activations);
            assert_eq!(ignored(&cfg).len(), usize::from(profile == Profile::Hf));
        }
    }
}
