//! The command line: the lesson's printout (or JSON) for one configuration,
//! or, with any of the detailed flags, the detailed model's per-GPU budget.

use crate::budget::{estimate, Breakdown, Field, TrainingConfig};
use crate::detailed::{
    self, preset, AdamImpl, Architecture, AttentionKernel, BaseQuant, DetailedBreakdown,
    DetailedConfig, Device, ExpertsImpl, Family, LoraTargets, Objective, Optimizer, Overhead,
    OverheadBytes, Precision, Profile, Recompute, Step, StepOptions, StepTimeline,
};
use clap::Parser;

/// Prints the GPU training-memory budget. With no flags: the lesson's
/// example (7 B parameters, batch 4, sequence 2048, hidden 4096, 32 layers,
/// mixed precision). Any of the detailed flags (--model, --arch, --heads,
/// --precision, --attention, --dp, …) switches to the detailed model, per GPU.
#[derive(Parser, Debug, Default)]
#[command(name = "membudget", version, about, long_about = None, allow_negative_numbers = true)]
pub struct Args {
    /// Lesson model: size in billions of parameters (0.1–1000).
    #[arg(long, value_name = "B")]
    pub params: Option<String>,
    /// Batch size in sequences (lesson: 1–1024; detailed: the global batch).
    #[arg(long, value_name = "N")]
    pub batch: Option<String>,
    /// Sequence length in tokens (128–131072).
    #[arg(long, value_name = "TOKENS")]
    pub seq: Option<String>,
    /// Hidden size (128–65536).
    #[arg(long, value_name = "H")]
    pub hidden: Option<String>,
    /// Number of layers (1–256).
    #[arg(long, value_name = "L")]
    pub layers: Option<String>,
    /// Lesson model: train in plain fp32 instead of mixed precision.
    #[arg(long)]
    pub fp32: bool,
    /// Print JSON: {"model": "lesson"|"detailed", "bytes": {...}, "gb": {...}}.
    #[arg(long)]
    pub json: bool,

