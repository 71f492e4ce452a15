//! The time of one optimizer step on one GPU, from the work the memory
//! model already counts ([`flops`](super::flops)) and the card's data sheet
//! ([`hardware`](super::hardware)).
//!
//! Every operation is priced from first principles, with a handful of
//! efficiencies ([`Efficiency`]) that are the same for every model and
//! configuration:
//!
//! - **matrix multiplies** (Williams et al. 2009, "Roofline"): an
//!   m × k by k × n product does 2·m·k·n operations and moves
//!   2·(m·k + k·n + m·n) bytes. Its time is the operations at the tensor
//!   cores' sustained rate **plus** the bytes at the memory's, the roofline
//!   without overlap: the loads before a tile's first multiply and the
//!   stores after its last do not hide behind it. This is the kernel
//!   efficiency by matrix size: narrow layers (k or n of a few hundred, or
//!   split by tensor parallelism) pay for their bytes, wide ones do not.
//!   Backward is two such products per weight (the input's gradient and the
//!   weight's), the same operations and bytes each.
//! - **attention**: FlashAttention's causal kernels skip the masked half of
//!   the scores, so they run half of the 4·s·q operations per token that the
//!   FLOP conventions count, at their own sustained rate; backward is 2.5×
//!   the forward's operations (five products for two, Dao 2023, §3.1.2).
//!   Eager attention runs the full products at the matrix rate and moves
//!   the a·s² scores through memory (softmax, dropout) forward and back.
//! - **memory-bound kernels** (norms, residual adds, the MLP's activation,
//!   rotary embeddings, dropout, cross-entropy): the bytes each reads and
//!   writes at the memory's sustained rate, backward twice the forward.
//! - **communication**: ring collectives (Patarasuk & Yuan 2009: an
//!   all-reduce moves 2·(n−1)/n of the buffer per GPU, an all-gather or
//!   reduce-scatter (n−1)/n) over NVLink when the group sits in one node,
//!   else over each GPU's share of the network. Tensor-parallel
//!   all-reduces (or the all-gather + reduce-scatter pairs of sequence
//!   parallelism, the same bytes) are exposed, as Megatron-LM runs them
//!   (Korthikanti et al. 2022, §4.2.2); data-parallel gradient reduction
//!   overlaps the last micro-batch's backward (PyTorch DDP's buckets,
//!   Li et al. 2020, §3.2.3); ZeRO-3 / FSDP gathers each micro-batch's
//!   parameters and reduces its gradients behind that micro-batch's compute
//!   (Zhao et al. 2023, §3.3, prefetching); expert all-to-alls are exposed.
//! - **pipeline**: the 1F1B schedule's (p−1)/v bubble of the slowest
//!   stage's forward and backward (Narayanan et al. 2021, §2.2, Eq. 1 and
//!   §2.2.2), and the stage-to-stage sends of each micro-batch.
//! - **optimizer and offload**: the update reads and writes the GPU's
//!   optimizer state, master weights and gradients once; offloaded to the
//!   host it moves gradients down and weights up over PCIe and runs at the
//!   host memory's rate.
//!
//! ```
//! use membudget::detailed::{preset, time::hardware::gpu, time::steptime, DetailedConfig};
//!
//! let cfg = DetailedConfig::new(preset("llama-3.1-8b").unwrap().arch, 4096, 8);
//! let t = steptime::step_time(&cfg, &steptime::Cluster::new(gpu("h100-sxm").unwrap(), 8),
//!     &steptime::Efficiency::default());
//! assert!(t.mfu > 0.2 && t.mfu < 0.8, "{}", t.mfu);
//! ```

use super::flops::step_flops;
use super::hardware::{Dtype, Gpu};
use crate::detailed::config::{
    AttentionKernel, DetailedConfig, Objective, Optimizer, Precision, Profile, Recompute, Reference,
};
use crate::detailed::model::Family;

/// The sustained fractions of the data sheet's rates: one set for every
/// model, card and layout (none is fitted to a row of the validation).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Efficiency {
    /// Tensor-core matrix multiplies, of dense peak: 0.80, the low end of
    /// "optimized GEMM can reach up to 80–90 % of the theoretical maximum
    /// device throughput" (Dao 2023, "FlashAttention-2", §1).
    pub matmul: f64,
    /// FlashAttention's forward, of dense peak, over the operations it
    /// runs: 0.50 on A100, the low end of FlashAttention-2's "50–73 % of
    /// the theoretical maximum FLOPs/s on A100" (Dao 2023, abstract); by
    /// architecture in [`Efficiency::for_gpu`].
    pub attention_forward: f64,
    /// FlashAttention's backward: 0.50, the same range.
    pub attention_backward: f64,
    /// Memory bandwidth a streaming kernel sustains, of the data sheet's:
    /// 0.80 (an assumption: no single source; editable).
    pub memory: f64,
    /// Bus bandwidth a ring collective sustains, of the link's: 0.80 (an
    /// assumption; `nccl-tests`' "bus bandwidth" is the measured
    /// counterpart, `doc/PERFORMANCE.md`).
    pub link: f64,
}

impl Default for Efficiency {
    fn default() -> Self {
        Self {
            matmul: 0.80,
            attention_forward: 0.50,
            attention_backward: 0.50,
            memory: 0.80,
            link: 0.80,
        }
    }
}

/// FlashAttention-2's sustained fraction of the dense peak by the card's
/// architecture (the kernel uses Ampere's instructions wherever it runs):
///
/// - Hopper: 0.35, "FlashAttention-2 achieving only 35 % utilization on the
///   H100 GPU" (Shah et al. 2024, FlashAttention-3, abstract); Blackwell has
///   no published figure and takes Hopper's;
/// - Ampere: 0.50, the low end of "50–73 % of the theoretical maximum
///   FLOPs/s on A100" (Dao 2023, abstract); Ada and CDNA 3 have no
///   published figure and take the A100's.
pub const FLASH_ATTENTION_2: [(&[&str], f64); 2] = [
    (&["h100-sxm", "h100-pcie", "h200", "b200"], 0.35),
    (
        &[
            "a100-40gb",
            "a100-80gb",
            "rtx-3090",
            "l40s",
            "rtx-4090",
            "mi300x",
            "mi325x",
        ],
        0.50,
    ),
];

/// The largest fraction of the dense bf16 peak a matrix multiply reaches
/// on each card, measured by a search over shapes in PyTorch: the "Maximum
/// Achievable Matmul FLOPS" table of Bekman, "Machine Learning
/// Engineering", `compute/accelerator/README.md` (A100 SXM 271.2 of 312
/// TFLOPS, H100 SXM 794.5 of 989, "H200 is the same", B200 1745 of 2250,
/// MI300X 668.4 of 1300, MI325X 784.9 of 1300). Cards it does not list take
/// their architecture's (the H100 PCIe the H100 SXM's) or, with none, the
/// A100's.
pub const MATMUL_MAMF: [(&[&str], f64); 5] = [
    (&["h100-sxm", "h100-pcie", "h200"], 794.5 / 989.0),
    (&["b200"], 1745.0 / 2250.0),
    (&["mi300x"], 668.4 / 1300.0),
    (&["mi325x"], 784.9 / 1300.0),
    (
        &["a100-40gb", "a100-80gb", "rtx-3090", "l40s", "rtx-4090"],
        271.2 / 312.0,
    ),
];

