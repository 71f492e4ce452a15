//! What a layer and the loss save under `torch.compile` (the "hf"
//! profile's modules, inductor): AOTAutograd's min-cut partitioner
//! (`torch/_functorch/partitioners.py`, `min_cut_rematerialization_partition`,
//! torch 2.15) chooses, over the joint forward and backward graph, the
//! cheapest set of tensors to save: a matrix multiply's and SDPA's outputs
//! are never recomputed (not on its `recomputable_ops` allowlist), while
//! pointwise ops and cheap reductions fed by saved tensors are recomputed
//! inside the backward's fused kernels. Measured tensor by tensor
//! (`tests/fixtures/measure_compile.py` lists the compiled graph's saved
//! tensors) and byte for byte (`tests/fixtures/compile_measured.tsv`).

use super::outer::OuterActivations;
use super::LayerActivations;
use crate::detailed::config::{DetailedConfig, Fp8, Recompute};
use crate::detailed::memory::bytes::act_bytes;
use crate::detailed::memory::sac;
use crate::detailed::model::Family;

/// One layer for `b` sequences under `torch.compile`.
///
/// Llama (`LlamaDecoderLayer`): each RMSNorm's input in the dtype, its
/// fp32 reciprocal root per token and its output (the projections' input)
/// in the dtype — the fp32 upcast and the normalised values eager autograd
/// keeps are recomputed from the input and the root; SDPA's q (rotated), k,
/// v, output and log-sum-exp (the rotation and `o_proj`'s transposed copy
/// recomputed); the gate's and the up projection's outputs and their
/// SwiGLU product (the down projection's input) — the SiLU's output is
/// recomputed. Per layer: 4·n·h·p + 8·n + (q + k + v + o)·n·p + lse +
/// 3·n·F·p, where eager keeps 2·(4·n·h + 4·n + n·h·p) + 2·n·h·p and
/// 4·n·F·p for the norms and the MLP.
///
/// GPT-2 (`GPT2Block`): see [`gpt2_block`].
pub(super) fn block(cfg: &DetailedConfig, b: f64) -> LayerActivations {
    match cfg.arch.family {
        Family::Gpt2 => gpt2_block(cfg, b),
        Family::Llama => llama_block(cfg, b),
    }
}

/// A Llama layer's saved tensors under compile ([`block`]).
fn llama_block(cfg: &DetailedConfig, b: f64) -> LayerActivations {
    let a = &cfg.arch;
    let n = cfg.seq as f64 * b;
    let p = act_bytes(cfg);
    let (h, f) = (a.hidden as f64, a.ffn as f64);
    let lse = 4.0 * a.heads as f64 * n;
    let qkvo = (a.q_dim() + 2 * a.kv_dim() + a.o_dim()) as f64;
    let (norms, mlp) = match cfg.fp8 {
        Fp8::Tensorwise | Fp8::Rowwise => float8(cfg.fp8, n, h, f, p),
        _ => (4.0 * n * h * p + 8.0 * n, 3.0 * n * f * p),
    };
    LayerActivations {
        replicated: norms,
        sharded: qkvo * n * p + lse + mlp,
        scores: 0.0,
        experts: 0.0,
        experts_ffn: 0.0,
    }
}

/// A compiled Llama layer over torchao's float8 linear layers
/// (`convert_to_float8_training`), `recipe` tensorwise or rowwise: (the
/// norms' part, the MLP's part). The linear layers' bf16 inputs that
/// pointwise ops make from saved tensors are recomputed for their casts
/// instead of saved: each norm's output (from its input and fp32 root) and
/// the SwiGLU product (from the gate's and up projection's outputs);
/// tensorwise, each of the seven linear layers keeps a bf16 amax and an
/// fp32 scale of its input; rowwise keeps no scale (recomputed with the
/// casts). Measured (`tests/fixtures/measure_compile_fp8.py`, its
/// saved-tensor listing, and `compile_fp8_measured.tsv`): 2·n·h·p + 8·n
/// (+ 42 tensorwise) and 2·n·F·p, where the compiled bf16 layer keeps
/// 4·n·h·p + 8·n and 3·n·F·p.
fn float8(recipe: Fp8, n: f64, h: f64, f: f64, p: f64) -> (f64, f64) {
    let scales = if recipe == Fp8::Tensorwise {
        7.0 * (2.0 + 4.0)
    } else {
        0.0
    };
    (2.0 * n * h * p + 8.0 * n + scales, 2.0 * n * f * p)
}

