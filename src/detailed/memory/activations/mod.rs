//! Activations: the bytes the forward pass keeps for backward, per layer
//! and outside the layers, for both implementation profiles, and what tensor,
//! sequence and pipeline parallelism and recomputation leave on one GPU.
//!
//! - [`Profile::Fused`]: Megatron-style kernels, Korthikanti et al. 2022,
//!   "Reducing Activation Recomputation in Large Transformer Models", §4
//!   (Eq. 1–5), generalised to SwiGLU and grouped-query attention.
//! - [`Profile::Hf`]: stock Hugging Face `transformers` as PyTorch's autograd
//!   actually keeps it (RMSNorm's fp32 upcast, GPT-2's tanh GELU written in
//!   Python, fp32 softmax and loss), read off `transformers` 5.x and checked
//!   byte for byte against `tests/fixtures/hf_measured.tsv`.
//!
//! A file per part: [`fused`] and [`hf`] price a layer's attention, MLP and
//! norms per profile, [`moe`] a mixture-of-experts MLP (router, shared and
//! routed experts), [`peft`] a layer under PEFT's LoRA with its base frozen,
//! [`outer`] what is kept outside the layers; this file adds them up as
//! parallelism and recomputation leave them on one GPU.

mod compiled;
mod fused;
mod hf;
mod moe;
mod outer;
mod peft;

use super::bytes::act_bytes;
use crate::detailed::config::{DetailedConfig, Device, Profile, Recompute};
use outer::outer_activations;
use peft::{peft_layer, peft_llama};

/// Activation bytes of one layer for one micro-batch, split the way tensor
/// and sequence parallelism split them (Korthikanti §4.2).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct LayerActivations {
    /// Kept whole on every tensor-parallel rank unless sequence parallel:
    /// norm inputs and statistics, block inputs, block-output dropout masks.
    pub(crate) replicated: f64,
    /// Split across tensor-parallel ranks: Q, K, V, projections' inputs, MLP.
    pub(crate) sharded: f64,
    /// The a·s² terms (scores, their mask and dropout output), sharded;
    /// selective recomputation drops them.
    pub(crate) scores: f64,
    /// Routed experts' tensors for the layer's n·k token–expert pairs
    /// (routing assumed balanced, so the expert parallelism does not change
    /// how many pairs a GPU computes): see [`expert_bytes_on_gpu`].
    pub(crate) experts: f64,
    /// The part of `experts` that is the experts' FFN width (4·F per pair:
    /// SwiGLU's gate/up output, activation and product), which expert
    /// tensor parallelism splits; the rest is per pair at full width.
    pub(crate) experts_ffn: f64,
}

impl LayerActivations {
    fn scaled(self, w: f64) -> Self {
        Self {
            replicated: self.replicated * w,
            sharded: self.sharded * w,
            scores: self.scores * w,
            experts: self.experts * w,
            experts_ffn: self.experts_ffn * w,
        }
    }

    fn plus(self, o: Self) -> Self {
        Self {
            replicated: self.replicated + o.replicated,
            sharded: self.sharded + o.sharded,
            scores: self.scores + o.scores,
            experts: self.experts + o.experts,
            experts_ffn: self.experts_ffn + o.experts_ffn,
        }
    }
}

/// The routed experts' saved bytes on one GPU, of a layer's `experts` for
/// the micro-batch's n tokens (`ffn` of them FFN-wide), as Megatron-Core
/// runs them (`moe/token_dispatcher.py`, `MoEAlltoAllTokenDispatcher`):
/// under sequence parallelism each tensor-parallel rank routes its n/t
/// tokens; the all-to-all over the expert-parallel group leaves each GPU
/// as many token–expert pairs as it sent (balanced routing); with expert
/// tensor parallelism e the pairs are gathered over the e ranks that split
/// each expert, whose FFN width they divide. So the per-pair tensors at full
/// width scale by e/t and the FFN-wide ones by 1/t, whatever e.
pub(crate) fn expert_bytes_on_gpu(
    par: &crate::detailed::config::Parallelism,
    experts: f64,
    ffn: f64,
) -> f64 {
    let tokens = if par.sp { par.tp.max(1) as f64 } else { 1.0 };
    ((experts - ffn) * par.etp.max(1) as f64 + ffn) / tokens
}

