//! GRPO (Shao et al. 2024, "DeepSeekMath", §4.1) as TRL's `GRPOTrainer`
//! runs it (TRL 1.16, `trl/trainer/grpo_trainer.py`), with generation by
//! `model.generate` (TRL's default, `use_vllm=False`).
//!
//! One optimizer step on one GPU:
//!
//! 1. **Rollout** (`_generate_and_score_completions`): the GPU generates the
//!    completions of its whole generation batch at once, micro-batch ×
//!    `steps_per_generation` sequences (which defaults to the gradient
//!    accumulation steps, `GRPOConfig.steps_per_generation`), under
//!    `torch.no_grad()`: the prompt's prefill, then one token at a time
//!    with `transformers`' key/value cache. With a KL penalty (`beta` > 0)
//!    the reference model then scores them, a micro-batch at a time.
//! 2. **Training**: each micro-batch of prompt + completion runs forward and
//!    backward like supervised training, except the output layer: TRL's
//!    fused LM head (`trl/kernels/chunked_logprob.py`,
//!    `ChunkedLogProbFunction`) projects the scored positions in tiles of
//!    4,096 tokens × 32,768 vocabulary entries and keeps per-token
//!    statistics, never the logits.
//!
//! The batch counts completions, as TRL's `per_device_train_batch_size`
//! does; the prompts per step are batch / generations. Measured on the CPU
//! (`tests/fixtures/measure_grpo.py`, `tests/grpo_vs_measured.rs`); what
//! only a GPU runs (Triton's tile kernel, vLLM's engine) is modelled from
//! the code named here.

use super::bytes::act_bytes;
use crate::detailed::config::{DetailedConfig, Device};

/// TRL's token tile of the fused LM head (`TOKEN_CHUNK_SIZE`).
const TOKEN_TILE: f64 = 4096.0;
/// TRL's vocabulary tile (`_CHUNKED_LOGPROB_CHUNK_SIZE`, `trainer/utils.py`).
const VOCAB_TILE: f64 = 32768.0;

/// Sequences one GPU generates at once: micro-batch × the accumulation
/// steps (`generation_batch_size` = `per_device_train_batch_size` ×
/// processes × `steps_per_generation`, split over the processes).
pub fn generation_batch(cfg: &DetailedConfig) -> u64 {
    cfg.micro() * cfg.accumulation_steps()
}

/// Positions of one micro-batch the fused head scores. On CUDA only the
/// completion's (`hidden_states[mask]`, "only the valid positions are
/// scored"); elsewhere every shifted position (`hidden_states.reshape`).
fn scored(cfg: &DetailedConfig) -> f64 {
    let b = cfg.micro() as f64;
    match cfg.device {
        Device::Cuda => b * cfg.rollout.completion_tokens(cfg.seq) as f64,
        Device::Cpu => b * cfg.seq.saturating_sub(1).max(1) as f64,
    }
}

/// The key/value cache of `b` sequences of `tokens` positions, every layer
/// (`DynamicLayer.update`: keys and values of each layer in the model's
/// dtype). Latent attention caches the up-projected keys and values, as
/// `transformers`' DeepSeek-V3 does. Sliding-window layers are counted
/// whole (an upper bound).
pub fn kv_cache(cfg: &DetailedConfig, b: f64, tokens: f64) -> f64 {
    let a = &cfg.arch;
    let per_token = match a.mla {
        Some(m) => a.heads * (m.nope_dim + m.rope_dim + m.v_dim),
        None => 2 * a.kv_dim(),
    } as f64;
    a.layers as f64 * b * tokens * per_token * act_bytes(cfg)
}

/// The fused head of one micro-batch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Head {
    /// Saved for backward: the scored positions' hidden states (a copy),
    /// their int64 targets, the fp32 log-normaliser and entropy
    /// (`ctx.save_for_backward`), the masks, and the GRPO loss's fp32
    /// per-token tensors (ratio, clipped ratio, the two surrogate terms,
    /// the log-ratio and the mask product: six, `_compute_loss`).
    pub(crate) saved: f64,
    /// Forward, at its largest: the product tile (`mm_buf`, min(N, 4,096)
    /// × 32,768 in the compute dtype, whatever the vocabulary) and seven
    /// fp32 running statistics per position; on the CPU, `_forward_tile`'s
    /// fp32 tensors of a tile's size (the scaled logits, `z − max` and its
    /// exponential: three at once).
    pub(crate) forward: f64,
    /// Backward, at its largest: the fp32 input gradient (N × h), the fp32
    /// weight gradient (V × h, when the output layer is trained), the tile,
    /// and either their casts to the dtype or, on the CPU,
    /// `_backward_tile`'s fp32 tensors of a tile's size at their most (the
    /// scaled logits twice, log p, p, the gradient, and the target mask as
    /// bool, as fp32 and minus p: seven fp32 and one bool).
    pub(crate) backward: f64,
}

