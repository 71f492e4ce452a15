//! Float8 training of the layers' linear layers as torchao runs it
//! (torchao 0.18, `torchao/float8/float8_linear.py`,
//! `matmul_with_hp_or_float8_args`).
//!
//! What it changes in memory, from that code: nothing in the states (the
//! weights stay in their dtype; float8 copies are made per matmul), nothing
//! in the saved activations (`ctx.save_for_backward(input_hp,
//! weight_hp_t)`: the high-precision input), only the transients around
//! each matmul. What it changes in time: the layers' matmuls run at the
//! card's fp8 rate ([`crate::detailed::time::steptime`]).

use super::bytes::act_bytes;
use crate::detailed::config::{DetailedConfig, Fp8};

/// Whether `cfg` trains its layers' matmuls in float8.
pub fn enabled(cfg: &DetailedConfig) -> bool {
    cfg.fp8 != Fp8::None
}

/// Transformer Engine: bytes per fp8 value it keeps, of a saved
/// linear-layer input or a cached weight. Its `_Linear.forward` quantizes
/// the input and, for backward, "discard[s] row-wise data since it is not
/// needed in backward pass" (`inputmat.update_usage(rowwise_usage=False,
/// columnwise_usage=True)`, `transformer_engine/pytorch/module/linear.py`,
/// TransformerEngine at d0067d0): one byte per value (and a per-tensor
/// scale) where the model keeps two; under MXFP8 a one-byte E8M0 scale is
/// shared by each block of 32 values. `None` outside Transformer Engine.
pub(crate) fn te_bytes_per_value(cfg: &DetailedConfig) -> Option<f64> {
    match cfg.fp8 {
        Fp8::Te => Some(1.0),
        Fp8::TeMxfp8 => Some(1.0 + 1.0 / 32.0),
        _ => None,
    }
}

/// Transformer Engine: bytes of the fp8 weight copies one GPU keeps. With
/// `is_first_microbatch` given (Megatron-Core passes it unless
/// `--disable-parameter-transpose-cache`), `quantize_weight` keeps each
/// linear layer's fp8 weight as a workspace reused by the later
/// micro-batches (`update_workspace`), row-wise for forward and
/// column-wise (the transpose) for backward: two bytes per weight of the
/// layers' linear layers (not the embedding or the output layer), on the
/// GPU's tensor- and pipeline-parallel share.
///
/// Under `--fp8-param` these bytes are the weights themselves, not a copy:
/// `quantize_weight` returns a weight that is already a `QuantizedTensor`
/// as it is ("Already-quantized weight (primary FP8 parameters)",
/// `transformer_engine/pytorch/module/base.py`, TransformerEngine
/// d0067d0), and that weight holds the same two: a `Float8Tensor`'s
/// `_data` (one byte, in Megatron's uint8 parameter buffer) and its
/// `_transpose`, made after each all-gather and kept
/// (`post_all_gather_processing`, `tensor/utils.py`: `_create_transpose`
/// where the card has no non-TN fp8 GEMM, as on Hopper; it writes into
/// the kept `_transpose`, `float8_tensor_storage.py`); an `MXFP8Tensor`'s
/// row-wise and column-wise data and E8M0 scales, both written by the
/// optimizer's cast (`_cast_master_weights_to_fp8_mxfp8_scaling`:
/// `rowwise_fragment`, `colwise_fragment`).
///
/// Under Megatron-FSDP (`--zero 3`) with `--fp8-param` each GPU keeps its
/// shard of the fp8 weights alone, in Megatron-FSDP's float8 buffer
/// (`param_and_grad_buffer.py`: `dtype="float8"` for an fp8 parameter); the
/// transpose is made after each gather and dropped after backward
/// (`fp8_create_transpose_cache`, and `fp8_discard_transpose_cache` unless
/// `keep_fp8_transpose_cache`, `megatron_fsdp.py`, Megatron-LM d98e8a64),
/// with the gathered layer: the gather's transient, priced as the 16-bit
/// layer it replaces. MXFP8's column-wise copy is taken to follow the
/// transpose (no published layout of that helper buffer was read).
///
/// With `--disable-parameter-transpose-cache` beside `--fp8-param`
/// ([`DetailedConfig::no_transpose_cache`]) the weights keep their data
/// alone: Transformer Engine 1.x makes an fp8 parameter's transpose for
/// each backward and drops it (`Float8Tensor.transpose_2d(cache=False)`
/// when `is_first_microbatch` is `None`), one layer's at a time
/// ([`te_transpose_transient`]). MLPerf's Llama 2 70B LoRA runs set it
/// (NVIDIA's on NeMo 24.09, AMD's on ROCm's fork) and fit their cards only
/// so: 69 GB of transposes over a 141 GB H200 or a 192 GB MI300X.
pub(crate) fn te_weight_workspace(cfg: &DetailedConfig) -> f64 {
    let Some(bytes) = te_bytes_per_value(cfg) else {
        return 0.0;
    };
    if fsdp_fp8_param(cfg) {
        return bytes * te_linear_weights_sharded(cfg);
    }
    let copies = if cfg.transposes_per_use() { 1.0 } else { 2.0 };
    copies * bytes * te_linear_weights(cfg)
}