/// RMSNorm as `transformers` writes it, over n rows of width w: the fp32
/// input, the fp32 reciprocal root per row, the normalised output in the
/// dtype.
fn rms(n: f64, w: f64, p: f64) -> f64 {
    4.0 * n * w + 4.0 * n + n * w * p
}

/// Liger's RMSNorm (liger-kernel 0.8.5, `ops/rms_norm.py`,
/// `LigerRMSNormFunction.forward`: `ctx.save_for_backward(X, W, RSTD)`)
/// over n rows of width w: the input in the dtype and the fp32 reciprocal
/// root per row (the "llama" and "gemma" casting modes keep RSTD in fp32).
fn liger_rms(n: f64, w: f64, p: f64) -> f64 {
    n * w * p + 4.0 * n
}

/// Gemma's RMSNorm (`Gemma2RMSNorm`: `_norm(x.float()) * (1.0 +
/// self.weight.float())`): the fp32 input, the reciprocal root, the fp32
/// `1 + w` and the fp32 normalised values, all kept; measured in
/// `tests/fixtures/gemma_measured.tsv`.
fn gemma_rms(n: f64, w: f64) -> f64 {
    8.0 * n * w + 4.0 * n + 4.0 * w
}

/// One layer's activations for `b` sequences, averaged over the layers
/// (dense layers and mixture-of-experts layers differ; under PEFT's LoRA
/// the first layer does too).
pub(crate) fn layer_activations(cfg: &DetailedConfig, b: f64) -> LayerActivations {
    let a = &cfg.arch;
    if peft_llama(cfg) {
        let n = cfg.seq as f64 * b;
        let l = a.layers as f64;
        // An adapted embedding makes the first layer's input require grad.
        return peft_layer(cfg, n, !cfg.lora_targets.embed())
            .scaled(1.0 / l)
            .plus(peft_layer(cfg, n, false).scaled((l - 1.0) / l));
    }
    let moe = a.moe_layers();
    if moe == 0 {
        return layer_activations_of(cfg, b, false);
    }
    let l = a.layers as f64;
    let dense = (a.layers - moe) as f64 / l;
    layer_activations_of(cfg, b, false)
        .scaled(dense)
        .plus(layer_activations_of(cfg, b, true).scaled(moe as f64 / l))
}

/// Bytes per value of a dropout mask in the "hf" profile: none without
/// dropout, `bool` on CUDA, the input's dtype on the CPU.
fn mask_bytes(cfg: &DetailedConfig) -> f64 {
    match (cfg.dropout, cfg.device) {
        (false, _) => 0.0,
        (true, Device::Cuda) => 1.0,
        (true, Device::Cpu) => act_bytes(cfg),
    }
}

/// One layer's activations for `b` sequences; `moe_layer`: a
/// mixture-of-experts layer. A hybrid layer adds its Mamba-2 mixer's
/// ([`super::mixer::saved`]).
fn layer_activations_of(cfg: &DetailedConfig, b: f64, moe_layer: bool) -> LayerActivations {
    let block = block_activations_of(cfg, b, moe_layer);
    match cfg.arch.ssm {
        Some(m) => {
            let (replicated, sharded) = super::mixer::saved(cfg, m, b);
            LayerActivations {
                replicated: block.replicated + replicated,
                sharded: block.sharded + sharded,
                ..block
            }
        }
        None => block,
    }
}

