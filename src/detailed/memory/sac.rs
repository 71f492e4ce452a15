//! Per-operator selective activation checkpointing, as torchtitan applies
//! it by default (`activation_checkpoint.mode = "selective"`,
//! `selective_ac_option = "op"`, `torchtitan/distributed/activation_checkpoint.py`).
//!
//! Every decoder layer is checkpointed (`torch.utils.checkpoint`,
//! non-reentrant) under a `create_selective_checkpoint_contexts` policy: the
//! outputs of the operators on a save list are cached during the forward
//! pass, everything else is run again in backward. The list holds the
//! matrix multiplies (`aten.mm`), the attention kernels (SDPA's flash and
//! memory-efficient ones) and `aten.max`; of the matrix multiplies, every
//! second one of a layer is recomputed anyway (the count restarts in each
//! layer's forward). A projection with a bias runs as `aten.addmm`, which
//! the list neither keeps nor counts.
//!
//! So a layer keeps its input, the attention kernel's output and
//! log-sum-exp, and the outputs of its first, third, … bias-free
//! projections in forward order; backward reruns the rest of the layer's
//! forward (every memory-bound kernel and the even-numbered projections)
//! and, while that layer's backward runs, holds what the forward pass
//! without checkpointing would have kept for it. The cache is popped as the
//! recomputation consumes it, so nothing is held twice.
//!
//! Measured on the CPU (`tests/fixtures/measure_sac.py`,
//! `tests/sac_vs_measured.rs`): the cache exactly, the step's peak within
//! ±5 %. With torchao's float8 and with DTensor tensor parallelism
//! ([`cached_bytes`]): `tests/fixtures/measure_sac_parallel.py`,
//! `tests/sac_parallel_vs_measured.rs`, likewise.
//!
//! The list is torchtitan's `_save_list` (`aten.mm`, SDPA's efficient and
//! flash kernels, `_c10d_functional.reduce_scatter_tensor`, `aten.max`,
//! flex attention), the count in `_get_custom_policy`. torchtitan 0.3.0
//! builds it in `_get_default_save_ops` from the partitioner's
//! compute-intensive ops, which adds `aten.addmm`, `aten.bmm` and
//! `aten._scaled_mm` (kept, not counted): for bias-free Llama layers under
//! SDPA, float8 included (the policy meets `aten.mm`, see [`cached_bytes`]),
//! the same cache; for biased projections and eager attention it keeps
//! more than modelled here. 0.3.0's `SelectiveAC._wrap_block` wraps with
//! `early_stop=False`: the whole layer's forward is rerun.

use crate::detailed::config::{AttentionKernel, DetailedConfig, Fp8, TpPlan};
use crate::detailed::model::{Architecture, Family};

/// One bias-free projection of a layer, in forward order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Projection {
    /// The width of its input, per token.
    pub input: u64,
    /// The width of its output, per token.
    pub out: u64,
    /// Row-parallel under tensor parallelism (the attention's output
    /// projection and the MLP's down projection: `RowwiseParallel` in
    /// torchtitan's `apply_tp`); the others are column-parallel.
    pub row_parallel: bool,
}

impl Projection {
    /// Its weight's elements: the multiply-adds per token.
    pub fn weights(&self) -> u64 {
        self.input * self.out
    }
}

/// A layer's projections that run as `aten.mm` (no bias), in the order the
/// forward pass calls them: q, k, v unless they carry biases (Qwen2), the
/// attention output, then the gated MLP's gate, up and down. GPT-2's
/// `Conv1D` layers all add a bias (`torch.addmm`): none.
pub fn bias_free_projections(a: &Architecture) -> Vec<Projection> {
    let (h, q, kv, f) = (a.hidden, a.q_dim(), a.kv_dim(), a.ffn);
    if a.family == Family::Gpt2 {
        return Vec::new();
    }
    let qkv: &[(u64, u64, bool)] = if a.qkv_bias {
        &[]
    } else {
        &[(h, q, false), (h, kv, false), (h, kv, false)]
    };
    qkv.iter()
        .chain(&[
            (a.o_dim(), h, true),
            (h, f, false),
            (h, f, false),
            (f, h, true),
        ])
        .map(|&(input, out, row_parallel)| Projection {
            input,
            out,
            row_parallel,
        })
        .collect()
}