/// One layer's fp8 weight transposes while its backward runs, made and
/// dropped there under `--disable-parameter-transpose-cache` beside
/// `--fp8-param` ([`te_weight_workspace`]); 0 otherwise.
pub(crate) fn te_transpose_transient(cfg: &DetailedConfig) -> f64 {
    match te_bytes_per_value(cfg) {
        Some(bytes) if cfg.transposes_per_use() && !fsdp_fp8_param(cfg) => {
            bytes * te_linear_weights(cfg) / cfg.parallel.stage_layers(&cfg.arch).max(1.0)
        }
        _ => 0.0,
    }
}

/// `--fp8-param` under Megatron-FSDP (`--zero 3`).
fn fsdp_fp8_param(cfg: &DetailedConfig) -> bool {
    cfg.fp8_param && cfg.parallel.zero >= 3
}

/// [`te_linear_weights`] under ZeRO-3: this GPU's shard of them, the dense
/// ones over the shard group and the experts over their data-parallel
/// group, as [`crate::detailed::memory::states`] shards every weight.
fn te_linear_weights_sharded(cfg: &DetailedConfig) -> f64 {
    let p = &cfg.parallel;
    let (dense, experts) = linear_weights_split(cfg);
    dense / p.zero_divisor(3) + experts / p.expert_zero_divisor(3)
}

/// The layers' linear weights on one GPU's model-parallel share, (dense,
/// experts): the dense part split over tp × pp, the experts over pp × ep
/// × etp.
fn linear_weights_split(cfg: &DetailedConfig) -> (f64, f64) {
    let p = &cfg.parallel;
    let split = cfg.arch.layers_param_split();
    (
        split.dense as f64 / (p.tp * p.pp) as f64,
        split.experts as f64 / (p.pp * p.ep * p.etp) as f64,
    )
}

/// Transformer Engine: values of the layers' linear weights on one GPU:
/// their dense and expert matrices (norms and routers are not fp8;
/// Megatron-Core builds the layers under `fp8_model_init` and the
/// embedding and output layer outside it, `get_fp8_context(...,
/// is_init=True)`, `transformer_block.py`), the dense part split over
/// tp × pp, the experts over pp × ep × etp. The linear layers' biases ride
/// with them here, as they always have (a few values per row).
pub(crate) fn te_linear_weights(cfg: &DetailedConfig) -> f64 {
    let (dense, experts) = linear_weights_split(cfg);
    dense + experts
}

/// `--fp8-param`: the 16-bit copy of the layers' linear weights that is no
/// longer kept, bytes on one GPU (0 without it). Megatron-Core builds them
/// under Transformer Engine's `fp8_model_init` (`fp8_param`,
/// `megatron/core/fp8_utils.py`, `get_fp8_context(..., is_init=True)`;
/// Megatron-LM d98e8a64), so each is an fp8 tensor with no bf16 data; the
/// distributed optimizer keeps its fp32 main shard as before
/// (`_build_model_and_main_param_groups`). Its parameter buffer holds the
/// fp8 weights' one-byte `_data` (`group_params_for_buffers`:
/// `param_dtype = torch.uint8`; `_ParamAndGradBuffer`,
/// `modify_underlying_storage`, `param_and_grad_buffer.py`), counted in
/// [`te_weight_workspace`]; under MXFP8 the gather borrows the gradient
/// buffer (`shared_buffer`, with `--reuse-grad-buf-for-mxfp8-param-ag`,
/// which MXFP8 weights need: TE's `replace_raw_data` refuses an
/// `MXFP8Tensor`). Either way the two bytes a weight of the 16-bit copy
/// held are gone; the non-linear parameters (norms, embedding, output
/// layer) stay 16-bit.
pub(crate) fn te_weights_16bit_dropped(cfg: &DetailedConfig) -> f64 {
    if !cfg.fp8_param || te_bytes_per_value(cfg).is_none() {
        return 0.0;
    }
    // Two bytes: `--fp8-param` runs under mixed precision only (`check`);
    // under Megatron-FSDP the shard's.
    if fsdp_fp8_param(cfg) {
        return 2.0 * te_linear_weights_sharded(cfg);
    }
    2.0 * te_linear_weights(cfg)
}