/// One layer's attention and MLP activations for `b` sequences; `moe_layer`:
/// a mixture-of-experts layer. Per profile: Megatron-style kernels
/// ([`fused::block`]) or stock `transformers` ([`hf::block`]).
fn block_activations_of(cfg: &DetailedConfig, b: f64, moe_layer: bool) -> LayerActivations {
    let moe = cfg.arch.moe.filter(|_| moe_layer);
    match cfg.profile {
        // `torch.compile` over stock `transformers` (dense layers only,
        // `super::check`).
        Profile::Hf if cfg.compile => compiled::block(cfg, b),
        Profile::Fused => fused::block(cfg, b, moe),
        Profile::Hf => hf::block(cfg, b, moe),
    }
}

/// Saved activations on one GPU for one micro-batch, as recomputation and
/// tensor and sequence parallelism leave them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Saved {
    /// One layer, LoRA's intermediates included.
    pub(crate) per_layer: f64,
    /// One layer as the forward pass without recomputation keeps it: what
    /// recomputation materialises again during that layer's backward.
    pub(crate) per_layer_full: f64,
    /// Before the first layer (first pipeline stage).
    pub(crate) embedding: f64,
    /// After the last layer (last stage), the logits excepted.
    pub(crate) head: f64,
    /// The loss's fp32 log-probabilities (last stage).
    pub(crate) logits: f64,
}

/// Bytes of saved activations one GPU moves to the host with activation
/// offload: every layer's (`save_on_cpu` packs each saved tensor into pinned
/// host memory; DeepSpeed's `cpu_checkpointing` moves the checkpoints), or
/// Megatron-Core's first `cpu_offloading_num_layers`
/// ([`DetailedConfig::offloaded_layers`]); the GPU keeps the layer in
/// flight, copied back for its backward.
pub(crate) fn offloaded(cfg: &DetailedConfig) -> f64 {
    let s = saved(cfg);
    // The first pipeline stage holds the micro-batches in flight.
    let in_flight = cfg.stage_in_flight(0);
    let layers = cfg.offloaded_layers() as f64 * in_flight * s.per_layer;
    layers + in_flight * torchtune_outside(cfg)
}

/// torchtune's `OffloadActivations` (torchtune 0.6.1,
/// `training/_activation_offloading.py`, `pack_tensor`) beyond the layers:
/// its pack hook copies every saved tensor of 1,024 bytes or more that is
/// not an `nn.Parameter` to the host, once per pack. Its recipes refuse it
/// without whole-layer checkpointing (`recipes/full_finetune_distributed.py`
/// and the others: "enable_activation_offloading should only be True when
/// enable_activation_checkpointing is True"), so in each layer the one
/// pack is the checkpointed input ([`Saved::per_layer`] under full
/// recomputation); outside the layers the final norm's saved tensors go
/// too (a Hugging Face Llama's RMSNorm: its fp32 upcast and normalised
/// input and its output in the dtype, n·h·(8 + p)); the output layer runs
/// under `NoOpManager` and the loss outside the context, so theirs stay
/// (one pipeline stage only: the host figure is the first stage's).
/// Measured per pack on the CPU (`tests/fixtures/act_offload_measured.tsv`:
/// exact per layer, the rest within 0.6 %).
pub(crate) fn torchtune_outside(cfg: &DetailedConfig) -> f64 {
    use crate::detailed::config::ActOffload;
    if cfg.offload.activations_by != ActOffload::Torchtune
        || cfg.arch.family != crate::detailed::model::Family::Llama
        || cfg.parallel.pp > 1
    {
        return 0.0;
    }
    let local = cfg.context_local();
    let p = act_bytes(&local);
    let n = (local.seq * local.sequences()) as f64 / cfg.parallel.sp_divisor();
    n * cfg.arch.hidden as f64 * (8.0 + p)
}