    /// Detailed: a published model (gpt2, gpt2-medium, gpt2-large, gpt2-xl,
    /// llama-2-7b/13b/70b, llama-3.1-8b/70b/405b, mistral-7b,
    /// qwen2.5-0.5b/7b/72b); shape flags given with it override its values.
    #[arg(long, value_name = "PRESET")]
    pub model: Option<String>,
    /// Detailed: a Hugging Face config.json (gpt2, llama, mistral, qwen2,
    /// qwen3, gemma2, gemma3_text, mixtral, qwen3_moe, deepseek_v3); shape
    /// flags given with it override its values.
    #[arg(long, value_name = "PATH")]
    pub config: Option<std::path::PathBuf>,
    /// Detailed: architecture family, gpt2 or llama.
    #[arg(long, value_name = "FAMILY")]
    pub arch: Option<Family>,
    /// Detailed: attention heads.
    #[arg(long)]
    pub heads: Option<u64>,
    /// Detailed: key/value heads (grouped-query attention; default: heads).
    #[arg(long)]
    pub kv_heads: Option<u64>,
    /// Detailed: MLP inner size (default 4·hidden for gpt2; required for llama).
    #[arg(long)]
    pub ffn: Option<u64>,
    /// Detailed: vocabulary size (default 50257 for gpt2, 32000 for llama).
    #[arg(long)]
    pub vocab: Option<u64>,
    /// Detailed: mixed (bf16 + fp32 master, default), bf16, or fp32.
    #[arg(long)]
    pub precision: Option<Precision>,
    /// Detailed: keep gradients in fp32 (some frameworks do under mixed precision).
    #[arg(long)]
    pub grad_fp32: bool,
    /// Detailed: adamw (default), sgd, sgd-momentum, adam8bit.
    #[arg(long)]
    pub optimizer: Option<Optimizer>,
    /// Detailed: eager (keeps the a·s² scores, default) or flash.
    #[arg(long)]
    pub attention: Option<AttentionKernel>,
    /// Detailed: the model uses dropout (masks are kept for backward).
    #[arg(long)]
    pub dropout: bool,
    /// Detailed: activation recomputation none (default), selective, full.
    #[arg(long)]
    pub recompute: Option<Recompute>,
    /// Detailed: kernels, fused (Megatron, default) or hf (stock transformers).
    #[arg(long = "impl", value_name = "IMPL")]
    pub implementation: Option<Profile>,
    /// Detailed: cuda (default) or cpu; changes dropout masks and SDPA in "hf".
    #[arg(long)]
    pub device: Option<Device>,
    /// Detailed: data-parallel GPUs.
    #[arg(long)]
    pub dp: Option<u64>,
    /// Detailed: ZeRO stage 0–3 across the data-parallel GPUs.
    #[arg(long)]
    pub zero: Option<u8>,
    /// Detailed: tensor-parallel degree.
    #[arg(long)]
    pub tp: Option<u64>,
    /// Detailed: sequence parallelism (with --tp).
    #[arg(long)]
    pub sp: bool,
    /// Detailed: pipeline stages (1F1B).
    #[arg(long)]
    pub pp: Option<u64>,
    /// Detailed, mixture of experts: expert-parallel GPUs (routed experts
    /// divided by ep × etp; ep × etp must divide dp × tp).
    #[arg(long)]
    pub ep: Option<u64>,
    /// Detailed, mixture of experts: expert tensor-parallel degree.
    #[arg(long)]
    pub etp: Option<u64>,
    /// Detailed, mixture of experts, "hf" kernels: grouped (transformers'
    /// default grouped matmul) or loop (one expert at a time).
    #[arg(long, value_name = "IMPL")]
    pub experts_impl: Option<ExpertsImpl>,
    /// Detailed, LoRA: the frozen base quantized by bitsandbytes, none
    /// (default), nf4 (QLoRA, double quantization), nf4-nodq or int8.
    #[arg(long, value_name = "FORMAT")]
    pub quant_base: Option<BaseQuant>,
    /// Detailed, with ZeRO: optimizer state, fp32 master and gradients on
    /// the CPU (ZeRO-Offload).
    #[arg(long)]
    pub offload_optimizer: bool,
    /// Detailed, with ZeRO-3 and --offload-optimizer: the 16-bit parameters
    /// on the CPU too.
    #[arg(long)]
    pub offload_params: bool,
    /// Detailed: saved activations on the CPU (save_on_cpu, CPU checkpointing).
    #[arg(long)]
    pub offload_activations: bool,
    /// Detailed, with offload: GPUs per node, for the host RAM per node (default 8).
    #[arg(long, value_name = "N")]
    pub gpus_per_node: Option<u64>,
    /// Detailed: training objective, sft (default), dpo (a frozen reference
    /// on the GPUs; with LoRA the base is the reference) or
    /// dpo-precomputed (reference log-probabilities computed beforehand).
    #[arg(long)]
    pub objective: Option<Objective>,
    /// Detailed, mixture of experts, "fused" kernels: Megatron's expert
    /// capacity factor with padding (default: dropless).
    #[arg(long, value_name = "C")]
    pub capacity_factor: Option<f64>,
    /// Detailed: sequences per GPU per forward pass (default batch / dp).
    #[arg(long)]
    pub micro_batch: Option<u64>,
    /// Detailed: LoRA rank; the base model is frozen.
    #[arg(long)]
    pub lora_rank: Option<u64>,
    /// Detailed: projections LoRA adapts, e.g. q,v (default) or q,k,v,o,gate,up,down or all.
    #[arg(long, value_name = "LIST")]
    pub lora_targets: Option<LoraTargets>,
    /// Detailed: model the first optimizer step (which creates the optimizer
    /// state) instead of a later one, for the peak.
    #[arg(long)]
    pub first_step: bool,
    /// Detailed: AdamW's implementation for the peak: loop (per parameter),
    /// foreach, or fused (default: fused kernels for --impl fused, foreach
    /// for hf on cuda, loop for hf on cpu).
    #[arg(long, value_name = "IMPL")]
    pub adam: Option<AdamImpl>,
    /// Detailed: add the runtime overhead (CUDA context, workspaces,
    /// communication buffers, fragmentation) beside the peak, with the
    /// defaults below unless given.
    #[arg(long)]
    pub overhead: bool,
    /// Detailed: CUDA context in GB (default 0.758, with --overhead).
    #[arg(long, value_name = "GB")]
    pub cuda_context: Option<f64>,
    /// Detailed: library workspaces in GB (default 0.067, with --overhead).
    #[arg(long, value_name = "GB")]
    pub workspaces: Option<f64>,
    /// Detailed: communication buffers per parallel group in GB (default
    /// 0.268, with --overhead).
    #[arg(long, value_name = "GB")]
    pub comm_buffers: Option<f64>,
    /// Detailed: allocator fragmentation in percent of the peak (default 15,
    /// with --overhead).
    #[arg(long, value_name = "PERCENT")]
    pub fragmentation: Option<f64>,
}