/// The widest activation a converted linear layer casts, per token: the
/// MLP's hidden width (the input of the down projection, the output
/// gradient of the gate and up projections), or the attention's widest
/// projection. Mixture-of-experts layers' routed experts are 3-D
/// parameters, not `nn.Linear`, and are not converted: their shared expert
/// (or, without one, the attention) sets the width.
fn widest(cfg: &DetailedConfig) -> f64 {
    let a = &cfg.arch;
    let attention = a.q_dim().max(a.hidden);
    let mlp = match a.moe {
        Some(m) if m.first_dense == 0 => m.shared_ffn,
        _ => a.ffn,
    };
    attention.max(mlp) as f64
}

/// The largest converted weight, values.
fn largest_weight(cfg: &DetailedConfig) -> f64 {
    (cfg.arch.hidden as f64) * widest(cfg)
}

/// Bytes one cast to float8 holds at its most, per element: on the CPU
/// (eager) `tensor.to(torch.float32) * scale`, then `to_fp8_saturated`'s
/// `clamp` beside it and the fp8 result (`float8_training_tensor.py`,
/// `_ToFloat8ConstrFunc.forward`; `float8_utils.py`): 4 + 4 + 1; on CUDA,
/// compiled as torchao and torchtitan run it, one fused kernel writes the
/// fp8 result only.
fn cast_bytes(cfg: &DetailedConfig) -> f64 {
    match cfg.device {
        crate::detailed::config::Device::Cpu => 9.0,
        crate::detailed::config::Device::Cuda => 1.0,
    }
}

/// The forward's extra bytes in a layer, at the widest matmul: the cast of
/// its n × width input (the fp8 copy, and on the CPU its temporaries), then
/// the fp8 weight beside the fp8 input. `tokens`: n on this GPU.
pub(crate) fn forward_extra(cfg: &DetailedConfig, tokens: f64) -> f64 {
    if !enabled(cfg) {
        return 0.0;
    }
    let tp = cfg.parallel.tp as f64;
    let input = tokens * widest(cfg) / tp;
    let weight = largest_weight(cfg) / tp;
    // Under full recomputation nothing of the layer is saved, so the input
    // being cast (the SwiGLU product) is a transient of its own.
    let unsaved = if cfg.recompute == crate::detailed::config::Recompute::Full {
        input * act_bytes(cfg)
    } else {
        0.0
    };
    // On the CPU one more byte per element of the input is alive under its
    // cast, beyond what the cast's code holds (located with the profiler's
    // memory events, in every measured layer, not identified).
    let unlocated = if cfg.device == crate::detailed::config::Device::Cpu {
        input
    } else {
        0.0
    };
    unsaved + unlocated + (cast_bytes(cfg) * input).max(input + cast_bytes(cfg) * weight)
}