/// GPT-2's block under compile: each LayerNorm's input and output (the
/// projection's input) in the dtype and 4 bytes of statistics a token (the
/// fp32 reciprocal standard deviation, or in bf16 the mean and the
/// reciprocal standard deviation in the dtype: the partitioner's choices,
/// listed); the attention as in eager autograd (the fused qkv output, three
/// n·h tensors, log-sum-exp); `c_fc`'s output and the tanh GELU's output
/// (`c_proj`'s input, kept transposed): the GELU written in Python
/// (`NewGELUActivation`), whose four n·F tensors eager autograd keeps, is
/// recomputed in one fused kernel. Per layer: 4·n·h·p + 8·n + 6·n·h·p +
/// lse + 2·n·F·p, where eager keeps 4·n·h·p + 8·n·p and 5·n·F·p for the
/// norms and the MLP.
fn gpt2_block(cfg: &DetailedConfig, b: f64) -> LayerActivations {
    let a = &cfg.arch;
    let n = cfg.seq as f64 * b;
    let p = act_bytes(cfg);
    let (h, f) = (a.hidden as f64, a.ffn as f64);
    let lse = 4.0 * a.heads as f64 * n;
    LayerActivations {
        replicated: 4.0 * n * h * p + 8.0 * n,
        sharded: 6.0 * n * h * p + lse + 2.0 * n * f * p,
        scores: 0.0,
        experts: 0.0,
        experts_ffn: 0.0,
    }
}

/// Bytes one Llama layer keeps besides its input on one GPU for one
/// micro-batch of `tokens` tokens under torchtitan's per-operator
/// checkpointing ([`crate::detailed::memory::sac`]) inside
/// `torch.compile`, in `bytes_per_value` per activation value.
///
/// Dynamo captures each checkpointed layer as a `tag_activation_checkpoint`
/// higher-order op; AOTAutograd runs the policy while it traces the joint
/// graph and tags each node MUST_SAVE or PREFER_RECOMPUTE, and the min-cut
/// partitioner (`torch/_functorch/partitioners.py`, torch 2.15) saves a
/// MUST_SAVE node's output only if the backward graph reads it, and
/// recomputes everything else the backward reads. So of the policy's kept
/// projections (the odd-numbered `aten.mm`, [`sac::bias_free_projections`])
/// those that feed only the residual add are dropped: the attention's
/// output projection and the MLP's down projection (their gradient needs
/// their input, not their output). Measured per layer
/// (`tests/fixtures/measure_compile_sac.py`, its saved-tensor listing, and
/// `compile_sac_measured.tsv`): the layer's input, q's projection (rotated
/// again in backward), v's, SDPA's output and fp32 log-sum-exp, the gate's
/// output (the SiLU, the up projection and their product recomputed from
/// it and the norm's output, itself recomputed from the input):
/// n·(q + kv + F)·p + n·(q·p + 4·a) beside n·h·p, where eager
/// per-operator checkpointing also keeps the down projection's n·h·p.
/// Under a DTensor tensor-parallel plan these are the GPU's shards of heads
/// and columns, split by t as eager's are (measured with float8,
/// `compile_sac_fp8_tp_measured.tsv`), beside [`scattered_attention`].
/// With torchao's float8, see [`float8_scales`].
pub(super) fn selective_op(cfg: &DetailedConfig, tokens: f64, bytes_per_value: f64) -> f64 {
    let a = &cfg.arch;
    let t = cfg.parallel.tp.max(1) as f64;
    let kept: f64 = sac::bias_free_projections(a)
        .iter()
        .step_by(2)
        .filter(|p| !p.row_parallel)
        .map(|p| p.out as f64)
        .sum();
    let attention = a.o_dim() as f64 * bytes_per_value + 4.0 * a.heads as f64;
    tokens * (kept * bytes_per_value + attention) / t
        + scattered_attention(cfg, tokens, bytes_per_value)
        + float8_scales(cfg, tokens, bytes_per_value)
}