/// What the command found wrong.
pub type CliError = String;

impl Args {
    /// Whether any flag of the detailed model was given.
    pub fn is_detailed(&self) -> bool {
        self.model.is_some()
            || self.config.is_some()
            || self.arch.is_some()
            || self.heads.is_some()
            || self.kv_heads.is_some()
            || self.ffn.is_some()
            || self.vocab.is_some()
            || self.precision.is_some()
            || self.grad_fp32
            || self.optimizer.is_some()
            || self.attention.is_some()
            || self.dropout
            || self.recompute.is_some()
            || self.implementation.is_some()
            || self.device.is_some()
            || self.dp.is_some()
            || self.zero.is_some()
            || self.tp.is_some()
            || self.sp
            || self.pp.is_some()
            || self.ep.is_some()
            || self.etp.is_some()
            || self.experts_impl.is_some()
            || self.capacity_factor.is_some()
            || self.quant_base.is_some()
            || self.offload_optimizer
            || self.offload_params
            || self.offload_activations
            || self.gpus_per_node.is_some()
            || self.objective.is_some()
            || self.micro_batch.is_some()
            || self.lora_rank.is_some()
            || self.lora_targets.is_some()
            || self.first_step
            || self.adam.is_some()
            || self.with_overhead()
    }

    /// Whether any runtime overhead flag was given.
    fn with_overhead(&self) -> bool {
        self.overhead
            || self.cuda_context.is_some()
            || self.workspaces.is_some()
            || self.comm_buffers.is_some()
            || self.fragmentation.is_some()
    }

    /// The runtime overhead these flags ask for, if any, checked.
    pub fn overhead_settings(&self) -> Result<Option<Overhead>, CliError> {
        if !self.with_overhead() {
            return Ok(None);
        }
        let d = Overhead::default();
        let o = Overhead {
            cuda_context_gb: self.cuda_context.unwrap_or(d.cuda_context_gb),
            workspaces_gb: self.workspaces.unwrap_or(d.workspaces_gb),
            communication_gb: self.comm_buffers.unwrap_or(d.communication_gb),
            fragmentation_percent: self.fragmentation.unwrap_or(d.fragmentation_percent),
        };
        if !o.is_valid() {
            return Err(format!(
                "overhead sizes must be numbers from 0 to {} GB and the fragmentation from 0 to {} %",
                Overhead::MAX_GB,
                Overhead::MAX_PERCENT
            ));
        }
        Ok(Some(o))
    }

    /// What the step timeline models beyond the configuration.
    pub fn step_options(&self) -> StepOptions {
        StepOptions {
            step: if self.first_step {
                Step::First
            } else {
                Step::Later
            },
            adam: self.adam,
        }
    }