/// The A100's measured fraction, against which [`MATMUL_MAMF`] scales the
/// 0.80 of [`Efficiency::default`].
const A100_MAMF: f64 = 271.2 / 312.0;

/// Looks `gpu` up in a table of fractions by card.
fn by_card(table: &[(&[&str], f64)], gpu: &Gpu, default: f64) -> f64 {
    table
        .iter()
        .find(|(keys, _)| keys.contains(&gpu.key))
        .map_or(default, |(_, e)| *e)
}

impl Efficiency {
    /// The defaults on `gpu`:
    ///
    /// - matrix multiplies at 0.80 of peak on the A100, and on other cards
    ///   0.80 scaled by their measured best fraction against the A100's
    ///   ([`MATMUL_MAMF`]): a training step's shapes fall short of the best
    ///   shape by the same factor on every card (an assumption, stated in
    ///   `docs/steptime.md`). H100 and H200: 0.74; B200: 0.71; MI300X: 0.47;
    ///   MI325X: 0.56;
    /// - FlashAttention-2 at its rate on the card's architecture
    ///   ([`FLASH_ATTENTION_2`]);
    /// - memory and links as [`Efficiency::default`].
    pub fn for_gpu(gpu: &Gpu) -> Self {
        let attention = by_card(&FLASH_ATTENTION_2, gpu, 0.50);
        Self {
            matmul: 0.80 * by_card(&MATMUL_MAMF, gpu, A100_MAMF) / A100_MAMF,
            attention_forward: attention,
            attention_backward: attention,
            ..Self::default()
        }
    }

    /// On `gpu` with FlashAttention 1 instead of 2 (software before July
    /// 2023): on the A100 "the forward pass only reaches 30–50 % of the
    /// theoretical maximum FLOPs/s of the device, while the backward pass
    /// ... 25–35 %" (Dao 2023, §1), the low end of each. Both versions run
    /// the Ampere instructions wherever they run, so on other architectures
    /// FlashAttention 1 keeps the fraction of the A100's rate that
    /// FlashAttention-2 keeps ([`FLASH_ATTENTION_2`]: 0.35 / 0.50 on Hopper).
    pub fn for_gpu_flash_attention_1(gpu: &Gpu) -> Self {
        let d = Self::for_gpu(gpu);
        let k = d.attention_forward / 0.50;
        Self {
            attention_forward: 0.30 * k,
            attention_backward: 0.25 * k,
            ..d
        }
    }
}

/// The GPUs a step runs on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cluster {
    /// The card.
    pub gpu: Gpu,
    /// GPUs per node: groups that fit in one talk over NVLink.
    pub gpus_per_node: u64,
}

impl Cluster {
    /// `gpu` in nodes of `gpus_per_node`.
    pub fn new(gpu: Gpu, gpus_per_node: u64) -> Self {
        Self {
            gpu,
            gpus_per_node: gpus_per_node.max(1),
        }
    }
}

/// Host memory bandwidth per GPU for an offloaded optimizer step: a DGX
/// A100's two AMD EPYC 7742, eight DDR4-3200 channels each (25.6 GB/s per
/// channel, JEDEC JESD79-4), 409.6 GB/s shared by eight GPUs.
pub const HOST_GBPS_PER_GPU: f64 = 51.2;

/// Where a step's time goes, seconds per optimizer step on one GPU (the
/// slowest pipeline stage).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Parts {
    /// Matrix multiplies (weights and logits), recomputation included.
    pub matmul: f64,
    /// The attention's score and value products.
    pub attention: f64,
    /// Memory-bound kernels: norms, activations, residuals, softmax, loss.
    pub memory_bound: f64,
    /// Tensor-parallel collectives (exposed).
    pub tensor_parallel: f64,
    /// Data-parallel / ZeRO / FSDP collectives, the part not hidden.
    pub data_parallel: f64,
    /// Expert-parallel all-to-alls (exposed).
    pub expert_parallel: f64,
    /// Context parallelism's key/value ring, the part the attention does
    /// not hide.
    #[serde(default)]
    pub context_parallel: f64,
    /// Pipeline stage-to-stage sends.
    pub pipeline_sends: f64,
    /// The pipeline's fill and drain.
    pub bubble: f64,
    /// The optimizer update on the GPU.
    pub optimizer: f64,
    /// Offload: PCIe transfers and the host's optimizer step, not hidden.
    pub offload: f64,
    /// GRPO's rollout: the prompts' prefill and the decoding, one token at
    /// a time, and the reference's scoring with a KL penalty.
    #[serde(default)]
    pub generation: f64,
}

impl Parts {
    /// Their sum: the step.
    pub fn total(&self) -> f64 {
        self.matmul
            + self.attention
            + self.memory_bound
            + self.tensor_parallel
            + self.data_parallel
            + self.expert_parallel
            + self.context_parallel
            + self.pipeline_sends
            + self.bubble
            + self.optimizer
            + self.offload
            + self.generation
    }

    /// Each part with its name, in the order above.
    pub fn named(&self) -> [(&'static str, f64); 12] {
        [
            ("matmul", self.matmul),
            ("attention", self.attention),
            ("memory-bound", self.memory_bound),
            ("tensor parallel", self.tensor_parallel),
            ("data parallel", self.data_parallel),
            ("expert parallel", self.expert_parallel),
            ("context parallel", self.context_parallel),
            ("pipeline sends", self.pipeline_sends),
            ("bubble", self.bubble),
            ("optimizer", self.optimizer),
            ("offload", self.offload),
            ("generation", self.generation),
        ]
    }

    /// The largest part's name.
    pub fn dominant(&self) -> &'static str {
        self.named()
            .into_iter()
            .fold(("matmul", f64::MIN), |a, b| if b.1 > a.1 { b } else { a })
            .0
    }

    fn scaled(self, k: f64) -> Self {
        Self {
            matmul: self.matmul * k,
            attention: self.attention * k,
            memory_bound: self.memory_bound * k,
            tensor_parallel: self.tensor_parallel * k,
            data_parallel: self.data_parallel * k,
            expert_parallel: self.expert_parallel * k,
            context_parallel: self.context_parallel * k,
            pipeline_sends: self.pipeline_sends * k,
            bubble: self.bubble * k,
            optimizer: self.optimizer * k,
            offload: self.offload * k,
            generation: self.generation * k,
        }
    }
}