/// Bytes one layer caches on one GPU for one micro-batch of `tokens`
/// tokens besides its input: the odd-numbered projections' outputs and,
/// under flash attention, the kernel's output and its fp32 log-sum-exp
/// (one value per head and token). Eager attention's products are
/// `aten.bmm`, off the list: nothing of the attention core is cached.
///
/// Under a DTensor tensor-parallel plan (torchtitan's `apply_tp`,
/// `models/llama3/infra/parallelize.py`) the policy sees each rank's local
/// `aten.mm`, counted as without it: a column-parallel projection's output
/// is its 1/t shard, a row-parallel one's the whole-width partial sum
/// (`Partial()`, before its reduction), the attention's heads 1/t. With
/// sequence parallelism the row-parallel outputs are reduce-scattered
/// (`_c10d_functional.reduce_scatter_tensor`, on the save list to avoid
/// re-communication): both of a layer's are kept, whatever their count,
/// h/t values a token each. The all-gathers are not on the list: rerun.
///
/// Float8 (torchao's `Float8Linear`, as torchtitan's float8 converter
/// applies it): the checkpoint's dispatch mode meets the matrix multiply
/// as `aten.mm` of two float8 tensor subclasses (the mode runs before the
/// subclass turns it into `aten._scaled_mm`), counted and kept as a
/// bf16 one; its output is in the activations' dtype. The tensorwise
/// recipe's scales come from `torch.max(torch.abs(x))` (`aten.max`, on
/// the list "for low precision training"): one value of the compute
/// dtype for each linear layer's input and weight. Rowwise scales use
/// `aten.amax`, not kept. Under tensor parallelism the tensorwise recipe
/// casts fewer inputs ([`tensorwise_scales`]); rowwise runs the plain
/// DTensor plan and keeps what bf16 keeps. All measured
/// (`tests/fixtures/measure_sac_parallel.py`).
pub fn cached_bytes(cfg: &DetailedConfig, tokens: f64, bytes_per_value: f64) -> f64 {
    let a = &cfg.arch;
    let par = &cfg.parallel;
    let t = par.tp.max(1) as f64;
    let projections = bias_free_projections(a);
    let kept: f64 = projections
        .iter()
        .step_by(2)
        .map(|p| {
            if p.row_parallel {
                p.out as f64
            } else {
                p.out as f64 / t
            }
        })
        .sum();
    let attention = match cfg.attention {
        AttentionKernel::Flash => (a.o_dim() as f64 * bytes_per_value + 4.0 * a.heads as f64) / t,
        AttentionKernel::Eager => 0.0,
    };
    let scattered = if par.tp > 1 && par.sp && par.dtensor_layers() {
        2.0 * a.hidden as f64 / t
    } else {
        0.0
    };
    let scales = match cfg.fp8 {
        Fp8::Tensorwise => tensorwise_scales(par.tp, projections.len()) * bytes_per_value,
        _ => 0.0,
    };
    tokens * ((kept + scattered) * bytes_per_value + attention) + scales
}

/// The tensorwise recipe's kept `aten.max` results in a layer of
/// `linears` linear layers: one per weight and one per cast input.
///
/// On one GPU each `Float8Linear` casts its own input: 2 · linears. Under
/// tensor parallelism torchtitan runs the recipe with torchao's float8
/// plan (torchtitan v0.2.2, `models/llama3/infra/parallelize.py`,
/// `parallelize_llama`: `enable_float8_tensorwise_tp` for every recipe
/// but rowwise; `apply_tp`: `Float8ColwiseParallel`,
/// `Float8RowwiseParallel`, `PrepareFloat8ModuleInput`), which casts a
/// sub-module's sequence-split input to float8 once, before its
/// all-gather (`torchao/float8/float8_tensor_parallel.py`), and the
/// column-wise projections reuse it (`tensor_already_casted_to_fp8`): the
/// attention's input (q, k, v), the output projection's, the MLP's (gate,
/// up) and the down projection's, 4 casts for a Llama layer's 7 weights.
/// Each rank's max is of its local shard (the all-reduce that follows is
/// not on the list). The gathered float8 input itself is not kept (the
/// all-gather is not on the list; the recomputation gathers it again).
/// Measured: 11 values a layer, `tests/fixtures/sac_fp8_tp_measured.tsv`.
pub fn tensorwise_scales(tp: u64, linears: usize) -> f64 {
    let inputs = if tp > 1 { 4 } else { linears };
    (linears + inputs) as f64
}

/// Weight elements per token of the projections backward runs again: the
/// even-numbered ones.
pub fn recomputed_weights(a: &Architecture) -> f64 {
    bias_free_projections(a)
        .iter()
        .skip(1)
        .step_by(2)
        .map(|p| p.weights() as f64)
        .sum()
}