    /// The lesson configuration these flags describe.
    pub fn config(&self) -> Result<TrainingConfig, CliError> {
        let mut cfg = TrainingConfig {
            mixed_precision: !self.fp32,
            ..TrainingConfig::default()
        };
        for (field, text) in [
            (Field::ModelSize, &self.params),
            (Field::Batch, &self.batch),
            (Field::SeqLen, &self.seq),
            (Field::Hidden, &self.hidden),
            (Field::Layers, &self.layers),
        ] {
            if let Some(text) = text {
                let v = field.parse(text).map_err(|e| e.to_string())?;
                cfg = cfg.with(field, v).map_err(|e| e.to_string())?;
            }
        }
        Ok(cfg)
    }

    /// The detailed configuration these flags describe.
    pub fn detailed_config(&self) -> Result<DetailedConfig, CliError> {
        if self.params.is_some() {
            return Err("--params is the lesson model's; the detailed model counts parameters from the architecture".into());
        }
        if self.fp32 {
            return Err("use --precision fp32 with the detailed model".into());
        }
        // Sizes in the detailed model use the lesson's ranges and messages.
        let size = |field: Field, text: &Option<String>| -> Result<Option<u64>, CliError> {
            text.as_deref()
                .map(|t| field.parse(t).map(|v| v as u64).map_err(|e| e.to_string()))
                .transpose()
        };
        let layers = size(Field::Layers, &self.layers)?;
        let hidden = size(Field::Hidden, &self.hidden)?;
        let seq = size(Field::SeqLen, &self.seq)?.unwrap_or(2048);
        let batch = match self.batch.as_deref() {
            None => 1,
            Some(t) => t
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|&b| (1..=1 << 20).contains(&b))
                .ok_or_else(|| {
                    format!(
                        "Batch size must be a whole number from 1 to {} (got {t})",
                        1 << 20
                    )
                })?,
        };

        let mut arch = match (&self.model, self.arch) {
            (None, _) if self.config.is_some() => {
                let path = self.config.as_ref().expect("checked");
                let json = std::fs::read_to_string(path)
                    .map_err(|e| format!("--config {}: {e}", path.display()))?;
                detailed::import_config(&json)
                    .map_err(|e| format!("--config {}: {e}", path.display()))?
                    .arch
            }
            (Some(_), _) if self.config.is_some() => {
                return Err("give --model or --config, not both".into())
            }
            (Some(name), _) => preset(name).map(|p| p.arch).ok_or_else(|| {
                let names: Vec<&str> = detailed::PRESETS.iter().map(|p| p.name).collect();
                format!("unknown model '{name}'; known: {}", names.join(", "))
            })?,
            (None, Some(family)) => {
                let (l, h) = (
                    layers.ok_or("--layers is required with --arch")?,
                    hidden.ok_or("--hidden is required with --arch")?,
                );
                let heads = self.heads.ok_or("--heads is required with --arch")?;
                match family {
                    Family::Gpt2 => Architecture::gpt2(l, h, heads, self.vocab.unwrap_or(50257)),
                    Family::Llama => Architecture::llama(
                        l,
                        h,
                        heads,
                        self.kv_heads.unwrap_or(heads),
                        self.ffn.ok_or("--ffn is required with --arch llama")?,
                        self.vocab.unwrap_or(32000),
                    ),
                }
            }
            (None, None) => {
                return Err("the detailed model needs --model PRESET or --arch gpt2|llama".into())
            }
        };
        // Shape flags override a preset.
        if let Some(l) = layers {
            arch.layers = l;
        }
        if let Some(h) = hidden {
            arch.hidden = h;
            if arch.family == Family::Gpt2 && self.ffn.is_none() {
                arch.ffn = 4 * h;
            }
        }
        if let Some(v) = self.heads {
            // GPT-2 has no grouped-query attention; an MHA preset stays MHA.
            if arch.family == Family::Gpt2 || arch.kv_heads == arch.heads {
                arch.kv_heads = v;
            }
            arch.heads = v;
        }
        if let Some(v) = self.kv_heads {
            arch.kv_heads = v;
        }
        if let Some(v) = self.ffn {
            arch.ffn = v;
        }
        if let Some(v) = self.vocab {
            arch.vocab = v;
        }