pub(crate) fn head(cfg: &DetailedConfig) -> Head {
    let a = &cfg.arch;
    let n = scored(cfg);
    let (h, v) = (a.hidden as f64, a.vocab as f64);
    let p = act_bytes(cfg);
    // The head's products in the autocast dtype under mixed precision, the
    // weights' otherwise: the weights' bytes.
    let pc = super::states::weight_bytes(cfg);
    let b = cfg.micro() as f64;
    let shifted = b * cfg.seq.saturating_sub(1).max(1) as f64;
    let completion = b * cfg.rollout.completion_tokens(cfg.seq) as f64;
    let masks = match cfg.device {
        Device::Cuda => 2.0 * shifted,
        Device::Cpu => shifted,
    };
    let saved = n * h * p + 16.0 * n + masks + 6.0 * 4.0 * completion;
    let tile = n.min(TOKEN_TILE) * VOCAB_TILE * pc;
    let cols = n.min(TOKEN_TILE) * v.min(VOCAB_TILE);
    let cpu = cfg.device == Device::Cpu;
    let forward = tile + 7.0 * 4.0 * n + if cpu { 3.0 * 4.0 * cols } else { 0.0 };
    let trained_head = cfg.lora_rank.is_none();
    let grad_weight = if trained_head { 4.0 * v * h } else { 0.0 };
    let casts = if p < 4.0 { n * h * p } else { 0.0 }
        + if trained_head && super::states::weight_bytes(cfg) < 4.0 {
            v * h * super::states::weight_bytes(cfg)
        } else {
            0.0
        };
    let backward =
        4.0 * n * h + grad_weight + tile + if cpu { casts.max(29.0 * cols) } else { casts };
    Head {
        saved,
        forward,
        backward,
    }
}

/// The rollout's largest moment on one GPU, beside the weights and the
/// optimizer state: the prefill of the prompts or the last decoding step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Generation {
    /// Sequences generated at once.
    pub sequences: u64,
    /// The prefill: the prompts' cache and one layer's MLP on every prompt
    /// token without grad: four h-wide tensors (the embedding's output and
    /// the layer's input, both still referenced by `LlamaModel.forward`,
    /// the residual and the normed input), the rotary cos and sin, and the
    /// MLP's three F-wide tensors (`down_proj(act_fn(gate_proj(x)) *
    /// up_proj(x))`: the activation, the up projection and their product);
    /// located with the profiler's memory events.
    pub prefill: f64,
    /// The last step: the cache of every position but the last, the layer
    /// whose keys grow by `torch.cat` (old and new beside each other), and
    /// the step's logits (`GenerationMixin._sample`: the last position's
    /// in the dtype, their fp32 copy, and the sampling probabilities; TRL's
    /// default temperature 1, top-p 1 and top-k 0 add no processed copy).
    pub decode: f64,
    /// The key/value cache at the end.
    pub cache: f64,
}

/// A colocated vLLM engine's copy of the weights, in the 16-bit dtype it
/// serves (`LLM(model=model.name_or_path)` loads the checkpoint's).
pub fn engine_weights(cfg: &DetailedConfig) -> f64 {
    2.0 * cfg.arch.params() as f64
}

/// Bytes a colocated vLLM engine holds through training: its reservation,
/// unless it sleeps between rollouts.
pub fn engine_during_training(cfg: &DetailedConfig) -> f64 {
    match cfg.rollout.vllm {
        Some(v)
            if matches!(
                cfg.objective,
                crate::detailed::config::Objective::Grpo { .. }
            ) && !v.sleep =>
        {
            v.reserved as f64
        }
        _ => 0.0,
    }
}

/// The widest of an MLP's three F-wide tensors under no grad: the dense
/// width, or with experts the larger of the shared expert's and the top-k
/// routed ones'.
fn mlp_width(a: &crate::detailed::model::Architecture) -> f64 {
    a.moe
        .map_or(a.ffn, |m| m.shared_ffn.max(m.expert_ffn * m.top_k)) as f64
}