/// One optimizer step's time and what it achieves per GPU.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StepTime {
    /// Seconds per optimizer step.
    pub step_s: f64,
    /// Tokens trained per second per GPU.
    pub tokens_per_s_per_gpu: f64,
    /// Model FLOPs per second per GPU, in TFLOPS (PaLM's convention).
    pub model_tflops_per_gpu: f64,
    /// Hardware FLOPs per second per GPU (recomputation counted).
    pub hardware_tflops_per_gpu: f64,
    /// Model FLOPs utilisation: model TFLOPS over the card's dense peak.
    pub mfu: f64,
    /// Hardware FLOPs utilisation.
    pub hfu: f64,
    /// Where the time goes.
    pub parts: Parts,
}

/// Seconds for an m × k by k × n product at the roofline without overlap.
fn gemm(m: f64, k: f64, n: f64, peak: f64, bw: f64) -> f64 {
    2.0 * m * k * n / peak + 2.0 * (m * k + k * n + m * n) / bw
}

/// Rates for a step: sustained FLOP/s and bytes/s.
struct Rates {
    flops: f64,
    /// The layers' `nn.Linear` matmuls: at the card's fp8 rate under
    /// float8 training ([`super::fp8`]), otherwise `flops`.
    linear: f64,
    attention: f64,
    attention_backward: f64,
    bytes: f64,
}

/// GRPO's rollout on one GPU ([`super::grpo`]), seconds: the prefill of
/// the generation batch's prompts at the matrix rate (2 FLOPs per active
/// parameter per token, Kaplan et al. 2020, §2.1), then one decoding step
/// per completion token, each bound by the larger of reading the weights
/// and the key/value cache so far from memory and its 2 FLOPs per active
/// parameter per sequence (the roofline of Williams et al. 2009; decoding
/// at small batch is memory-bound, Pope et al. 2022, §2); with a KL
/// penalty, the reference's forward over every micro-batch (one
/// micro-batch's forward seconds: `micro_forward`).
fn generation_time(cfg: &DetailedConfig, r: &Rates, micro_forward: f64) -> f64 {
    let a = &cfg.arch;
    let g = crate::detailed::memory::grpo::generation(cfg);
    let b = g.sequences as f64;
    let c = cfg.rollout.completion_tokens(cfg.seq) as f64;
    let prompt = cfg.seq as f64 - c;
    let active = a.active_params() as f64;
    let weights = a.params() as f64 * crate::detailed::memory::states::weight_bytes(cfg);
    let prefill = 2.0 * active * b * prompt / r.flops;
    let avg_cache = crate::detailed::memory::grpo::kv_cache(cfg, b, prompt + c / 2.0);
    let token = ((weights + avg_cache) / r.bytes).max(2.0 * active * b / r.flops);
    let reference = if cfg.objective == (Objective::Grpo { kl: true }) {
        micro_forward * cfg.accumulation_steps() as f64
    } else {
        0.0
    };
    prefill + c * token + reference
}

/// Forward seconds of one layer for `m` tokens on one GPU, split into
/// matrix multiplies, attention and memory-bound kernels.
fn layer_forward(cfg: &DetailedConfig, moe: bool, m: f64, r: &Rates) -> (f64, f64, f64) {
    let a = &cfg.arch;
    let p = &cfg.parallel;
    let t = p.tp.max(1) as f64;
    let (h, s) = (a.hidden as f64, cfg.seq as f64);
    let (q, kv, o) = (a.q_dim() as f64, a.kv_dim() as f64, a.o_dim() as f64);
    // Attention projections: column-parallel in, row-parallel out
    // (Shoeybi et al. 2019, §3).
    let mut mm = match a.mla {
        Some(_) => {
            let w = super::flops::layer_matmul_weights(a, false) - 3.0 * h * a.ffn as f64;
            gemm(m, h, w / h / t, r.linear, r.bytes)
        }
        None => {
            gemm(m, h, (q + 2.0 * kv) / t, r.linear, r.bytes) + gemm(m, o / t, h, r.linear, r.bytes)
        }
    };
    // The MLP: up (and gate) column-parallel, down row-parallel.
    let gated = a.family == Family::Llama;
    let up = if gated { 2.0 } else { 1.0 };
    let mut act_width = 0.0;
    match a.moe.filter(|_| moe) {
        Some(e) => {
            let et = p.etp.max(1) as f64;
            let local = (e.experts as f64 / p.ep.max(1) as f64).max(1.0);
            // Token-expert pairs this GPU computes: each token meets top-k
            // experts, spread evenly (the load-balancing loss's aim), and
            // the ranks that split an expert (etp) share their tokens.
            // `transformers` runs Llama 4's every expert on every token
            // (`Llama4TextMoe`: `hidden_states.repeat(E, 1)`, one bmm):
            // under the "hf" profile E pairs per token, not k.
            let pairs = if cfg.profile == Profile::Hf
                && e.router == crate::detailed::model::Router::Llama4
            {
                e.experts
            } else {
                e.top_k
            };
            let routed = m * pairs as f64 * et / t;
            let per_expert = routed / local;
            let f = e.expert_ffn as f64 / et;
            mm += gemm(m, h, e.experts as f64, r.flops, r.bytes)
                + local
                    * (gemm(per_expert, h, up * f, r.flops, r.bytes)
                        + gemm(per_expert, f, h, r.flops, r.bytes));
            act_width += routed / m * f;
            if e.shared_ffn > 0 {
                let fs = e.shared_ffn as f64 / t;
                mm += gemm(m, h, up * fs, r.linear, r.bytes) + gemm(m, fs, h, r.linear, r.bytes);
                act_width += fs;
            }
        }
        None => {
            let f = a.ffn as f64 / t;
            mm += gemm(m, h, up * f, r.linear, r.bytes) + gemm(m, f, h, r.linear, r.bytes);
            act_width += f;
        }
    }
    // Attention core over a sequence: the heads split by t.
    let core = 2.0 * s * (q + o) / t * m;
    let (mut attn, scores_bytes) = match cfg.attention {
        // Causal FlashAttention skips the masked half.
        AttentionKernel::Flash => (0.5 * core / r.attention, 0.0),
        AttentionKernel::Eager => {
            // Softmax reads and writes the a·s scores per token; dropout
            // reads, writes and keeps a 1-byte mask.
            let per_elem = if cfg.dropout { 9.0 } else { 4.0 };
            let elems = a.heads as f64 / t * s * m;
            (core / r.flops, per_elem * elems)
        }
    };
    // Memory-bound kernels, bytes per token at 16 bits. Fused kernels
    // (Megatron, MPT): two norms (read h, write h), two residual adds
    // (read 2h, write h), the MLP's activation (read the up and gate
    // outputs, write f), rotary embeddings on q and k (read, write),
    // dropout after attention and MLP (read, write, 1-byte mask). The "hf"
    // profile runs them as PyTorch's eager ops, one kernel each
    // (`transformers`' `LlamaRMSNorm`: cast to fp32, square, mean, scale,
    // cast back, weight: 36 bytes an element; `apply_rotary_pos_emb`: two
    // products, the rotated half's negation and concatenation, the sum: 20;
    // SwiGLU's SiLU then product: 10 bytes per FFN element instead of 6).
    // Norms, residuals and dropout run on every tensor-parallel rank unless
    // sequence parallelism splits them.
    let sp = if p.sp { t } else { 1.0 };
    let eager = cfg.profile == Profile::Hf;
    // GPT-2's LayerNorm is one kernel in either profile.
    let (norm, rope, act) = if eager && gated {
        (36.0, 20.0, 10.0)
    } else {
        (4.0, 4.0, 2.0 * (up + 1.0))
    };
    let mut per_token = (2.0 * norm * h + 2.0 * 6.0 * h) / sp + act * act_width;
    if gated {
        per_token += rope * (q + kv) / t;
    }
    if cfg.dropout {
        per_token += 2.0 * 5.0 * h / sp;
    }
    // Context parallelism: each of the cp ring steps yields a partial
    // attention output that is merged into an fp32 accumulator (read and
    // written, 8 bytes a value: Transformer Engine's
    // `AttnFuncWithCPAndKVP2P`, `flash_attn_fwd_out_correction`).
    if p.cp > 1 && p.cp_comm == crate::detailed::config::CpComm::P2p {
        per_token += p.cp as f64 * 8.0 * o / t;
    }
    // Float8: each converted linear casts its input and its weight (read
    // in the dtype, write one byte; compiled into one kernel each), the
    // inputs of q, k, v, gate and up separately though they are the same
    // tensor (`Float8Linear.forward`); backward's casts of the output
    // gradient and again of the input and weight follow the forward's
    // factor of two.
    let mut cast = 0.0;
    if crate::detailed::memory::fp8::enabled(cfg) {
        let p16 = crate::detailed::memory::bytes::act_bytes(cfg) + 1.0;
        let widths = match a.moe.filter(|_| moe) {
            Some(e) if e.shared_ffn > 0 => 5.0 * h + o + e.shared_ffn as f64,
            Some(_) => 3.0 * h + o,
            None if gated => 5.0 * h + o + a.ffn as f64,
            None => 2.0 * h + o + a.ffn as f64,
        };
        let weights = match a.moe.filter(|_| moe) {
            Some(e) => h * (q + 2.0 * kv) + o * h + 3.0 * h * e.shared_ffn as f64,
            None => h * (q + 2.0 * kv) + o * h + (up + 1.0) * h * a.ffn as f64,
        };
        cast = p16 * (m * widths + weights) / t;
    }
    // A hybrid layer's Mamba-2 mixer (Falcon-H1), its heads split by t:
    // the two projections as linear layers; the convolution and the SSD
    // scan's chunked products ([`super::flops::scan_flops`]) at the fused
    // kernels' rate, or as PyTorch's einsums in fp32 under "hf"; and
    // memory traffic: `mamba_ssm`'s combined kernel reads the projection's
    // output and writes the scan's and the gated output, while the eager
    // path writes every tensor it keeps (read back by the next op).
    if let Some(mx) = a.ssm {
        let (d, w) = (mx.inner() as f64, mx.in_width() as f64);
        mm += gemm(m, h, w / t, r.linear, r.bytes) + gemm(m, d / t, h, r.linear, r.bytes);
        let scan = super::flops::scan_flops(mx, cfg.seq) / t * m;
        let p16 = crate::detailed::memory::bytes::act_bytes(cfg);
        if eager {
            attn += scan / r.flops;
            let (_, kept) = crate::detailed::memory::mixer::saved(cfg, mx, 1.0);
            per_token += 2.0 * kept / s / t;
        } else {
            attn += scan / r.attention;
            per_token += (w + 2.0 * d) * p16 / t;
        }
    }
    let mem = (per_token * m + scores_bytes + cast) / r.bytes;
    (mm, attn, mem)
}