        let mut cfg = DetailedConfig::new(arch, seq, batch);
        cfg.micro_batch = self.micro_batch;
        cfg.precision = self.precision.unwrap_or(Precision::Mixed);
        cfg.fp32_grads = self.grad_fp32;
        cfg.optimizer = self.optimizer.unwrap_or(Optimizer::AdamW);
        cfg.attention = self.attention.unwrap_or(AttentionKernel::Eager);
        cfg.dropout = self.dropout;
        cfg.recompute = self.recompute.unwrap_or(Recompute::None);
        cfg.profile = self.implementation.unwrap_or(Profile::Fused);
        cfg.device = self.device.unwrap_or(Device::Cuda);
        cfg.parallel.dp = self.dp.unwrap_or(1);
        cfg.parallel.zero = self.zero.unwrap_or(0);
        cfg.parallel.tp = self.tp.unwrap_or(1);
        cfg.parallel.sp = self.sp;
        cfg.parallel.pp = self.pp.unwrap_or(1);
        cfg.parallel.ep = self.ep.unwrap_or(1);
        cfg.parallel.etp = self.etp.unwrap_or(1);
        if let Some(i) = self.experts_impl {
            cfg.experts_impl = i;
        }
        cfg.capacity_factor = self.capacity_factor;
        if let Some(q) = self.quant_base {
            cfg.base_quant = q;
        }
        cfg.offload.optimizer = self.offload_optimizer;
        cfg.offload.params = self.offload_params;
        cfg.offload.activations = self.offload_activations;
        if let Some(n) = self.gpus_per_node {
            cfg.offload.gpus_per_node = n;
        }
        if let Some(o) = self.objective {
            cfg.objective = o;
        }
        cfg.lora_rank = self.lora_rank;
        if let Some(t) = self.lora_targets {
            if self.lora_rank.is_none() {
                return Err("--lora-targets needs --lora-rank".into());
            }
            cfg.lora_targets = t;
        }
        if cfg.micro_batch.is_none()
            && cfg.parallel.dp > 0
            && !batch.is_multiple_of(cfg.parallel.dp)
        {
            return Err("batch must be a multiple of --dp".into());
        }
        Ok(cfg)
    }
}

/// The lesson's six lines, then the dominant term and its share.
pub fn render_text(b: &Breakdown) -> String {
    b.lesson_table() + &dominant_line(b)
}

/// `dominant: activations_gb (73.0 of 185.0 GB, 39 %)`.
fn dominant_line(b: &Breakdown) -> String {
    let d = b.dominant();
    format!(
        "dominant: {} ({:.1} of {:.1} GB, {:.0} %)\n",
        d.lesson_key(),
        b.gb(d),
        b.total_gb(),
        b.share(d) * 100.0
    )
}