/// The reference model scoring one micro-batch without grad (`grpo-kl`):
/// the backbone's output and its copy for the head, one layer's MLP
/// tensors and the fused head's forward.
pub(crate) fn reference_forward(cfg: &DetailedConfig) -> f64 {
    let a = &cfg.arch;
    let p = act_bytes(cfg);
    let n = (cfg.micro() * cfg.seq) as f64;
    head(cfg).forward + 2.0 * n * a.hidden as f64 * p + 3.0 * n * mlp_width(a) * p
}

/// The rollout on one GPU. With a colocated vLLM engine the prefill and the
/// decoding run inside its reservation (`prefill` and `decode` are that
/// reservation); `cache` is still the cache the completions need, which
/// must fit in it.
pub fn generation(cfg: &DetailedConfig) -> Generation {
    let a = &cfg.arch;
    let b = generation_batch(cfg) as f64;
    let c = cfg.rollout.completion_tokens(cfg.seq) as f64;
    let prompt = cfg.seq as f64 - c;
    let last = (cfg.seq - 1) as f64;
    let p = act_bytes(cfg);
    let (h, v) = (a.hidden as f64, a.vocab as f64);
    let n = b * prompt;
    let mlp = mlp_width(a);
    let rope = 2.0 * n * a.head_dim() as f64 * p;
    let prefill = kv_cache(cfg, b, prompt) + 4.0 * n * h * p + rope + 3.0 * n * mlp * p;
    let cache = kv_cache(cfg, b, last);
    let one_layer = cache / a.layers as f64 / 2.0;
    let decode = cache + one_layer + b * v * (p + 2.0 * 4.0);
    if let Some(v) = cfg.rollout.vllm {
        let r = v.reserved as f64;
        return Generation {
            sequences: b as u64,
            prefill: r,
            decode: r,
            cache,
        };
    }
    Generation {
        sequences: b as u64,
        prefill,
        decode,
        cache,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detailed::config::{Rollout, Vllm};
    use crate::detailed::{estimate, preset, timeline, Moment, Objective, Phase, StepOptions};

    fn qwen3_8b_grpo(kl: bool) -> DetailedConfig {
        let mut cfg = DetailedConfig::new(preset("qwen3-8b").unwrap().arch, 4608, 8);
        cfg.profile = crate::detailed::Profile::Hf;
        cfg.attention = crate::detailed::AttentionKernel::Flash;
        cfg.dropout = false;
        cfg.objective = Objective::Grpo { kl };
        cfg.rollout = Rollout {
            completion: 4096,
            ..Rollout::default()
        };
        cfg
    }

    /// Qwen3-8B's cache: 36 layers × keys and values × 8 heads × 128 × 2
    /// bytes = 147,456 bytes per token; 8 sequences of 4,607 positions.
    #[test]
    fn cache_is_layers_times_keys_and_values() {
        let cfg = qwen3_8b_grpo(false);
        assert_eq!(kv_cache(&cfg, 1.0, 1.0), 147_456.0);
        let g = generation(&cfg);
        assert_eq!(g.sequences, 8);
        assert_eq!(g.cache, 147_456.0 * 8.0 * 4607.0);
        // Decoding, not the 512-token prefill, is the rollout's peak here.
        assert!(g.decode > g.prefill);
    }

    /// The fused head keeps no logits: GRPO's activations hold none, and
    /// its forward tile is 4,096 × 32,768 in bf16 however large the
    /// vocabulary (Qwen3's 151,936).
    #[test]
    fn fused_head_keeps_no_logits() {
        let cfg = qwen3_8b_grpo(false);
        let mut sft = cfg;
        sft.objective = Objective::Sft;
        let (g, s) = (estimate(&cfg).unwrap(), estimate(&sft).unwrap());
        assert_eq!(g.logits, 0.0);
        assert!(s.logits > 1e10, "{}", s.logits);
        let head = head(&cfg);
        let n = 8.0 * 4096.0;
        assert_eq!(head.forward, 4096.0 * 32768.0 * 2.0 + 28.0 * n);
    }

    /// The KL penalty loads the reference beside the policy (2 bytes per
    /// parameter), except under LoRA, and adds its scoring to the rollout.
    #[test]
    fn kl_adds_the_reference_except_under_lora() {
        let plain = estimate(&qwen3_8b_grpo(false)).unwrap();
        let kl = estimate(&qwen3_8b_grpo(true)).unwrap();
        let n = preset("qwen3-8b").unwrap().arch.params() as f64;
        assert_eq!(kl.params - plain.params, 2.0 * n);
        let t = timeline(&qwen3_8b_grpo(true), &StepOptions::default()).unwrap();
        assert!(t
            .events
            .iter()
            .any(|e| e.phase == Phase::Generation && e.moment == Moment::ReferenceForward));
        let mut lora = qwen3_8b_grpo(true);
        lora.lora_rank = Some(16);
        let mut lora_plain = lora;
        lora_plain.objective = Objective::Grpo { kl: false };
        assert_eq!(
            estimate(&lora).unwrap().params,
            estimate(&lora_plain).unwrap().params
        );
    }

    /// The rollout comes first in the step, and its cache grows with the
    /// completion: generation's peak rises by exactly the cache added.
    #[test]
    fn rollout_leads_the_step_and_grows_with_the_completion() {
        let cfg = qwen3_8b_grpo(false);
        let t = timeline(&cfg, &StepOptions::default()).unwrap();
        assert_eq!(t.events[0].phase, Phase::Generation);
        let mut longer = cfg;
        longer.seq += 1024;
        longer.rollout.completion += 1024;
        let t2 = timeline(&longer, &StepOptions::default()).unwrap();
        let grow =
            t2.phase_peak(Phase::Generation).unwrap() - t.phase_peak(Phase::Generation).unwrap();
        let cache = generation(&longer).cache - generation(&cfg).cache;
        // The cache and the growing layer's copy (one half-layer more).
        assert!(
            (grow / (cache * (1.0 + 0.5 / 36.0)) - 1.0).abs() < 1e-9,
            "{grow} {cache}"
        );
    }

    /// A colocated vLLM engine's reservation sits beside training unless
    /// it sleeps, and replaces `generate`'s cache in the rollout; one too
    /// small for its own weights is refused.
    #[test]
    fn colocated_vllm_holds_its_reservation() {
        let plain = qwen3_8b_grpo(false);
        let peak = |c: &DetailedConfig, phase: Phase| {
            timeline(c, &StepOptions::default())
                .unwrap()
                .phase_peak(phase)
                .unwrap()
        };
        let mut vllm = plain;
        vllm.rollout.vllm = Some(Vllm {
            reserved: 25_000_000_000,
            sleep: false,
        });
        let extra = peak(&vllm, Phase::Backward) - peak(&plain, Phase::Backward);
        assert!((extra - 25e9).abs() < 1.0, "{extra}");
        let kept = timeline(&plain, &StepOptions::default())
            .unwrap()
            .events
            .last()
            .unwrap()
            .live
            .total();
        assert!((peak(&vllm, Phase::Generation) - kept - 25e9).abs() < 1.0);
        let mut asleep = vllm;
        asleep.rollout.vllm = Some(Vllm {
            reserved: 25_000_000_000,
            sleep: true,
        });
        assert_eq!(
            peak(&asleep, Phase::Backward),
            peak(&plain, Phase::Backward)
        );
        // The peak's sentence names the engine apart from the gradients.
        let t = timeline(&vllm, &StepOptions::default()).unwrap();
        let why = crate::detailed::why_peak(&t, 0.0, |b| format!("{:.1} GB", b / 1e9));
        assert!(
            why.contains("vLLM engine keeps its reservation (25.0 GB)"),
            "{why}"
        );
        asleep.rollout.vllm = Some(Vllm {
            reserved: 10_000_000_000,
            sleep: true,
        });
        assert!(estimate(&asleep).is_err());
    }

    /// Many completions at once: the rollout's cache, not training, sets
    /// the step's peak, and the page's sentence says so.
    #[test]
    fn a_large_rollout_is_the_peak_and_named() {
        let mut cfg = qwen3_8b_grpo(false);
        cfg.lora_rank = Some(16);
        cfg.recompute = crate::detailed::Recompute::Full;
        cfg.batch = 64;
        cfg.micro_batch = Some(8);
        assert_eq!(generation(&cfg).sequences, 64);
        let t = timeline(&cfg, &StepOptions::default()).unwrap();
        assert_eq!(t.peak_event().moment, Moment::Decode);
        let why = crate::detailed::why_peak(&t, 0.0, |b| format!("{:.1} GB", b / 1e9));
        assert!(why.contains("rollout at its last token"), "{why}");
    }

    /// A completion as long as the sequence leaves one prompt token.
    #[test]
    fn completion_is_clamped_below_the_sequence() {
        let r = Rollout {
            completion: 9000,
            ..Rollout::default()
        };
        assert_eq!(r.completion_tokens(4096), 4095);
        assert_eq!(r.completion_tokens(1), 1);
    }
}