/// Why the policy cannot be priced for `cfg`, if it cannot: the cases not
/// measured (its projections or kernels differ from a dense layer's).
///
/// Measured and priced (`tests/fixtures/sac_fp8_measured.tsv`,
/// `sac_tp_measured.tsv`, `sac_fp8_tp_measured.tsv`): torchao's
/// tensorwise and rowwise float8 on one GPU, DTensor tensor parallelism
/// (the layers' plan without sequence parallelism, torchtitan's with it,
/// loss parallel), and the two together under torchtitan's plan and loss
/// parallel (tensorwise with torchao's float8 plan, as torchtitan applies
/// it), on Llama layers. Refused, not measured: float8 under the layers'
/// or transformers' plan (torchtitan pairs float8 with its own plan only),
/// Transformer Engine's fp8, biased or non-Llama layers under either,
/// Megatron's plan (torchtitan's policy runs on DTensor plans only), and
/// context parallelism.
pub fn unsupported(cfg: &DetailedConfig) -> Option<&'static str> {
    let a = &cfg.arch;
    let p = &cfg.parallel;
    let fp8 = cfg.fp8 != Fp8::None;
    let llama = a.family == crate::detailed::model::Family::Llama && !a.qkv_bias;
    if a.moe.is_some() || a.mla.is_some() || a.ssm.is_some() {
        Some("per-operator checkpointing is modelled for dense layers (no experts, latent attention or Mamba-2 mixer)")
    } else if cfg.lora_rank.is_some() {
        Some("per-operator checkpointing with LoRA is not modelled (the adapters' matrix multiplies join the count): choose full or none")
    } else if !matches!(cfg.fp8, Fp8::None | Fp8::Tensorwise | Fp8::Rowwise) {
        Some("per-operator checkpointing with Transformer Engine's fp8 is not modelled: choose torchao's tensorwise or rowwise float8, or full")
    } else if p.cp > 1 {
        Some("per-operator checkpointing under context parallelism is not modelled: set cp to 1, or choose full")
    } else if fp8 && p.tp > 1 && !matches!(p.plan(), TpPlan::Torchtitan | TpPlan::LossParallel) {
        Some("per-operator checkpointing with float8 under tensor parallelism is modelled for torchtitan's plans, as torchtitan runs it (tensorwise with torchao's float8 all-gather): choose --tp-plan torchtitan or loss-parallel, set tp to 1, drop float8, or choose full")
    } else if p.tp > 1 && !p.dtensor_layers() {
        Some("per-operator checkpointing under tensor parallelism is modelled for torchtitan's DTensor plans: choose --tp-plan torchtitan, loss-parallel, hf or layers, or choose full")
    } else if (fp8 || p.tp > 1) && !llama {
        Some("per-operator checkpointing with float8 or tensor parallelism is modelled for Llama layers (bias-free projections): choose full")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detailed::preset;

    #[test]
    fn llama_keeps_q_v_gate_down_and_recomputes_k_o_up() {
        let a = preset("llama-3.1-8b").unwrap().arch;
        let p = bias_free_projections(&a);
        assert_eq!(p.len(), 7);
        let kept: Vec<u64> = p.iter().step_by(2).map(|p| p.out).collect();
        assert_eq!(kept, vec![4096, 1024, 14336, 4096]);
        assert_eq!(
            recomputed_weights(&a),
            (4096 * 1024 + 4096 * 4096 + 4096 * 14336) as f64
        );
    }

    #[test]
    fn biased_qkv_start_the_count_at_the_output_projection() {
        // Qwen2.5: q, k, v are addmm; o (kept), gate, up (kept), down.
        let a = preset("qwen2.5-7b").unwrap().arch;
        let kept: Vec<u64> = bias_free_projections(&a)
            .iter()
            .step_by(2)
            .map(|p| p.out)
            .collect();
        assert_eq!(kept, vec![a.hidden, a.ffn]);
        let gpt2 = preset("gpt2").unwrap().arch;
        assert!(bias_free_projections(&gpt2).is_empty());
    }

    #[test]
    fn cache_of_a_measured_layer() {
        // tests/fixtures/sac_measured.tsv's first row: 2 × 128 tokens,
        // fp32, h 256, 4 heads, 2 kv heads, ffn 688: q 256, v 128, gate
        // 688, down 256, SDPA's output 256 and log-sum-exp 4 × 4 bytes.
        let a = Architecture::llama(2, 256, 4, 2, 688, 32000);
        let mut cfg = DetailedConfig::new(a, 128, 2);
        cfg.attention = AttentionKernel::Flash;
        assert_eq!(cached_bytes(&cfg, 256.0, 4.0), 1_626_112.0);
        // Eager attention's products are `aten.bmm`: none of it cached.
        cfg.attention = AttentionKernel::Eager;
        assert_eq!(
            cached_bytes(&cfg, 256.0, 4.0),
            1_626_112.0 - 256.0 * (256.0 * 4.0 + 16.0)
        );
    }

    #[test]
    fn tensor_parallel_cache_of_a_measured_layer() {
        // tests/fixtures/sac_tp_measured.tsv's second shape, per rank of
        // 2: 2 layers, 2 × 1024 tokens, fp32, h 384, 8 heads, 4 kv heads,
        // ffn 1024: q 192, v 96, gate 512 (column shards), down 384 (a
        // partial sum, whole), SDPA's output 192 and 4 heads' log-sum-exp.
        let a = Architecture::llama(2, 384, 8, 4, 1024, 4000);
        let mut cfg = DetailedConfig::new(a, 1024, 2);
        cfg.attention = AttentionKernel::Flash;
        cfg.parallel.tp = 2;
        cfg.parallel
            .set_plan(crate::detailed::config::TpPlan::Layers);
        let per_token = (192 + 96 + 512 + 384 + 192) as f64 * 4.0 + 16.0;
        assert_eq!(cached_bytes(&cfg, 2048.0, 4.0), 2048.0 * per_token);
        assert_eq!(per_token * 2048.0 * 2.0, 22_609_920.0);
        // Sequence parallelism keeps the two reduce-scatters (h/t each).
        cfg.parallel
            .set_plan(crate::detailed::config::TpPlan::Torchtitan);
        cfg.parallel.sp = true;
        assert_eq!(
            cached_bytes(&cfg, 2048.0, 4.0),
            2048.0 * (per_token + 2.0 * 192.0 * 4.0)
        );
        assert_eq!(unsupported(&cfg), None);
    }

    #[test]
    fn float8_tensor_parallel_cache_of_a_measured_layer() {
        // tests/fixtures/sac_fp8_tp_measured.tsv, per rank of 2: 2 × 256
        // tokens, bf16, h 256, 4 heads, 2 kv heads, ffn 688, torchtitan's
        // plan: q 128, v 64, gate 344 (shards), down 256 (partial sum),
        // two reduce-scatters of 128, SDPA's output 128 and 2 heads'
        // log-sum-exp; tensorwise 11 bf16 maxima more (7 weights, 4 casts).
        let a = Architecture::llama(2, 256, 4, 2, 688, 8000);
        let mut cfg = DetailedConfig::new(a, 256, 2);
        cfg.attention = AttentionKernel::Flash;
        cfg.fp8 = Fp8::Rowwise;
        cfg.parallel.tp = 2;
        cfg.parallel.sp = true;
        cfg.parallel.set_plan(TpPlan::Torchtitan);
        let per_token = (128 + 64 + 344 + 256 + 2 * 128 + 128) as f64 * 2.0 + 2.0 * 4.0;
        assert_eq!(cached_bytes(&cfg, 512.0, 2.0), 512.0 * per_token);
        assert_eq!(2.0 * 512.0 * per_token, 2_416_640.0);
        cfg.fp8 = Fp8::Tensorwise;
        assert_eq!(cached_bytes(&cfg, 512.0, 2.0), 512.0 * per_token + 22.0);
        assert_eq!(tensorwise_scales(1, 7), 14.0);
    }

    #[test]
    fn refused_where_not_measured() {
        let a = Architecture::llama(2, 256, 4, 2, 688, 8000);
        let mut cfg = DetailedConfig::new(a, 256, 2);
        cfg.fp8 = Fp8::Tensorwise;
        assert_eq!(unsupported(&cfg), None);
        // Tensorwise keeps 2 scales for each of the 7 linear layers.
        let rowwise = DetailedConfig {
            fp8: Fp8::Rowwise,
            ..cfg
        };
        assert_eq!(
            cached_bytes(&cfg, 512.0, 2.0) - cached_bytes(&rowwise, 512.0, 2.0),
            28.0
        );
        cfg.parallel.tp = 2;
        cfg.parallel.sp = true;
        cfg.parallel
            .set_plan(crate::detailed::config::TpPlan::Torchtitan);
        assert_eq!(unsupported(&cfg), None);
        cfg.parallel
            .set_plan(crate::detailed::config::TpPlan::LossParallel);
        assert_eq!(unsupported(&cfg), None);
        for plan in [TpPlan::Layers, TpPlan::Hf, TpPlan::Megatron] {
            cfg.parallel.set_plan(plan);
            assert!(unsupported(&cfg).unwrap().contains("torchtitan's plans"));
        }
        cfg.parallel
            .set_plan(crate::detailed::config::TpPlan::Torchtitan);
        cfg.fp8 = Fp8::Te;
        assert!(unsupported(&cfg).unwrap().contains("Transformer Engine"));
        cfg.fp8 = Fp8::None;
        cfg.parallel
            .set_plan(crate::detailed::config::TpPlan::Megatron);
        assert!(unsupported(&cfg).unwrap().contains("DTensor"));
        cfg.parallel
            .set_plan(crate::detailed::config::TpPlan::Torchtitan);
        cfg.arch.qkv_bias = true;
        assert!(unsupported(&cfg).unwrap().contains("Llama layers"));
        cfg.arch.qkv_bias = false;
        cfg.parallel.cp = 2;
        assert!(unsupported(&cfg).unwrap().contains("context"));
    }
}