/// A description line, the lesson's layout of rows (logits indented under
/// activations), the dominant term, and the peak of one step with its phase
/// and event.
pub fn render_detailed(
    cfg: &DetailedConfig,
    b: &DetailedBreakdown,
    t: &StepTimeline,
    overhead: Option<&OverheadBytes>,
) -> String {
    let a = &cfg.arch;
    let p = &cfg.parallel;
    let mut out = format!(
        "# detailed, per GPU: {} L{} h{} a{} kv{} ffn{} V{}, {} parameters; seq {}, micro-batch {}; \
         {}, {}, {} attention{}, recompute {}, {} kernels; dp {} (ZeRO {}), tp {}{}, pp {}{}\n",
        a.family.name(),
        a.layers,
        a.hidden,
        a.heads,
        a.kv_heads,
        a.ffn,
        a.vocab,
        a.params(),
        cfg.seq,
        cfg.micro(),
        cfg.precision.name(),
        cfg.optimizer.name(),
        cfg.attention.name(),
        if cfg.dropout { ", dropout" } else { "" },
        cfg.recompute.name(),
        cfg.profile.name(),
        p.dp,
        p.zero,
        p.tp,
        if p.sp { " with SP" } else { "" },
        p.pp,
        cfg.lora_rank.map_or(String::new(), |r| format!(", LoRA rank {r} on {}", cfg.lora_targets.names())),
    );
    for (key, bytes) in crate::export::detailed_figures(b) {
        let label = match key {
            "logits" => "  of which logits_gb".to_string(),
            _ => format!("{key}_gb"),
        };
        out += &format!("{label:20} {:8.1} GB\n", bytes / 1e9);
    }
    if let Some(m) = a.moe {
        out = out.replacen(
            "\n",
            &format!(
                "\n# experts: {} routed (top-{}, width {}), shared width {}, {} dense layers first; \
                 {} active parameters per token; ep {}, etp {}\n",
                m.experts,
                m.top_k,
                m.expert_ffn,
                m.shared_ffn,
                m.first_dense,
                a.active_params(),
                p.ep,
                p.etp
            ),
            1,
        );
    }
    out += &dominant_line(&b.terms());
    let peak = t.peak_event();
    out += &format!("{:20} {:8.1} GB\n", "peak_gb", t.peak_bytes() / 1e9);
    out += &format!(
        "peak: {} phase, {}{} ({} step; {:+.0} % of total_gb)\n",
        peak.phase.name(),
        peak.moment.label(),
        if peak.micro_batch > 1 {
            ", a later micro-batch"
        } else {
            ""
        },
        if t.first_step { "first" } else { "later" },
        (t.peak_bytes() / b.total - 1.0) * 100.0
    );
    if let Some(h) = detailed::host_ram(cfg) {
        out += &format!(
            "{:20} {:8.1} GB per node of {} GPUs (offloaded states {:.1}, activations {:.1}, start-up load {:.1}; × {} for pinned buffers)\n",
            "host_ram_gb",
            h.total() / 1e9,
            cfg.offload.gpus_per_node,
            h.states / 1e9,
            h.activations / 1e9,
            h.load / 1e9,
            detailed::offload::BUFFER_FACTOR,
        );
    }
    if let Some(o) = overhead {
        out += &format!(
            "{:20} {:8.1} GB (CUDA context {:.2}, workspaces {:.2}, communication {:.2}, fragmentation {:.2})\n",
            "overhead_gb",
            o.total() / 1e9,
            o.cuda_context / 1e9,
            o.workspaces / 1e9,
            o.communication / 1e9,
            o.fragmentation / 1e9,
        );
        out += &format!(
            "{:20} {:8.1} GB\n",
            "peak_with_overhead_gb",
            (t.peak_bytes() + o.total()) / 1e9
        );
    }
    out
}

/// Runs the command for parsed flags: the text to print, or the error.
pub fn run(args: &Args) -> Result<String, CliError> {
    if args.is_detailed() {
        let cfg = args.detailed_config()?;
        let b = detailed::estimate(&cfg).map_err(|e| e.to_string())?;
        let t = detailed::timeline(&cfg, &args.step_options()).map_err(|e| e.to_string())?;
        let overhead = args
            .overhead_settings()?
            .map(|o| o.bytes(&cfg, t.peak_bytes()));
        return Ok(if args.json {
            let host = detailed::host_ram(&cfg);
            crate::export::detailed_json_with_timeline(&b, &t, overhead.as_ref(), host.as_ref())
        } else {
            render_detailed(&cfg, &b, &t, overhead.as_ref())
        });
    }
    let b = estimate(&args.config()?).map_err(|e| e.to_string())?;
    Ok(if args.json {
        crate::export::to_json(&b)
    } else {
        render_text(&b)
    })
}