/// Seconds for a ring all-reduce of `bytes` over `n` GPUs at `bw` bytes/s.
fn all_reduce(bytes: f64, n: u64, bw: f64) -> f64 {
    if n <= 1 {
        return 0.0;
    }
    2.0 * (n - 1) as f64 / n as f64 * bytes / bw
}

/// The time of one optimizer step of `cfg` on `cluster`'s GPUs.
pub fn step_time(cfg: &DetailedConfig, cluster: &Cluster, eff: &Efficiency) -> StepTime {
    let gpu = &cluster.gpu;
    let a = &cfg.arch;
    let p = &cfg.parallel;
    let (dp, t, pp, vp, ep) = (
        p.dp.max(1),
        p.tp.max(1),
        p.pp.max(1),
        p.vp.max(1),
        p.ep.max(1),
    );
    let dtype = match cfg.precision {
        Precision::Fp32 => Dtype::Tf32,
        _ => Dtype::Bf16,
    };
    let peak = gpu
        .peak_tflops(dtype)
        .or(gpu.peak_tflops(Dtype::Fp32))
        .unwrap_or(1.0)
        * 1e12;
    // Float8 (torchao): the layers' linear layers run `torch._scaled_mm` at
    // the fp8 tensor cores' dense peak, at the same achievable fraction
    // (Bekman's MAMF tables measure bf16; fp8 is assumed alike). A card
    // without fp8 keeps its rate (torchao refuses it; the command line and
    // the page say so).
    let linear_peak = if crate::detailed::memory::fp8::enabled(cfg)
        && crate::detailed::time::hardware::fp8_runs_on(cfg, gpu)
    {
        gpu.peak_tflops(Dtype::Fp8).map_or(peak, |t| t * 1e12)
    } else {
        peak
    };
    let r = Rates {
        flops: peak * eff.matmul,
        linear: linear_peak * eff.matmul,
        attention: peak * eff.attention_forward,
        attention_backward: peak * eff.attention_backward,
        bytes: gpu.memory_gbps * 1e9 * eff.memory,
    };
    let gpn = cluster.gpus_per_node;
    // Megatron's rank order puts tensor parallelism innermost, then data,
    // then pipeline: a group of n with stride k stays in a node when
    // n·k ≤ GPUs per node. A group that spans nodes runs its rings through
    // every member's NIC at once (NCCL builds one ring per NIC), so the
    // members a node holds share the step across nodes: their NICs
    // together, up to NVLink's rate.
    let link = |n: u64, stride: u64| -> f64 {
        let gbps = if n * stride <= gpn {
            gpu.intra_node_gbps
        } else {
            let members = (gpn / stride.max(1)).clamp(1, n) as f64;
            (gpu.inter_node_gbps * members).min(gpu.intra_node_gbps)
        };
        gbps * 1e9 * eff.link
    };

    // Tokens one GPU runs per micro-batch: its share of each sequence under
    // context parallelism, whose queries meet every key (the attention's
    // length stays the sequence's).
    let cp = p.cp.max(1);
    let m = (cfg.sequences() * cfg.seq) as f64 / cp as f64;
    let h = a.hidden as f64;
    let moe_layers = a.moe_layers();
    let dense_layers = a.layers - moe_layers;
    let (dm, da, dmem) = layer_forward(cfg, false, m, &r);
    let (em, ea, emem) = if moe_layers > 0 {
        layer_forward(cfg, true, m, &r)
    } else {
        (0.0, 0.0, 0.0)
    };
    // One stage's share of the layers (the last stage also runs the
    // logits and the loss, and is the slowest).
    let share = 1.0 / pp as f64;
    let fwd_mm = (dense_layers as f64 * dm + moe_layers as f64 * em) * share;
    let fwd_attn = (dense_layers as f64 * da + moe_layers as f64 * ea) * share;
    let fwd_mem = (dense_layers as f64 * dmem + moe_layers as f64 * emem) * share;
    let vocab = a.vocab as f64 / p.outer_divisor();
    let logits_mm = gemm(m, h, vocab, r.flops, r.bytes);
    // Cross-entropy as PyTorch's autocast runs it (`log_softmax` and
    // `nll_loss` are on its fp32 list, `aten/src/ATen/autocast_mode.cpp`):
    // cast the 16-bit logits up (read 2, write 4 bytes each), log-softmax
    // (read 4, write 4); backward writes the fp32 gradient (4), runs the
    // log-softmax backward (read 8, write 4) and casts down (read 4,
    // write 2): 36 bytes per logit.
    let loss_mem = 36.0 * m * vocab / r.bytes;

    // Backward: the frozen weights of LoRA need only the input's gradient.
    let lora = cfg.lora_rank.is_some();
    let bwd_mm_factor = if lora { 1.0 } else { 2.0 };
    // FlashAttention's backward runs 2.5× the forward's products (five
    // matrix multiplies for two, Dao 2023, §3.1.2) at its own rate; eager
    // attention's backward is twice its forward, like any product.
    let backward_attn = match cfg.attention {
        AttentionKernel::Flash => 2.5 * fwd_attn * r.attention / r.attention_backward,
        AttentionKernel::Eager => 2.0 * fwd_attn,
    };
    let recompute = match cfg.recompute {
        Recompute::None => (0.0, 0.0, 0.0),
        Recompute::Selective => (0.0, fwd_attn, 0.0),
        Recompute::Full => (fwd_mm, fwd_attn, fwd_mem),
        // Per-operator checkpointing (torchtitan): the even-numbered
        // bias-free projections, every memory-bound kernel, and the
        // attention only when eager (flash's output is cached).
        Recompute::SelectiveOp => {
            let projections: f64 = crate::detailed::memory::sac::bias_free_projections(a)
                .iter()
                .skip(1)
                .step_by(2)
                .map(|w| gemm(m, w.input as f64, w.out as f64, r.linear, r.bytes))
                .sum();
            let attention = match cfg.attention {
                AttentionKernel::Flash => 0.0,
                AttentionKernel::Eager => fwd_attn,
            };
            (a.layers as f64 * share * projections, attention, fwd_mem)
        }
    };
    // DPO with a reference model runs one more forward, without grad.
    let reference = match cfg.objective {
        Objective::Dpo {
            reference: Reference::Model,
        } => 1.0,
        _ => 0.0,
    };
    // GRPO's fused head (TRL's `ChunkedLogProbFunction`) projects only the
    // completion's positions, and again in backward before its two
    // gradient products; its tiles are written and read once each way
    // (about 10 bytes per logit) instead of the cross-entropy's 36.
    let (logits_mm, loss_mem) = if matches!(cfg.objective, Objective::Grpo { .. }) {
        let scored = (cfg.micro() * cfg.rollout.completion_tokens(cfg.seq)) as f64;
        let head = gemm(scored, h, vocab, r.flops, r.bytes);
        (
            head * (2.0 + bwd_mm_factor) / (1.0 + bwd_mm_factor),
            10.0 * scored * vocab / r.bytes,
        )
    } else {
        (logits_mm, loss_mem)
    };
    let mut micro = Parts {
        matmul: (1.0 + bwd_mm_factor + reference) * (fwd_mm + logits_mm) + recompute.0,
        attention: (1.0 + reference) * fwd_attn + backward_attn + recompute.1,
        memory_bound: (1.0 + 2.0 + reference) * fwd_mem + recompute.2 + loss_mem,
        ..Parts::default()
    };
    // Tensor parallelism: two all-reduces forward and two backward per
    // layer (or their all-gather + reduce-scatter halves under sequence
    // parallelism), two more when full recomputation reruns the forward.
    if t > 1 {
        let per_layer = match cfg.recompute {
            Recompute::Full => 6.0,
            _ => 4.0,
        };
        let layers = a.layers as f64 * share;
        micro.tensor_parallel = per_layer * layers * all_reduce(2.0 * m * h, t, link(t, 1));
    }
    // Expert parallelism: dispatch and combine all-to-alls forward and
    // backward; each token's top-k copies leave for other GPUs, (ep−1)/ep.
    if ep > 1 && moe_layers > 0 {
        // Under sequence parallelism each tensor-parallel rank routes its
        // m/t tokens (Megatron-Core's `MoEAlltoAllTokenDispatcher`).
        let k = a.moe.map_or(1, |e| e.top_k) as f64;
        let tokens = if p.sp { m / t as f64 } else { m };
        let bytes = 2.0 * tokens * k * h * (ep - 1) as f64 / ep as f64;
        micro.expert_parallel = 4.0 * moe_layers as f64 * share * bytes / link(ep, t).max(1.0);
    }
    // Context parallelism: each layer passes the keys and values of the
    // other cp − 1 chunks around the ring (the heads split by t) forward,
    // and again with their gradients backward, overlapped with the
    // attention on the chunk in hand (Liu et al. 2023, "Ring Attention",
    // §3; Megatron-Core's `AttnFuncWithCPAndKVP2P`).
    // All-to-all (DeepSpeed-Ulysses, Jacobs et al. 2023, §3.2): the
    // queries, keys, values and the output each cross once forward and
    // their gradients once backward, (cp − 1)/cp of this GPU's share of
    // each, exposed.
    if cp > 1 && p.cp_comm == crate::detailed::config::CpComm::A2a {
        let local = (cfg.sequences() * cfg.seq) as f64 / cp as f64;
        let bytes = local * 2.0 * (2.0 * a.q_dim() as f64 + 2.0 * a.kv_dim() as f64) / t as f64
            * (cp - 1) as f64
            / cp as f64;
        micro.context_parallel = a.layers as f64 * share * 2.0 * bytes / link(cp, t);
    } else if cp > 1 {
        let kv = 2.0 * (cfg.sequences() * cfg.seq) as f64 * a.kv_dim() as f64 * 2.0 / t as f64
            * (cp - 1) as f64
            / cp as f64;
        let bw = link(cp, t);
        let layers = a.layers as f64 * share;
        let attn_fwd = fwd_attn / layers.max(1.0);
        let attn_bwd = backward_attn / layers.max(1.0);
        micro.context_parallel =
            layers * ((kv / bw - attn_fwd).max(0.0) + (2.0 * kv / bw - attn_bwd).max(0.0));
    }
    // Pipeline: each micro-batch's activations leave every model chunk
    // forward and their gradients come back backward, v chunks per GPU
    // (scattered over the tensor-parallel ranks under SP).
    if pp > 1 {
        let bytes = 2.0 * m * h / if p.sp { t as f64 } else { 1.0 };
        micro.pipeline_sends = 2.0 * vp as f64 * bytes / link(pp, t * dp * cp);
    }
    let compute = micro.matmul + micro.attention + micro.memory_bound;

    // Parameters this GPU holds (its stage and tensor shard), 16-bit.
    let n_params = a.params() as f64 / (t * pp) as f64;
    let param_bytes = match cfg.precision {
        Precision::Fp32 => 4.0,
        _ => 2.0,
    } * n_params;
    let trainable_bytes = if lora {
        2.0 * a.lora_params(cfg.lora_rank.unwrap_or(0), cfg.lora_targets) as f64 / (t * pp) as f64
    } else {
        param_bytes
    };
    // Gradients are reduced, and ZeRO shards, over dp × cp GPUs; under
    // hybrid sharding ZeRO shards over groups of `shard` GPUs and the
    // `replicas` groups all-reduce their gradient shards (PyTorch FSDP's
    // `HYBRID_SHARD`: reduce-scatter in the group, then all-reduce across
    // groups on its own stream, `_post_backward_hook`).
    let dp = p.data_group();
    let (shard, replicas) = (p.shard_group(), p.replicas());
    let shard_bw = link(shard, t);
    let acc = cfg.accumulation_steps() as f64;
    // ZeRO-3 / FSDP: gather the parameters for forward and again for
    // backward, reduce-scatter the gradients, per micro-batch, hidden
    // behind that micro-batch's compute.
    if p.zero >= 3 && shard > 1 {
        let frac = (shard - 1) as f64 / shard as f64;
        let gathers = match cfg.framework {
            crate::detailed::config::Framework::Fsdp2 {
                reshard_after_forward: false,
            } => 1.0,
            _ => 2.0,
        };
        // FSDP2 under mixed precision reduce-scatters in fp32
        // (`MixedPrecisionPolicy(reduce_dtype=fp32)`, `states::fsdp2_policy`).
        let fsdp2 = matches!(
            cfg.framework,
            crate::detailed::config::Framework::Fsdp2 { .. }
        );
        let reduce_bytes = if fsdp2 && cfg.precision == Precision::Mixed && !lora {
            2.0 * trainable_bytes
        } else {
            trainable_bytes
        };
        let comm = frac * (gathers * param_bytes + reduce_bytes) / shard_bw;
        // FSDP2 copies on the compute stream: each all-gather's flat output
        // out into the unsharded weights (read and write,
        // `FSDPParamGroup.wait_for_unshard`, `foreach_all_gather_copy_out`),
        // and the unsharded gradients into the reduce-scatter's flat input
        // in the reduce dtype (`foreach_reduce`, copy-in before the
        // reduce-scatter stream waits on the compute stream). FSDP1 and
        // Megatron gather into and reduce from flat buffers the weights and
        // gradients are views of: no copies.
        if fsdp2 {
            let copies = gathers * 2.0 * param_bytes + trainable_bytes + reduce_bytes;
            micro.memory_bound += copies / r.bytes;
        }
        let with_copies = micro.matmul + micro.attention + micro.memory_bound;
        micro.data_parallel = (comm - with_copies).max(0.0);
    }
    // Hybrid sharding's all-reduce of each group's gradient shard across
    // the replicas: its own stream, behind the last micro-batch's backward.
    let cross = if replicas > 1 && p.zero >= 1 {
        all_reduce(
            trainable_bytes / shard as f64,
            replicas,
            link(replicas, t * shard),
        )
    } else {
        0.0
    };
    let mut step = micro.scaled(acc);
    let bubble = (pp - 1) as f64 / vp as f64;
    let stage = compute + micro.tensor_parallel + micro.expert_parallel + micro.context_parallel;
    step.bubble = match p.schedule {
        // (p − 1)(T_F + T_B − T_W): W, the weights' gradients (one of the
        // backward's two products per weight), fills the bubble.
        crate::detailed::config::parallel::Schedule::ZbH1 if !lora => {
            let weights = fwd_mm + logits_mm;
            (pp - 1) as f64 * (stage - 2.0 * weights).max(0.0)
        }
        _ => bubble * stage,
    };
    // ZeRO 0–2 and DDP: reduce the gradients once per step, overlapped with
    // the last micro-batch's backward; ZeRO-1/2 then gather the updated
    // parameters before the next forward (in the shard group).
    let backward = compute * (2.0 / 3.0);
    if p.zero < 3 && dp > 1 {
        let reduce = if replicas > 1 {
            0.5 * all_reduce(trainable_bytes, shard, shard_bw) + cross
        } else {
            all_reduce(trainable_bytes, dp, link(dp, t))
        };
        let mut exposed = (reduce - backward).max(0.0);
        if p.zero >= 1 {
            exposed += 0.5 * all_reduce(trainable_bytes, shard, shard_bw);
        }
        step.data_parallel += exposed;
    } else if p.zero >= 3 {
        step.data_parallel += (cross - backward).max(0.0);
    }
    // The optimizer update: read and write the state and master weights,
    // read the gradients, write the weights, on whatever stays on the GPU.
    let breakdown = crate::detailed::memory::estimate(cfg).ok();
    if let Some(b) = breakdown {
        let bytes = 2.0 * (b.master_weights + b.optimizer_state) + b.grads + b.params;
        step.optimizer = bytes / r.bytes;
    }
    if cfg.offload.optimizer {
        // Gradients down, weights up over PCIe; Adam on the host reads and
        // writes fp32 weights and two moments and reads the gradient.
        let local = n_params / if p.zero >= 1 { shard as f64 } else { 1.0 };
        let pcie = gpu.pcie_gbps * 1e9 * eff.link;
        let host = HOST_GBPS_PER_GPU * 1e9 * eff.memory;
        let state = match cfg.optimizer {
            Optimizer::Sgd => 4.0,
            _ => 12.0,
        };
        step.offload += 4.0 * local / pcie + (2.0 * state + 4.0) * local / host;
    }
    if cfg.offload.params {
        // ZeRO-Infinity fetches each micro-batch's weights twice.
        let pcie = gpu.pcie_gbps * 1e9 * eff.link;
        step.offload += acc * ((2.0 * param_bytes / pcie) - compute).max(0.0);
    }
    if cfg.offload.activations {
        if let Some(b) = breakdown {
            let pcie = gpu.pcie_gbps * 1e9 * eff.link;
            step.offload += acc * (2.0 * b.activations / pcie - compute).max(0.0);
        }
    }
    if matches!(cfg.objective, Objective::Grpo { .. }) {
        step.generation = generation_time(cfg, &r, fwd_mm + fwd_attn + fwd_mem);
    }
    let step_s = step.total();
    let flops = step_flops(cfg);
    let gpus = cfg.gpus() as f64;
    let model = flops.model / step_s / gpus;
    let hardware = flops.hardware / step_s / gpus;
    StepTime {
        step_s,
        tokens_per_s_per_gpu: flops.tokens / step_s / gpus,
        model_tflops_per_gpu: model / 1e12,
        hardware_tflops_per_gpu: hardware / 1e12,
        mfu: model / peak,
        hfu: hardware / peak,
        parts: step,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detailed::preset;
    use crate::detailed::time::hardware::gpu;

    fn at(cfg: &DetailedConfig) -> StepTime {
        step_time(
            cfg,
            &Cluster::new(gpu("a100-80gb").unwrap(), 8),
            &Efficiency::default(),
        )
    }

    fn llama(seq: u64, batch: u64) -> DetailedConfig {
        let mut c = DetailedConfig::new(preset("llama-3.1-8b").unwrap().arch, seq, batch);
        c.attention = AttentionKernel::Flash;
        c.dropout = false;
        c
    }

    /// Recomputation costs time in the order of the work it repeats, and
    /// HFU counts it while MFU does not.
    #[test]
    fn recomputation_costs_in_order() {
        let mut c = llama(4096, 4);
        let none = at(&c);
        c.recompute = Recompute::Selective;
        let selective = at(&c);
        c.recompute = Recompute::Full;
        let full = at(&c);
        assert!(none.step_s < selective.step_s && selective.step_s < full.step_s);
        assert!(full.hfu > full.mfu && (none.hfu - none.mfu).abs() < 1e-12);
        // A full recompute is about one more forward: a third of the step.
        let extra = full.step_s / none.step_s - 1.0;
        assert!(extra > 0.25 && extra < 0.36, "{extra}");
        // torchtitan's per-operator policy under flash attention reruns k,
        // o and up (3 of Llama's 7 projections: at 8B's shape 79.7 M of a
        // layer's 218.1 M weights) and the memory-bound kernels, not the
        // attention.
        c.recompute = Recompute::SelectiveOp;
        let op = at(&c);
        assert!(none.step_s < op.step_s && op.step_s < full.step_s);
        let mm = (op.parts.matmul - none.parts.matmul) / (full.parts.matmul - none.parts.matmul);
        let weights = crate::detailed::memory::sac::recomputed_weights(&c.arch)
            / super::super::flops::layer_matmul_weights(&c.arch, false);
        assert!((weights - 79.69 / 218.1).abs() < 1e-3, "{weights}");
        assert!((mm / weights - 1.0).abs() < 0.02, "{mm} {weights}");
        assert_eq!(op.parts.attention, none.parts.attention);
        assert_eq!(op.parts.memory_bound, full.parts.memory_bound);
    }

    /// The pipeline's bubble is (p−1)/v micro-batches of the stage's work
    /// (Narayanan et al. 2021, §2.2.1–2.2.2).
    #[test]
    fn bubble_is_p_minus_one_over_v() {
        let mut c = llama(2048, 16);
        c.micro_batch = Some(1);
        c.parallel.pp = 4;
        let one = at(&c);
        c.parallel.vp = 2;
        let two = at(&c);
        let per_micro =
            (one.parts.total() - one.parts.bubble - one.parts.optimizer - one.parts.pipeline_sends)
                / 16.0;
        assert!((one.parts.bubble / per_micro - 3.0).abs() < 1e-9);
        assert!((two.parts.bubble / one.parts.bubble - 0.5).abs() < 1e-9);
    }

    /// ZB-H1 fills the bubble with the weights' gradients: about a third of
    /// 1F1B's when forward, input-gradient and weight-gradient take alike
    /// (Qi et al. 2024, §3.1), with the same peak memory.
    #[test]
    fn zero_bubble_cuts_the_bubble_not_the_memory() {
        let mut c = llama(2048, 32);
        c.arch = preset("llama-3.1-70b").unwrap().arch;
        c.micro_batch = Some(1);
        c.parallel.pp = 4;
        c.parallel.tp = 8;
        c.parallel.sp = true;
        let one = at(&c);
        c.parallel.schedule = crate::detailed::Schedule::ZbH1;
        let zb = at(&c);
        let ratio = zb.parts.bubble / one.parts.bubble;
        assert!(ratio > 0.3 && ratio < 0.5, "{ratio}");
        assert!(zb.step_s < one.step_s);
        let peak = |c: &DetailedConfig| {
            crate::detailed::memory::timeline(c, &Default::default())
                .unwrap()
                .peak_bytes()
        };
        let mut d = c;
        d.parallel.schedule = crate::detailed::Schedule::OneFOneB;
        assert_eq!(peak(&c), peak(&d));
        // Not with virtual stages.
        c.parallel.vp = 2;
        assert!(crate::detailed::estimate(&c).is_err());
    }

    /// Tensor parallelism inside a node splits the compute and adds its
    /// all-reduces; across nodes it is slower than inside.
    #[test]
    fn tensor_parallel_inside_and_across_nodes() {
        let mut c = llama(4096, 8);
        c.micro_batch = Some(1);
        let one = at(&c);
        c.parallel.tp = 8;
        let inside = at(&c);
        assert!(inside.parts.tensor_parallel > 0.0);
        assert!(inside.parts.matmul < one.parts.matmul / 6.0);
        let across = step_time(
            &c,
            &Cluster::new(gpu("a100-80gb").unwrap(), 4),
            &Efficiency::default(),
        );
        // Four members a node: four 25 GB/s NICs against 300 GB/s NVLink.
        assert!((across.parts.tensor_parallel / inside.parts.tensor_parallel - 3.0).abs() < 1e-9);
    }

    /// All-to-all context parallelism is exposed, the ring hides behind
    /// attention at long sequences; both grow with cp's exchanges, and
    /// across nodes the all-to-all is slower than inside one.
    #[test]
    fn context_parallel_exchanges() {
        use crate::detailed::CpComm;
        let mut c = llama(131072, 8);
        c.micro_batch = Some(1);
        c.parallel.cp = 8;
        let ring = at(&c);
        c.parallel.cp_comm = CpComm::A2a;
        let inside = at(&c);
        assert!(inside.parts.context_parallel > ring.parts.context_parallel);
        // Four GPUs a node: the eight-GPU exchange crosses nodes.
        let across = step_time(
            &c,
            &Cluster::new(gpu("a100-80gb").unwrap(), 4),
            &Efficiency::default(),
        );
        // Four 25 GB/s NICs against 300 GB/s NVLink.
        assert!((across.parts.context_parallel / inside.parts.context_parallel - 3.0).abs() < 1e-9);
        // The ring's fp32 merging of partial outputs is gone.
        assert!(inside.parts.memory_bound < ring.parts.memory_bound);
    }

    /// The roofline without overlap: a narrow product is slower per
    /// operation than a wide one.
    #[test]
    fn narrow_products_pay_for_their_bytes() {
        let (peak, bw) = (312e12 * 0.8, 2039e9 * 0.8);
        let wide = gemm(8192.0, 8192.0, 8192.0, peak, bw) / (8192.0f64.powi(3));
        let narrow = gemm(8192.0, 512.0, 512.0, peak, bw) / (8192.0 * 512.0 * 512.0);
        assert!(narrow > 1.2 * wide);
    }

    /// Matrix multiplies run at 0.80 of peak on the A100 and, elsewhere, at
    /// 0.80 scaled by the card's measured best fraction against the A100's;
    /// FlashAttention 1 on Hopper loses what FlashAttention-2 loses there.
    #[test]
    fn efficiencies_by_card() {
        let a100 = Efficiency::for_gpu(&gpu("a100-80gb").unwrap());
        assert_eq!(a100.matmul, 0.80);
        let h100 = gpu("h100-sxm").unwrap();
        let e = Efficiency::for_gpu(&h100);
        assert!((e.matmul - 0.80 * (794.5 / 989.0) / (271.2 / 312.0)).abs() < 1e-12);
        assert!((e.matmul - 0.739).abs() < 1e-3, "{}", e.matmul);
        let f = Efficiency::for_gpu_flash_attention_1(&h100);
        assert!((f.attention_forward - 0.21).abs() < 1e-12);
        assert!((f.attention_backward - 0.175).abs() < 1e-12);
        assert_eq!(f.matmul, e.matmul);
        let f = Efficiency::for_gpu_flash_attention_1(&gpu("a100-40gb").unwrap());
        assert_eq!((f.attention_forward, f.attention_backward), (0.30, 0.25));
        // A card no measurement lists takes the A100's.
        let l40s = Efficiency::for_gpu(&gpu("l40s").unwrap());
        assert_eq!(l40s.matmul, 0.80);
        assert!(Efficiency::for_gpu(&gpu("mi300x").unwrap()).matmul < 0.5);
    }

    /// FSDP2 copies on the compute stream, per micro-batch: each gather's
    /// output out into the weights (read and write, twice with
    /// resharding after forward) and the bf16 gradients into the fp32
    /// reduce-scatter input; the flat buffers of Megatron's ZeRO-3 copy
    /// nothing. The time is those bytes at the memory's rate.
    #[test]
    fn fsdp2_copies_in_and_out_of_its_collectives() {
        let mut c = llama(4096, 64);
        c.micro_batch = Some(1);
        c.parallel.dp = 64;
        c.parallel.zero = 3;
        c.precision = Precision::Mixed;
        let flat = at(&c);
        c.framework = crate::detailed::Framework::Fsdp2 {
            reshard_after_forward: true,
        };
        let fsdp2 = at(&c);
        let p = c.arch.params() as f64;
        let bytes = 2.0 * 2.0 * 2.0 * p + 2.0 * p + 4.0 * p;
        let rate = gpu("a100-80gb").unwrap().memory_gbps * 1e9 * 0.8;
        let extra = fsdp2.parts.memory_bound - flat.parts.memory_bound;
        assert!((extra / (bytes / rate) - 1.0).abs() < 1e-9, "{extra}");
        // Kept from forward to backward: one gather, one copy-out.
        c.framework = crate::detailed::Framework::Fsdp2 {
            reshard_after_forward: false,
        };
        let kept = at(&c).parts.memory_bound - flat.parts.memory_bound;
        assert!(
            (kept / ((bytes - 4.0 * p) / rate) - 1.0).abs() < 1e-9,
            "{kept}"
        );
    }

    /// Hybrid sharding: FSDP inside each node of 8, the nodes all-reducing
    /// their gradient shards. Over a slow network the all-reduce outlasts
    /// the backward and shows; with one shard group it is plain ZeRO-3.
    #[test]
    fn hybrid_sharding_all_reduces_across_nodes() {
        // One micro-batch per step: its backward is the step's.
        let mut c = llama(4096, 128);
        c.micro_batch = Some(1);
        c.parallel.dp = 128;
        c.parallel.zero = 3;
        let whole = at(&c);
        c.parallel.dp_shard = Some(128);
        assert_eq!(at(&c), whole);
        c.parallel.dp_shard = Some(8);
        let fast = at(&c);
        let mut slow_net = gpu("a100-80gb").unwrap();
        slow_net.inter_node_gbps = 1.0;
        let slow = step_time(&c, &Cluster::new(slow_net, 8), &Efficiency::default());
        assert_eq!(fast.parts.matmul, slow.parts.matmul);
        // 8B's 2-byte gradients over 8 shards, ring all-reduce over 16
        // nodes at 0.8 GB/s per GPU, less a backward of the model's own.
        let params = c.arch.params() as f64;
        let cross = 2.0 * 15.0 / 16.0 * (2.0 * params / 8.0) / 0.8e9;
        let compute = fast.parts.matmul + fast.parts.attention + fast.parts.memory_bound;
        let exposed = cross - compute * 2.0 / 3.0;
        assert!(exposed > 1.0, "{exposed}");
        assert!((slow.parts.data_parallel - exposed).abs() < 1e-9 * exposed);
        // The states are sharded over 8, as on 8 GPUs.
        let shard8 = crate::detailed::estimate(&c).unwrap();
        c.parallel.dp = 8;
        c.parallel.dp_shard = None;
        c.batch = 8;
        let eight = crate::detailed::estimate(&c).unwrap();
        assert_eq!(shard8.optimizer_state, eight.optimizer_state);
        assert_eq!(shard8.params, eight.params);
    }

    /// Whatever the configuration, the figures are finite and positive.
    #[test]
    fn figures_are_finite() {
        for name in ["gpt2", "llama-3.1-70b", "mixtral-8x7b", "deepseek-v3"] {
            let Some(p) = preset(name) else { continue };
            let mut c = DetailedConfig::new(p.arch, 1, 1);
            for card in super::super::hardware::GPUS.iter() {
                for gpn in [1, 8] {
                    c.parallel.dp = 2;
                    c.parallel.zero = 3;
                    let t = step_time(&c, &Cluster::new(*card, gpn), &Efficiency::default());
                    assert!(
                        t.step_s.is_finite() && t.step_s > 0.0,
                        "{name} {}",
                        card.key
                    );
                    assert!(t.mfu.is_finite() && t.mfu > 0.0 && t.mfu < 1.0);
                }
            }
        }
    }
}