/// What one micro-batch's forward pass keeps on one GPU.
///
/// Korthikanti et al. 2022, §4.2: tensor parallelism divides the sharded
/// terms by t, sequence parallelism the rest too; §5: full recomputation
/// keeps only each layer's input (2·s·b·h at 16 bits), selective drops the
/// a·s² terms.
///
/// Context parallelism: each GPU keeps its seq / cp tokens' tensors
/// ([`DetailedConfig::context_local`]).
pub(crate) fn saved(cfg: &DetailedConfig) -> Saved {
    let local = cfg.context_local();
    let cfg = &local;
    let par = &cfg.parallel;
    let tp = par.tp as f64;
    let sp_div = par.sp_divisor();
    let micro = cfg.sequences() as f64;
    let layer = layer_activations(cfg, micro);
    let p = act_bytes(cfg);
    let kept_of = |layer: LayerActivations, scores: bool| {
        let scores = if scores { layer.scores } else { 0.0 };
        (layer.sharded + scores) / tp
            + layer.replicated / sp_div
            + expert_bytes_on_gpu(par, layer.experts, layer.experts_ffn)
    };
    let kept = |scores: bool| kept_of(layer, scores);
    // What a layer holds again in its backward: the modules Megatron
    // checkpoints whole (`mlp`, `moe`, `shared_experts`) rerun their
    // forward and keep their tensors until their backward has run.
    let rm = cfg.megatron_recompute_modules();
    let whole = if rm.mlp || rm.moe || rm.shared_experts {
        let mut c = *cfg;
        let rm = &mut c.recompute_modules;
        (rm.mlp, rm.moe, rm.shared_experts) = (false, false, false);
        kept_of(layer_activations(&c, micro), true)
    } else {
        kept(true)
    };
    // A DTensor plan with sequence parallelism gathers the attention's and
    // the MLP's inputs (`PrepareModuleInput`, Shard(1) to Replicate) and the
    // column-wise projections save the gathered input whole, where Megatron
    // saves its shard and gathers it again in backward (Korthikanti et al.
    // 2022, §4.2.2): two n·h inputs a layer stay unsplit (measured,
    // `tests/fixtures/tp_sp_measured.tsv`).
    let gathered = if par.sp && par.dtensor_layers() && par.tp > 1 {
        2.0 * cfg.seq as f64 * micro * cfg.arch.hidden as f64 * p * (1.0 - 1.0 / sp_div)
    } else {
        0.0
    };
    let input = cfg.seq as f64 * micro * cfg.arch.hidden as f64 * p / sp_div;
    let layer_bytes = match cfg.recompute {
        Recompute::Full => input,
        // The cache of torchtitan's per-operator policy beside the input,
        // per GPU under tensor parallelism (`super::sac::cached_bytes`).
        // Under `torch.compile`, what the partitioner keeps of that cache
        // (`compiled::selective_op`, per GPU under a DTensor plan).
        Recompute::SelectiveOp if cfg.compile => {
            input + compiled::selective_op(cfg, cfg.seq as f64 * micro, p)
        }
        Recompute::SelectiveOp => input + super::sac::cached_bytes(cfg, cfg.seq as f64 * micro, p),
        Recompute::Selective => kept(false) + gathered,
        Recompute::None => kept(true) + gathered,
    };
    // LoRA keeps each adapter's r-wide intermediate (its input is the
    // projection's, already kept).
    let lora = if peft_llama(cfg) {
        // Counted in the layer (`peft_layer`).
        0.0
    } else {
        cfg.lora_rank.map_or(0.0, |r| {
            cfg.lora_targets.count() as f64 * cfg.seq as f64 * micro * r as f64 * p
        })
    };
    let outer = outer_activations(cfg, micro);
    Saved {
        per_layer: layer_bytes + lora,
        per_layer_full: whole + gathered + lora,
        // A DTensor plan's sequence parallelism covers the decoder layers
        // and the final norm: the position embeddings before them and the
        // output layer's gathered input after them stay whole (measured).
        embedding: if par.dtensor_layers() {
            outer.embedding
        } else {
            outer.embedding / sp_div
        },
        head: if par.dtensor_layers() {
            outer.head - outer.head_norm + outer.head_norm / sp_div
        } else {
            outer.head / sp_div
        },
        logits: outer.logits / par.logits_divisor(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detailed::{estimate, preset, Architecture, AttentionKernel};

    /// The preset `name` at `seq` tokens, one sequence, flash attention, no
    /// dropout.
    fn flash(name: &str, seq: u64) -> DetailedConfig {
        let mut cfg = DetailedConfig::new(preset(name).unwrap().arch, seq, 1);
        cfg.attention = AttentionKernel::Flash;
        cfg.dropout = false;
        cfg
    }

    #[test]
    fn gpt3_layer_matches_korthikanti() {
        // VECTORS.md: GPT-3 175B, s 2048, h 12288, a 96, b 1: 2,868,903,936
        // bytes per layer; selective recompute removes 70.2 % of it.
        let arch = Architecture::gpt2(96, 12288, 96, 50257);
        let cfg = DetailedConfig::new(arch, 2048, 1);
        let l = layer_activations(&cfg, 1.0);
        let full = l.replicated + l.sharded + l.scores;
        assert_eq!(full, 2_868_903_936.0);
        assert!(
            (l.scores / full - 0.702).abs() < 0.0005,
            "{}",
            l.scores / full
        );
    }

    #[test]
    fn tensor_and_sequence_parallel_follow_korthikanti() {
        // s·b·h·(10 + 24/t + 5·a·s/(h·t)) without SP; /t with SP.
        let arch = Architecture::gpt2(96, 12288, 96, 50257);
        let mut cfg = DetailedConfig::new(arch, 2048, 1);
        cfg.parallel.tp = 8;
        let sbh = 2048.0 * 12288.0;
        let a_s_h = 96.0 * 2048.0 / 12288.0;
        let layer = |cfg: &DetailedConfig| {
            let l = layer_activations(cfg, 1.0);
            let t = cfg.parallel.tp as f64;
            let rep = if cfg.parallel.sp {
                l.replicated / t
            } else {
                l.replicated
            };
            rep + (l.sharded + l.scores) / t
        };
        assert_eq!(layer(&cfg), sbh * (10.0 + 24.0 / 8.0 + 5.0 * a_s_h / 8.0));
        cfg.parallel.sp = true;
        assert_eq!(layer(&cfg), sbh / 8.0 * (34.0 + 5.0 * a_s_h));
    }

    /// Megatron's output-discarding recomputation, Qwen3-30B-A3B at 8,192
    /// tokens (h 2,048, 8 of 128 experts 768 wide), bf16: `layernorm`
    /// frees each MoE layer's pre-MLP norm output (n·h·2 bytes), `moe_act`
    /// the experts' activation output, the second GEMM's input (n·k·F·2),
    /// exactly; under sequence parallelism over 4 both shrink by 4. A
    /// dense Llama's norms are fused into their projections: nothing
    /// changes, nor under the "hf" profile or full recomputation.
    #[test]
    fn recomputed_modules_free_their_outputs() {
        let cfg = flash("qwen3-30b-a3b", 8192);
        let layer = |c: &DetailedConfig| saved(c).per_layer;
        let (n, h, k, f) = (8192.0, 2048.0, 8.0, 768.0);
        let mut on = cfg;
        on.recompute_modules.layernorm = true;
        assert_eq!(layer(&cfg) - layer(&on), n * h * 2.0);
        on.recompute_modules.moe_act = true;
        assert_eq!(layer(&cfg) - layer(&on), n * h * 2.0 + n * k * f * 2.0);
        let sp = |c: &DetailedConfig| {
            let mut c = *c;
            c.parallel.tp = 4;
            c.parallel.sp = true;
            layer(&c)
        };
        assert_eq!(sp(&cfg) - sp(&on), (n * h * 2.0 + n * k * f * 2.0) / 4.0);
        for off in [
            |c: &mut DetailedConfig| c.recompute = Recompute::Full,
            |c: &mut DetailedConfig| c.profile = crate::detailed::Profile::Hf,
        ] {
            let (mut a, mut b) = (cfg, on);
            off(&mut a);
            off(&mut b);
            assert_eq!(layer(&a), layer(&b));
        }
        let dense = DetailedConfig::new(preset("llama-3.1-8b").unwrap().arch, 8192, 1);
        let mut norms = dense;
        norms.recompute_modules.layernorm = true;
        assert_eq!(layer(&dense), layer(&norms));
    }

    /// Megatron's whole-module checkpoints keep a module's input alone and
    /// hold its tensors again in its backward: `mlp` on Llama 3.1 8B at
    /// 4,096 tokens frees the fused norm's output (the MLP input), SwiGLU's
    /// input and output kept by the fused kernel and the down projection's
    /// input, n·(2h + 4F + 2F) bytes; `moe` on Qwen3-30B-A3B at 8,192
    /// tokens the router's fp32 logits (4·n·E) and the routed experts'
    /// tensors (n·k·(2h + 3·2F + 12)); a module the model lacks changes
    /// nothing; the layer recomputed in backward is the whole one.
    #[test]
    fn whole_modules_keep_their_input_alone() {
        let dense = flash("llama-3.1-8b", 4096);
        let mut on = dense;
        on.recompute_modules.mlp = true;
        let (n, h, f) = (4096.0, 4096.0, 14336.0);
        let freed = saved(&dense).per_layer - saved(&on).per_layer;
        assert_eq!(freed, n * (2.0 * h + 4.0 * f + 2.0 * f));
        assert_eq!(saved(&on).per_layer_full, saved(&dense).per_layer_full);
        on.recompute_modules.moe = true;
        on.recompute_modules.shared_experts = true;
        assert_eq!(saved(&dense).per_layer - saved(&on).per_layer, freed);
        let moe = flash("qwen3-30b-a3b", 8192);
        let mut on = moe;
        on.recompute_modules.moe = true;
        let (n, h, e, k, f) = (8192.0, 2048.0, 128.0, 8.0, 768.0);
        let freed = saved(&moe).per_layer - saved(&on).per_layer;
        assert_eq!(
            freed,
            4.0 * n * e + n * k * (2.0 * h + 3.0 * 2.0 * f + 12.0)
        );
        assert_eq!(saved(&on).per_layer_full, saved(&moe).per_layer_full);
        let mut mlp = moe;
        mlp.recompute_modules.mlp = true;
        mlp.recompute_modules.shared_experts = true;
        assert_eq!(saved(&mlp), saved(&moe));
    }

    /// `mla_up_proj` on DeepSeek-V3 (128 heads; q and k 192 wide a head,
    /// v 128) at 4,096 tokens: the query, key and value the attention core
    /// keeps are freed, n·128·(192 + 192 + 128)·2 bytes a layer, on every
    /// layer alike; without latent attention it changes nothing.
    #[test]
    fn mla_up_proj_frees_the_query_key_and_value() {
        let cfg = flash("deepseek-v3", 4096);
        let mut on = cfg;
        on.recompute_modules.mla_up_proj = true;
        let freed = saved(&cfg).per_layer - saved(&on).per_layer;
        assert_eq!(freed, 4096.0 * 128.0 * (192.0 + 192.0 + 128.0) * 2.0);
        let dense = DetailedConfig::new(preset("llama-3.1-8b").unwrap().arch, 4096, 1);
        let mut up = dense;
        up.recompute_modules.mla_up_proj = true;
        assert_eq!(saved(&dense).per_layer, saved(&up).per_layer);
    }

    /// Issue 24, item 6: Qwen3-30B-A3B at 8,192 tokens. Under sequence
    /// parallelism each rank routes n/t tokens, so the experts' tensors
    /// shrink by t whatever the expert parallelism; expert tensor
    /// parallelism gathers the pairs back at full width and splits only the
    /// FFN-wide ones; tensor parallelism without SP is refused. (The
    /// issue's one-GPU 48.0 GB counted Q and the out-projection's input at
    /// h = 2,048; they are 32 heads of 128 wide, 4,096: 3.2 GB more; and
    /// each routed pair's SiLU output at 768 wide, which Megatron's fused
    /// SwiGLU does not keep: 4.8 GB less.)
    #[test]
    fn experts_under_tensor_and_sequence_parallelism() {
        let cfg = flash("qwen3-30b-a3b", 8192);
        let act = |f: &dyn Fn(&mut DetailedConfig)| {
            let mut c = cfg;
            f(&mut c);
            estimate(&c).map(|b| (b.activations / 1e8).round() / 10.0)
        };
        assert_eq!(act(&|_| {}), Ok(46.4));
        let tp8 = act(&|c| {
            c.parallel.tp = 8;
            c.parallel.sp = true;
        });
        assert_eq!(tp8, Ok(5.8));
        assert_eq!(
            act(&|c| {
                c.parallel.tp = 8;
                c.parallel.sp = true;
                c.parallel.ep = 8;
            }),
            tp8
        );
        assert_eq!(
            act(&|c| {
                c.parallel.tp = 8;
                c.parallel.sp = true;
                c.parallel.etp = 8;
            }),
            Ok(17.1)
        );
        assert!(act(&|c| c.parallel.tp = 8).is_err());
        // Term by term: the full-width part scales by e/t, the FFN part by 1/t.
        let par = crate::detailed::Parallelism {
            tp: 4,
            sp: true,
            etp: 2,
            ..Default::default()
        };
        assert_eq!(
            expert_bytes_on_gpu(&par, 10.0, 6.0),
            (4.0 * 2.0 + 6.0) / 4.0
        );
    }

    #[test]
    fn capacity_factor_scales_the_fused_expert_tensors() {
        let arch = crate::detailed::preset("mixtral-8x7b").unwrap().arch;
        let mut cfg = DetailedConfig::new(arch, 4096, 1);
        let m = arch.moe.unwrap();
        let dropless = moe::moe_mlp(&cfg, 4096.0, m);
        cfg.capacity_factor = Some(1.25);
        let padded = moe::moe_mlp(&cfg, 4096.0, m);
        assert_eq!(padded.2, dropless.2 * 1.25);
        assert_eq!((padded.0, padded.1), (dropless.0, dropless.1));
        // Per slot: h and 3F at 2 bytes (Megatron's fused SwiGLU keeps
        // its 2F input, the down projection its F input), an fp32 weight
        // and an int64 index; 4F with SwiGLU as eager ops.
        assert_eq!(
            dropless.2,
            4096.0 * 2.0 * (4096.0 * 2.0 + 3.0 * 14336.0 * 2.0 + 12.0)
        );
        cfg.framework = crate::detailed::config::Framework::Fsdp2 {
            reshard_after_forward: true,
        };
        cfg.capacity_factor = None;
        assert_eq!(
            moe::moe_mlp(&cfg, 4096.0, m).2,
            4096.0 * 2.0 * (4096.0 * 2.0 + 4.0 * 14336.0 * 2.0 + 12.0)
        );
        cfg.capacity_factor = Some(f64::NAN);
        assert!(estimate(&cfg).is_err());
    }

    #[test]
    fn flash_attention_removes_the_s_squared_term() {
        let arch = preset("llama-3.1-8b").unwrap().arch;
        let mut cfg = DetailedConfig::new(arch, 8192, 1);
        let eager = estimate(&cfg).unwrap().activations;
        cfg.attention = AttentionKernel::Flash;
        let flash = estimate(&cfg).unwrap().activations;
        assert!(flash < eager / 3.0, "{flash} vs {eager}");
    }
}