/// The backward's extra bytes in a layer, at the gate and up projections
/// (their output gradient is n × width): that gradient cast for the input
/// gradient (`grad_output_reshaped_maybe_fp8_dim0`, kept) and again for
/// the weight gradient (`..._dim1`), the weight's fp8 copy beside them.
/// The layer's own backward transient (`timeline`: three n × width
/// gradients of the MLP at once, in the dtype) has by then lost the down
/// projection's input gradient, consumed by the SiLU product's backward:
/// one of the three is taken off (located with the profiler's memory
/// events).
pub(crate) fn backward_extra(cfg: &DetailedConfig, tokens: f64) -> f64 {
    if !enabled(cfg) {
        return 0.0;
    }
    let tp = cfg.parallel.tp as f64;
    let grad = tokens * widest(cfg) / tp;
    let consumed = grad * act_bytes(cfg);
    (grad + cast_bytes(cfg) * grad + largest_weight(cfg) / tp - consumed).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detailed::time::hardware::gpu;
    use crate::detailed::time::steptime::{step_time, Cluster, Efficiency};
    use crate::detailed::{
        estimate, preset, timeline, AttentionKernel, Framework, Precision, Recompute, StepOptions,
    };

    fn llama_8b() -> DetailedConfig {
        let mut cfg = DetailedConfig::new(preset("llama-3.1-8b").unwrap().arch, 8192, 16);
        cfg.micro_batch = Some(2);
        cfg.attention = AttentionKernel::Flash;
        cfg.dropout = false;
        cfg.recompute = Recompute::Selective;
        cfg.parallel.dp = 8;
        cfg.parallel.zero = 3;
        cfg.framework = Framework::Fsdp2 {
            reshard_after_forward: true,
        };
        cfg
    }

    /// torchao keeps the weights and saves the high-precision inputs: the
    /// budget is unchanged; only the transients around the matmuls grow.
    #[test]
    fn states_and_saved_activations_unchanged() {
        let bf16 = llama_8b();
        let mut fp8 = bf16;
        fp8.fp8 = Fp8::Tensorwise;
        assert_eq!(estimate(&bf16).unwrap(), estimate(&fp8).unwrap());
        let (a, b) = (
            timeline(&bf16, &StepOptions::default()).unwrap(),
            timeline(&fp8, &StepOptions::default()).unwrap(),
        );
        // Each layer's forward holds the widest input's and weight's fp8
        // copies more: on CUDA one byte per element (14,336 × 16,384
        // tokens, then the weight), here under 1 % of the peak.
        let layer = |t: &crate::detailed::StepTimeline| {
            t.events
                .iter()
                .find(|e| e.moment == crate::detailed::Moment::LayerForward(0))
                .unwrap()
                .live
                .transient
        };
        let extra = layer(&b) - layer(&a);
        assert_eq!(extra, 14336.0 * 16384.0 + 4096.0 * 14336.0);
        assert!(b.peak_bytes() >= a.peak_bytes() && b.peak_bytes() < 1.01 * a.peak_bytes());
    }

    /// torchtitan's Table 1 (docs/performance.md): Llama 3.1 8B on 8 H100s,
    /// FSDP, local batch 2 × 8,192 tokens, selective checkpointing,
    /// compiled: 6,667 tokens/s per GPU in bf16, 8,532 with float8, a ratio
    /// of 1.280. Their H100s ran at 500 W with 2.4 TB/s, not the table's
    /// SXM card: the ratio, not the rate, is compared.
    #[test]
    fn float8_speedup_as_torchtitan_measured() {
        let h100 = Cluster::new(gpu("h100-sxm").unwrap(), 8);
        let eff = Efficiency::for_gpu(&h100.gpu);
        let bf16 = llama_8b();
        let mut fp8 = bf16;
        fp8.fp8 = Fp8::Tensorwise;
        let ratio = step_time(&fp8, &h100, &eff).tokens_per_s_per_gpu
            / step_time(&bf16, &h100, &eff).tokens_per_s_per_gpu;
        assert!((ratio / 1.280 - 1.0).abs() < 0.08, "{ratio}");
    }

    /// Transformer Engine (modelled): the layers' linear inputs saved at one
    /// byte — for GPT-3 175B (Korthikanti et al. 2022's 34·s·b·h per layer
    /// at 16 bits, h = 12288, s = 2048, b = 1) the QKV and first MLP inputs
    /// (h each) and the second MLP input (4h) halve, while the attention's
    /// output is kept twice, in 16 bits by the attention and in fp8 by the
    /// out-projection (one byte more than in bf16): 5·s·b·h fewer bytes per
    /// layer, 14.7 % of the 34; and two bytes of fp8 copies per weight of
    /// the layers.
    #[test]
    fn transformer_engine_halves_the_saved_linear_inputs() {
        let arch = crate::detailed::Architecture::gpt2(96, 12288, 96, 50257);
        let mut cfg = DetailedConfig::new(arch, 2048, 1);
        cfg.attention = AttentionKernel::Flash;
        cfg.dropout = false;
        let bf16 = estimate(&cfg).unwrap();
        cfg.fp8 = Fp8::Te;
        let te = estimate(&cfg).unwrap();
        let per_layer = (bf16.activations - te.activations) / 96.0;
        assert_eq!(per_layer, 5.0 * 2048.0 * 12288.0);
        let layers = arch.layers_param_split();
        assert_eq!(
            te.params - bf16.params,
            2.0 * (layers.dense + layers.experts) as f64
        );
        // MXFP8 (Blackwell): a one-byte scale per 32 values on top.
        cfg.fp8 = Fp8::TeMxfp8;
        let mx = estimate(&cfg).unwrap();
        assert_eq!(
            (bf16.activations - mx.activations) / 96.0,
            (5.0 - 7.0 / 32.0) * 2048.0 * 12288.0
        );
        assert_eq!(
            mx.params - bf16.params,
            2.0 * (1.0 + 1.0 / 32.0) * (layers.dense + layers.experts) as f64
        );
        // It runs on Blackwell only; the other recipes on any fp8 card.
        assert!(crate::detailed::time::hardware::fp8_runs_on(
            &cfg,
            &gpu("b200").unwrap()
        ));
        assert!(!crate::detailed::time::hardware::fp8_runs_on(
            &cfg,
            &gpu("h100-sxm").unwrap()
        ));
        cfg.fp8 = Fp8::Te;
        assert!(crate::detailed::time::hardware::fp8_runs_on(
            &cfg,
            &gpu("h100-sxm").unwrap()
        ));
        assert!(!crate::detailed::time::hardware::fp8_runs_on(
            &cfg,
            &gpu("a100-80gb").unwrap()
        ));
        // Stock transformers has no Transformer Engine layers.
        cfg.profile = crate::detailed::Profile::Hf;
        assert!(estimate(&cfg).is_err());
    }

    /// Llama 3.1 8B on 8 GPUs under Megatron's distributed optimizer
    /// (ZeRO-1), Transformer Engine's fp8.
    fn megatron_te() -> DetailedConfig {
        let mut cfg = DetailedConfig::new(preset("llama-3.1-8b").unwrap().arch, 8192, 64);
        cfg.micro_batch = Some(1);
        cfg.attention = AttentionKernel::Flash;
        cfg.dropout = false;
        cfg.parallel.dp = 8;
        cfg.parallel.zero = 1;
        cfg.fp8 = Fp8::Te;
        cfg
    }

    /// `--fp8-param`, counted by hand for Llama 3.1 8B (L 32, h 4,096, q
    /// 4,096, kv 1,024, ffn 14,336, V 128,256, untied): a layer's linear
    /// weights are 4,096 · (4,096 + 2 · 1,024) + 4,096 · 4,096 + 3 · 4,096
    /// · 14,336 = 218,103,808, 6,979,321,856 over 32 layers, of 8,030,261,248
    /// parameters. Without it the GPU keeps every weight in bf16 and TE's
    /// cached fp8 copy (data and transpose) of the linear ones; with it the
    /// linear weights are the fp8 tensors (data and transpose) alone and
    /// only the norms, embedding and output layer stay bf16. Gradients,
    /// fp32 main weights and Adam's moments do not move.
    #[test]
    fn fp8_param_drops_the_bf16_copy_of_the_linear_weights() {
        let (n, w) = (8_030_261_248.0, 6_979_321_856.0);
        assert_eq!(te_linear_weights(&megatron_te()), w);
        let off = megatron_te();
        let mut on = off;
        on.fp8_param = true;
        let (a, b) = (estimate(&off).unwrap(), estimate(&on).unwrap());
        assert_eq!(a.params, 2.0 * n + 2.0 * w);
        assert_eq!(a.params, 30_019_166_208.0);
        assert_eq!(b.params, 2.0 * (n - w) + 2.0 * w);
        assert_eq!(b.params, 16_060_522_496.0);
        assert_eq!(
            (a.grads, a.master_weights, a.optimizer_state),
            (b.grads, b.master_weights, b.optimizer_state)
        );
        assert_eq!(b.master_weights, 4.0 * n / 8.0);
        // MXFP8: a one-byte scale per 32 values in each direction.
        on.fp8 = Fp8::TeMxfp8;
        let mx = estimate(&on).unwrap();
        assert_eq!(mx.params, 2.0 * (n - w) + 2.0 * (1.0 + 1.0 / 32.0) * w);
        assert_eq!(mx.params, 16_496_730_112.0);
        // The step's peak falls by the bf16 copy too.
        let peak = |c: &DetailedConfig| timeline(c, &StepOptions::default()).unwrap().peak_bytes();
        assert_eq!(
            peak(&off)
                - peak(&{
                    on.fp8 = Fp8::Te;
                    on
                }),
            2.0 * w
        );
    }

    /// `--fp8-param` under Megatron-FSDP (`--zero 3`), Llama 3.1 8B over 8
    /// GPUs: each keeps an eighth of every weight, the linear ones as fp8
    /// (one byte), the rest bf16: (2·(n − w) + w) / 8. Without it TE caches
    /// a whole fp8 copy (data and transpose) of the linear weights beside
    /// the bf16 shards: 2·n / 8 + 2·w.
    #[test]
    fn fp8_param_under_megatron_fsdp_keeps_the_fp8_shard() {
        let (n, w) = (8_030_261_248.0, 6_979_321_856.0);
        let mut off = megatron_te();
        off.parallel.zero = 3;
        let mut on = off;
        on.fp8_param = true;
        let (a, b) = (estimate(&off).unwrap(), estimate(&on).unwrap());
        assert_eq!(a.params, 2.0 * n / 8.0 + 2.0 * w);
        assert_eq!(b.params, (2.0 * (n - w) + w) / 8.0);
        assert_eq!(
            (a.grads, a.master_weights, a.optimizer_state),
            (b.grads, b.master_weights, b.optimizer_state)
        );
    }

    /// `--fp8-param` is Megatron's `--fp8-param-gather` under its
    /// distributed optimizer or Megatron-FSDP with Transformer Engine:
    /// anything else is refused in words.
    #[test]
    fn fp8_param_is_refused_outside_megatrons_distributed_optimizer() {
        let mut base = megatron_te();
        base.fp8_param = true;
        let refused = |change: &dyn Fn(&mut DetailedConfig), says: &str| {
            let mut c = base;
            change(&mut c);
            let e = estimate(&c).unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        };
        refused(&|c| c.fp8 = Fp8::None, "--fp8 te or te-mxfp8");
        refused(&|c| c.fp8 = Fp8::Tensorwise, "--fp8 te or te-mxfp8");
        refused(
            &|c| {
                c.parallel.zero = 3;
                c.framework = Framework::Fsdp2 {
                    reshard_after_forward: true,
                }
            },
            "--framework megatron",
        );
        refused(&|c| c.parallel.zero = 0, "--zero 1 or 2");
        refused(&|c| c.precision = Precision::Bf16, "--precision mixed");
        refused(
            &|c| {
                c.lora_rank = Some(16);
                c.parallel.zero = 3;
            },
            "--zero 0, 1 or 2 and no --quant-base",
        );
        base.parallel.zero = 2;
        assert!(estimate(&base).is_ok());
        // Plain data parallelism holds a LoRA's frozen fp8 base (AMD's
        // MLPerf runs: NeMo's `fp8_params` with `fused_adam`), not full
        // training's fp8 weights.
        let plain = DetailedConfig {
            lora_rank: Some(16),
            parallel: crate::detailed::config::Parallelism {
                zero: 0,
                ..base.parallel
            },
            ..base
        };
        assert!(estimate(&plain).is_ok());
        // LoRA over a frozen fp8 base, as Megatron-Bridge's fine-tuning
        // recipes run it: the base's two bytes a weight become its fp8 data
        // and transpose, the adapters alone train.
        let mut lora = base;
        lora.lora_rank = Some(16);
        let bf16 = estimate(&DetailedConfig {
            fp8_param: false,
            ..lora
        })
        .unwrap();
        let fp8 = estimate(&lora).unwrap();
        assert_eq!(bf16.master_weights, fp8.master_weights);
        let cache = te_weight_workspace(&lora);
        assert!(cache > 0.0);
        let dropped = te_weights_16bit_dropped(&lora);
        assert!((bf16.params - fp8.params - dropped).abs() < 1.0);
        assert!((dropped - cache).abs() < 1.0);
    }

    /// Float8 casts 16-bit activations; fp32 is refused.
    #[test]
    fn fp32_is_refused() {
        let mut cfg = llama_8b();
        cfg.fp8 = Fp8::Rowwise;
        cfg.precision = Precision::Fp32;
        assert!(estimate(&cfg).is_err());
    }
}