/// What a compiled per-operator layer keeps of sequence parallelism's
/// reduce-scatters on one GPU, for `tokens` tokens in `bytes_per_value`:
/// under a DTensor plan with sequence parallelism (torchtitan's), the
/// policy's save list holds `reduce_scatter_tensor`, and the partitioner
/// keeps a MUST_SAVE output the backward graph reads. The MLP's norm
/// reads the residual sum after the attention, which the backward
/// rebuilds from the layer's input and the attention's reduce-scattered
/// output, kept (n·h·p / t: a collective is not recomputed); the MLP's
/// reduce-scatter feeds only the layer's output and is dropped, as the
/// down projection's output is on one GPU. Measured per rank, 2 gloo
/// ranks, tensorwise and rowwise float8 (`tests/fixtures/
/// measure_compile_sac_fp8_tp.py`, its saved-tensor listing: one
/// sequence-split n·h tensor a layer beside [`selective_op`]'s set).
fn scattered_attention(cfg: &DetailedConfig, tokens: f64, bytes_per_value: f64) -> f64 {
    let par = &cfg.parallel;
    if par.tp > 1 && par.sp && par.dtensor_layers() {
        tokens * cfg.arch.hidden as f64 * bytes_per_value / par.tp as f64
    } else {
        0.0
    }
}

/// What torchao's float8 linear layers (`convert_to_float8_training`,
/// torchao 0.18) add to a Llama layer's [`selective_op`] set on one GPU,
/// for `tokens` tokens, in `bytes_per_value` per activation value.
///
/// The checkpoint's policy meets each `Float8Linear`'s matrix multiply as
/// `aten.mm` of two float8 subclasses, counted and kept as eager's
/// ([`sac::cached_bytes`]); AOTAutograd then desugars the subclasses into
/// the casts and `aten._scaled_mm`, and its common-subexpression pass
/// (`torch/_functorch/_aot_autograd`, `fx_graph_cse`) merges the casts of
/// one input that several projections share (q, k and v read the
/// attention's normed input, gate and up the MLP's). The kept matrix
/// multiplies' outputs stay in the dtype, as listed without float8 (the
/// float8 copies of inputs and weights are recomputed in backward). Beside
/// them, listed per layer (`tests/fixtures/measure_compile_sac_fp8.py`,
/// `compile_sac_fp8_measured.tsv`):
///
/// - tensorwise: the scales' maxima, `torch.max(torch.abs(x))` (`aten.max`,
///   on the save list), one a weight and one a distinct input, 7 + 4 = 11
///   values in the dtype, of which 10 are saved as they are and the down
///   projection's input's as its fp32 inverse scale; and the fp32 inverse
///   scales of the kept column-wise projections' operands (q's, v's and
///   the gate's weights, the attention's and the MLP's inputs): 10·p + 6·4
///   bytes a layer, whatever the tokens (eager keeps 14 maxima,
///   [`sac::tensorwise_scales`]);
/// - rowwise: its scales come from `aten.amax`, off the list, recomputed;
///   but the partitioner saves the fp32 row-wise scale (one value a token)
///   of the two inputs whose projections it keeps, the attention's (q) and
///   the MLP's (gate): 2·4·n bytes.
///
/// Per GPU under torchtitan's tensor-parallel plan (measured on 2 ranks,
/// `tests/fixtures/measure_compile_sac_fp8_tp.py` and its listing):
/// tensorwise as on one GPU (a few values, of the shards' maxima);
/// rowwise's two input scales are of the gathered inputs, all n tokens on
/// every GPU (2·4·n), and beside them the backward's scales of each
/// column-wise projection's weight along its output dimension, which the
/// plan splits: its maximum is an all-reduce over the shards, a
/// collective, kept rather than recomputed (4·h bytes each, 5 in a Llama
/// layer).
fn float8_scales(cfg: &DetailedConfig, tokens: f64, bytes_per_value: f64) -> f64 {
    match cfg.fp8 {
        Fp8::Tensorwise => 10.0 * bytes_per_value + 6.0 * 4.0,
        Fp8::Rowwise if cfg.parallel.tp > 1 => {
            let column_parallel = sac::bias_free_projections(&cfg.arch)
                .iter()
                .filter(|p| !p.row_parallel)
                .count() as f64;
            2.0 * 4.0 * tokens + column_parallel * 4.0 * cfg.arch.hidden as f64
        }
        Fp8::Rowwise => 2.0 * 4.0 * tokens,
        _ => 0.0,
    }
}

/// Outside the layers under compile, for `b` sequences. Before the first
/// layer: Llama nothing (RoPE's cos and sin are recomputed from the
/// position ids and the inverse frequencies), 24 bytes a token with
/// per-operator checkpointing; GPT-2 its position ids
/// (int64, one row) and, in 16 bits, the position embedding's output (one
/// row, s·h·p: measured in bf16, not in fp32, where the partitioner
/// recomputes it). After the last: the final norm as in a layer (input and
/// output in the dtype, 4 bytes of statistics a token); the logits in the
/// dtype (the loss's fp32 upcast and log-softmax are recomputed in backward
/// from them and two fp32 values a token); under a DTensor plan's sequence
/// parallelism the norm's input and statistics split, its output (the
/// output layer's gathered input) whole; the labels padded by one column
/// (`ForCausalLMLoss` pads before it shifts: int64, s + 1 per sequence);
/// the loss's total weight.
pub(super) fn outer(cfg: &DetailedConfig, b: f64) -> OuterActivations {
    let a = &cfg.arch;
    let s = cfg.seq as f64;
    let n = s * b;
    let p = act_bytes(cfg);
    let h = a.hidden as f64;
    let embedding = match a.family {
        // With per-operator checkpointing the layers' recomputation reads
        // three int64 tensors of one value a token, saved: the position
        // ids and two index tensors shaped (b, 1, s, 1) and (b, 1, 1, s)
        // (listed by `tests/fixtures/measure_compile_sac.py`).
        Family::Llama if cfg.recompute == Recompute::SelectiveOp => 24.0 * n,
        Family::Llama => 0.0,
        Family::Gpt2 if p == 4.0 => 8.0 * s,
        Family::Gpt2 => 8.0 * s + s * h * p,
    };
    let norm = 2.0 * n * h * p + 4.0 * n;
    let loss = 8.0 * b * (s + 1.0) + 8.0 * n + 4.0;
    OuterActivations {
        embedding,
        head: norm + loss,
        // What a DTensor plan's sequence parallelism splits: the norm's
        // input and statistics; its output is the output layer's input,
        // gathered whole (measured, `tests/fixtures/compile_tp_measured.tsv`).
        head_norm: n * h * p + 4.0 * n,
        logits: n * a.vocab as f64 * p,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detailed::config::{AttentionKernel, Device, Precision, Profile};
    use crate::detailed::memory::activations::layer_activations;
    use crate::detailed::preset;

    fn cfg(name: &str, precision: Precision) -> DetailedConfig {
        let mut c = DetailedConfig::new(preset(name).unwrap().arch, 2048, 2);
        c.profile = Profile::Hf;
        c.attention = AttentionKernel::Flash;
        c.dropout = false;
        c.device = Device::Cuda;
        c.precision = precision;
        c
    }

    fn total(l: LayerActivations) -> f64 {
        l.replicated + l.sharded + l.scores
    }

    /// A Llama layer under compile keeps exactly the norms' fp32 inputs
    /// (8·n·h: two norms, eager's fp32 copy and its normalised values less
    /// the input in the dtype) and the SiLU's output (n·F·p) less than
    /// eager autograd; the attention is the same.
    #[test]
    fn llama_drops_the_norms_fp32_copies_and_the_silu_output() {
        for precision in [Precision::Bf16, Precision::Fp32] {
            let eager = cfg("llama-3.2-1b", precision);
            let compiled = DetailedConfig {
                compile: true,
                ..eager
            };
            let a = &eager.arch;
            let n = 2.0 * 2048.0;
            let p = act_bytes(&eager);
            let (h, f) = (a.hidden as f64, a.ffn as f64);
            let (e, c) = (
                layer_activations(&eager, 2.0),
                layer_activations(&compiled, 2.0),
            );
            assert_eq!(
                total(e) - total(c),
                8.0 * n * h + n * f * p,
                "{precision:?}"
            );
            assert_eq!(e.scores, c.scores);
        }
    }

    /// Per-operator checkpointing under compile keeps eager's per-operator
    /// cache less the down projection's output (n·h·p), on one GPU.
    #[test]
    fn per_op_drops_the_down_projection_output() {
        for precision in [Precision::Bf16, Precision::Fp32] {
            let mut c = cfg("llama-3.1-8b", precision);
            c.recompute = Recompute::SelectiveOp;
            let p = act_bytes(&c);
            let n = 4096.0;
            assert_eq!(
                sac::cached_bytes(&c, n, p) - selective_op(&c, n, p),
                n * c.arch.hidden as f64 * p,
                "{precision:?}"
            );
        }
    }

    /// Float8 under compile with per-operator checkpointing adds its
    /// scales to the bf16 set and nothing else: tensorwise 10 bf16 maxima
    /// and 6 fp32 inverse scales a layer, rowwise two fp32 values a token;
    /// priced on whole layers and under torchtitan's tensor-parallel plan,
    /// refused under other plans, for Transformer Engine's recipes and
    /// Megatron's selective recomputation.
    #[test]
    fn per_op_float8_adds_its_scales_where_measured() {
        use crate::detailed::config::{Fp8, Precision, TpPlan};
        use crate::detailed::estimate;
        let mut c = cfg("llama-3.1-8b", Precision::Mixed);
        c.compile = true;
        c.recompute = Recompute::SelectiveOp;
        let n = 4096.0;
        let bf16 = selective_op(&c, n, 2.0);
        let with = |fp8| selective_op(&DetailedConfig { fp8, ..c }, n, 2.0) - bf16;
        assert_eq!(with(Fp8::Tensorwise), 44.0);
        assert_eq!(with(Fp8::Rowwise), 8.0 * n);
        for fp8 in [Fp8::Tensorwise, Fp8::Rowwise] {
            assert!(estimate(&DetailedConfig { fp8, ..c }).is_ok(), "{fp8:?}");
        }
        let refused = |change: &dyn Fn(&mut DetailedConfig), says: &str| {
            let mut r = DetailedConfig {
                fp8: Fp8::Tensorwise,
                ..c
            };
            change(&mut r);
            let e = estimate(&r).unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        };
        refused(
            &|r| {
                r.parallel.tp = 2;
                r.parallel.set_plan(TpPlan::Layers);
            },
            "torchtitan's plans",
        );
        // Under torchtitan's plan with sequence parallelism, per GPU: the
        // set split by t, the attention's reduce-scatter (n·h·p / t) kept,
        // rowwise's input scales whole and 5 weight scales of 4·h bytes.
        let mut tp = c;
        tp.parallel.tp = 2;
        tp.parallel.sp = true;
        tp.parallel.set_plan(TpPlan::Torchtitan);
        let h = c.arch.hidden as f64;
        assert_eq!(selective_op(&tp, n, 2.0), bf16 / 2.0 + n * h * 2.0 / 2.0);
        let rowwise = DetailedConfig {
            fp8: Fp8::Rowwise,
            ..tp
        };
        assert_eq!(
            selective_op(&rowwise, n, 2.0) - selective_op(&tp, n, 2.0),
            8.0 * n + 5.0 * 4.0 * h
        );
        assert!(estimate(&rowwise).is_ok());
        refused(&|r| r.fp8 = Fp8::Te, "Transformer Engine");
        refused(
            &|r| r.recompute = Recompute::Selective,
            "torchao's tensorwise and rowwise",
        );
        // Without recomputation rowwise keeps tensorwise's set but its
        // scales: 7 bf16 maxima and 7 fp32 scales a layer.
        let none = |fp8| {
            estimate(&DetailedConfig {
                fp8,
                recompute: Recompute::None,
                ..c
            })
            .unwrap()
            .activations
        };
        let layers = c.arch.layers as f64;
        assert_eq!(none(Fp8::Tensorwise) - none(Fp8::Rowwise), 42.0 * layers);
    }

    /// GPT-2's GELU written in Python keeps five n·F tensors in eager
    /// autograd and two compiled; its LayerNorms keep 4 bytes of statistics
    /// a token instead of 2·p.
    #[test]
    fn gpt2_drops_three_gelu_tensors() {
        for precision in [Precision::Bf16, Precision::Fp32] {
            let eager = cfg("gpt2", precision);
            let compiled = DetailedConfig {
                compile: true,
                ..eager
            };
            let a = &eager.arch;
            let n = 2.0 * 2048.0;
            let p = act_bytes(&eager);
            let f = a.ffn as f64;
            let (e, c) = (
                layer_activations(&eager, 2.0),
                layer_activations(&compiled, 2.0),
            );
            let stats = 2.0 * (2.0 * n * p - 4.0 * n);
            assert_eq!(
                total(e) - total(c),
                3.0 * n * f * p + stats,
                "{precision:?}"
            );
        }
    }
}
