//! Model states: weights, gradients, the fp32 master copy and the optimizer's
//! state, per GPU, and the per-value byte widths the step timeline reuses.
//!
//! Per GPU they follow Rajbhandari et al. 2020 ("ZeRO", §5.1, Fig. 1):
//! weights, gradients and optimizer state (with the fp32 master copy, K = 12
//! for mixed-precision Adam) divided by N_d from stages 3, 2 and 1 on; tensor
//! and pipeline parallelism split the model first (Shoeybi et al. 2019;
//! Narayanan et al. 2021).
//!
//! Mixture of experts (the rule of Megatron-LM's memory estimator after its
//! MoE fix, `megatron/training/theoretical_memory_usage.py`, and of its
//! parallel layout): routed experts are divided by ep · etp, never by tp;
//! attention, dense MLPs, shared experts, embeddings and the output layer by
//! tp; norms and the router by neither (every tensor-parallel rank keeps
//! them whole); all by pp. ZeRO then divides the expert part by the
//! expert-data-parallel group dp·tp / (ep·etp) and the rest by dp.

use super::quant;
use crate::detailed::config::{DetailedConfig, LoraDtype, Optimizer, Precision, Profile};

/// Bytes of the model states on one GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ModelStates {
    /// Weights (the frozen base and LoRA's adapters included).
    pub params: f64,
    /// Gradients of what is trained.
    pub grads: f64,
    /// fp32 master weights (mixed precision).
    pub master_weights: f64,
    /// Optimizer state.
    pub optimizer_state: f64,
}

/// PEFT's LoRA (the "hf" profile): adapters are kept in fp32 whatever the
/// model's dtype (`LoraConfig`'s `autocast_adapter_dtype=True`), so they,
/// their gradients and their optimizer state are fp32, with no separate
/// master copy. Checked against `tests/fixtures/lora_measured.tsv`.
pub(crate) fn peft(cfg: &DetailedConfig) -> bool {
    cfg.profile == Profile::Hf && cfg.lora_rank.is_some()
}

/// LoRA under the "hf" profile with its adapters in fp32 (PEFT's default,
/// [`LoraDtype::Fp32`]); with [`LoraDtype::Bf16`] (torchtune's `LoRALinear`,
/// litgpt) they, their gradients and AdamW's moments are in the weights'
/// 16-bit dtype instead (`torch.optim.AdamW`: `zeros_like`). Measured,
/// `tests/fixtures/lora_variants_measured.tsv`.
pub(crate) fn fp32_adapters(cfg: &DetailedConfig) -> bool {
    peft(cfg) && (cfg.lora_dtype == LoraDtype::Fp32 || cfg.precision == Precision::Fp32)
}

/// Bytes per weight: 4 in fp32, 2 otherwise.
pub(crate) fn weight_bytes(cfg: &DetailedConfig) -> f64 {
    if cfg.precision == Precision::Fp32 {
        4.0
    } else {
        2.0
    }
}

/// The frozen base of a LoRA run per GPU before ZeRO/FSDP divides it, and
/// what stays whole on every rank: a quantized base as its path stores it
/// ([`quant::quantized_base_on`]); under FSDP-QLoRA the quantization state
/// is not flattened into FSDP's shards ([`quant::quant_state_bytes`]).
fn frozen_base(cfg: &DetailedConfig, weights: f64, wb: f64, split: f64) -> (f64, f64) {
    use crate::detailed::config::QuantPath;
    let Some((quantized, rest)) =
        quant::quantized_base_on(&cfg.arch, cfg.base_quant, cfg.quant_path, wb as u64)
    else {
        return (weights * wb, 0.0);
    };
    let all = (quantized + rest) as f64 / split;
    if cfg.quant_path == QuantPath::FsdpQlora && cfg.parallel.zero_divisor(3) > 1.0 {
        let state = quant::quant_state_bytes(&cfg.arch, cfg.base_quant) as f64 / split;
        (all - state, state)
    } else {
        (all, 0.0)
    }
}

/// Copies of the gradients on a GPU: two under DDP without
/// `gradient_as_bucket_view` (the reducer's buckets and `param.grad`), else
/// one.
pub(crate) fn ddp_copies(cfg: &DetailedConfig) -> f64 {
    match cfg.framework {
        crate::detailed::config::Framework::Ddp { bucket_view: false } => 2.0,
        _ => 1.0,
    }
}

/// FSDP2 under mixed precision: a `MixedPrecisionPolicy(param_dtype=bf16,
/// reduce_dtype=fp32)` over an fp32 model (`torch/distributed/fsdp/
/// _fully_shard/_fsdp_api.py`). The sharded parameters stay fp32 and are
/// what the optimizer updates (no separate master copy); each all-gather
/// casts them to bf16, so forward and backward run in bf16; the unsharded
/// bf16 gradients are cast to fp32 to be reduce-scattered into fp32 sharded
/// gradients (`_fsdp_collectives.py`, `foreach_reduce`). Measured,
/// `tests/fixtures/fsdp2_mp_measured.tsv`.
pub(crate) fn fsdp2_policy(cfg: &DetailedConfig) -> bool {
    matches!(
        cfg.framework,
        crate::detailed::config::Framework::Fsdp2 { .. }
    ) && cfg.precision == Precision::Mixed
        && !peft(cfg)
}

/// The ZeRO stage from which the gradients kept for the optimizer are
/// partitioned: 2, or 1 under DeepSpeed, whose stage 1 also keeps only its
/// partition of them (`grads_in_partition`, `stage_1_and_2.py`); how
/// backward reaches it is [`whole_grads_in_backward`].
pub(crate) fn grad_stage(cfg: &DetailedConfig) -> u8 {
    if matches!(
        cfg.framework,
        crate::detailed::config::Framework::DeepSpeed { .. }
    ) {
        1
    } else {
        2
    }
}

/// DeepSpeed's flat gradient buckets (`ipg_buckets`): `reduce_bucket_size`
/// values in the weights' dtype, twice under stages 1 and 2 with
/// `overlap_comm` (`stage_1_and_2.py`, `setup_buckets`: "double buffers to
/// avoid data access conflict"; stage 3 keeps one, `stage3.py`), 0 under
/// other frameworks.
pub(crate) fn deepspeed_bucket(cfg: &DetailedConfig) -> f64 {
    match cfg.framework {
        crate::detailed::config::Framework::DeepSpeed {
            reduce_bucket_size, ..
        } => {
            let zero = cfg.parallel.zero;
            let buffers = if zero < 3 && cfg.framework.overlap_comm(zero) {
                2.0
            } else {
                1.0
            };
            buffers * reduce_bucket_size as f64 * weight_bytes(cfg)
        }
        _ => 0.0,
    }
}

/// DeepSpeed's ZeRO-1 without `overlap_comm` keeps every whole gradient
/// through backward: its gradient hooks reduce only `if
/// self.partition_gradients or self.overlap_comm` (`stage_1_and_2.py`
/// 0.19.8, `process_gradients`), so the reduction runs after autograd, in
/// `reduce_gradients`, from the engine's `allreduce_gradients`.
pub(crate) fn whole_grads_in_backward(cfg: &DetailedConfig) -> bool {
    matches!(
        cfg.framework,
        crate::detailed::config::Framework::DeepSpeed { .. }
    ) && cfg.parallel.zero == 1
        && !cfg.framework.overlap_comm(1)
}

/// Bytes per value of the gradients kept between steps: 4 in fp32, with
/// fp32 gradients or as FSDP2's mixed-precision policy reduces them, 2
/// otherwise. (Under that policy backward computes them in bf16 first.)
pub(crate) fn grad_bytes(cfg: &DetailedConfig) -> f64 {
    if cfg.precision == Precision::Fp32 || cfg.fp32_grads || fp32_adapters(cfg) || fsdp2_policy(cfg)
    {
        4.0
    } else {
        2.0
    }
}

/// Bytes per value of the tensors the optimizer updates: the fp32 master
/// under mixed precision, else the weights themselves.
pub(crate) fn update_bytes(cfg: &DetailedConfig) -> f64 {
    if (cfg.precision == Precision::Bf16 && !peft(cfg)) || (peft(cfg) && !fp32_adapters(cfg)) {
        2.0
    } else {
        4.0
    }
}

/// Values (not bytes) of optimizer state for the whole model, for the
/// optimizers whose state is not a whole number of values per parameter:
/// Muon keeps one momentum per value of the layers' matrices and AdamW's two
/// moments for the rest (`torch.optim.Muon`, `_single_tensor_muon`:
/// `momentum_buffer`); Adafactor a row and a column vector per matrix and
/// the whole variance of a vector (`torch.optim.Adafactor`: `row_var`,
/// `col_var`, `variance`). Measured to the byte
/// (`tests/fixtures/measure_optimizers.py`). `None` where the matrices are
/// not enumerated (experts, latent attention).
pub(crate) fn state_values(cfg: &DetailedConfig) -> Option<f64> {
    let a = &cfg.arch;
    let per_layer = a.layer_matrices()?;
    let layers = a.layers as f64;
    let hidden: f64 = per_layer.iter().map(|(r, c)| (r * c) as f64).sum::<f64>() * layers;
    let params = a.params() as f64;
    match cfg.optimizer {
        Optimizer::Muon => Some(hidden + 2.0 * (params - hidden)),
        Optimizer::Adafactor => {
            let outer = a.outer_matrices();
            let matrices = hidden + outer.iter().map(|(r, c)| (r * c) as f64).sum::<f64>();
            let factored = per_layer.iter().map(|(r, c)| (r + c) as f64).sum::<f64>() * layers
                + outer.iter().map(|(r, c)| (r + c) as f64).sum::<f64>();
            Some(factored + (params - matrices))
        }
        _ => None,
    }
}

/// Router weights the stock-`transformers` profile keeps in fp32 in a
/// pure 16-bit model (values, whole model): DeepSeek-V3's `gate.weight`,
/// E × h per MoE layer (`DeepseekV3PreTrainedModel._keep_in_fp32_modules_strict`;
/// measured in `tests/fixtures/moe_measured.tsv`'s bf16 rows). None
/// otherwise (other routers follow the model's dtype; with LoRA the router
/// is frozen and stored as loaded, not modelled here).
pub(crate) fn router_values_fp32(cfg: &DetailedConfig) -> f64 {
    match cfg.arch.moe {
        Some(m)
            if m.router == crate::detailed::model::Router::DeepSeek
                && cfg.profile == Profile::Hf
                && cfg.precision == Precision::Bf16
                && cfg.lora_rank.is_none() =>
        {
            (m.experts * cfg.arch.hidden * cfg.arch.moe_layers()) as f64
        }
        _ => 0.0,
    }
}

/// Optimizer-state bytes per trained parameter.
///
/// AdamW keeps two moments (Loshchilov & Hutter 2019), in the parameters'
/// dtype in PyTorch (`torch.optim.AdamW` creates them with `zeros_like`), so
/// in bf16 under pure bf16 and fp32 otherwise; SGD with momentum one buffer;
/// 8-bit Adam two 1-byte moments plus an fp32 absmax per 2048-value block
/// each (Dettmers et al. 2022, §2).
fn state_bytes(cfg: &DetailedConfig) -> f64 {
    let precision = if fp32_adapters(cfg) {
        Precision::Fp32
    } else if peft(cfg) {
        Precision::Bf16
    } else {
        cfg.precision
    };
    match (cfg.optimizer, precision) {
        (Optimizer::AdamW, Precision::Bf16) => 4.0,
        (Optimizer::AdamW, _) => 8.0,
        (Optimizer::Sgd, _) => 0.0,
        (Optimizer::SgdMomentum, Precision::Bf16) => 2.0,
        (Optimizer::SgdMomentum, _) => 4.0,
        (Optimizer::Adam8bit | Optimizer::PagedAdam8bit, _) => 2.0 + 2.0 * 4.0 / 2048.0,
        // bitsandbytes' 32-bit optimizers keep fp32 state whatever the
        // parameters' dtype (`Optimizer2State`, `state1`/`state2` float32).
        (Optimizer::PagedAdamW, _) => 8.0,
        // One moment in the parameters' (or the master's) dtype:
        // `lion-pytorch`'s `exp_avg = torch.zeros_like(p)`.
        (Optimizer::Lion, Precision::Bf16) => 2.0,
        (Optimizer::Lion, _) => 4.0,
        (Optimizer::Muon | Optimizer::Adafactor, p) => {
            let dtype = if p == Precision::Bf16 { 2.0 } else { 4.0 };
            dtype * state_values(cfg).unwrap_or(0.0) / cfg.arch.params() as f64
        }
    }
}

/// Parameters that are trained: LoRA's adapters, or the whole model.
pub(crate) fn trained_params(cfg: &DetailedConfig) -> f64 {
    match cfg.lora_rank {
        Some(r) => cfg.arch.lora_params(r, cfg.lora_targets) as f64,
        None => cfg.arch.params() as f64,
    }
}

/// Tensors that are trained (PyTorch's AdamW keeps a 0-d fp32 `step` for
/// each, `torch/optim/adamw.py`, `_init_group`).
pub(crate) fn trained_tensors(cfg: &DetailedConfig) -> u64 {
    match cfg.lora_rank {
        Some(_) => {
            let t = cfg.lora_targets;
            2 * t.count() * cfg.arch.layers + 2 * u64::from(t.lm_head()) + 2 * u64::from(t.embed())
        }
        None => cfg.arch.param_tensors(),
    }
}

/// PyTorch's per-tensor fp32 `step` counters the optimizer keeps: AdamW's
/// and Adafactor's for every trained tensor, Muon's AdamW part's for the
/// tensors outside the layers' matrices (Muon keeps none), under the
/// stock-`transformers` profile.
pub(crate) fn step_tensor_count(cfg: &DetailedConfig) -> u64 {
    if cfg.profile != Profile::Hf {
        return 0;
    }
    match cfg.optimizer {
        Optimizer::AdamW | Optimizer::Adafactor => trained_tensors(cfg),
        Optimizer::Muon => {
            let matrices = cfg.arch.layer_matrices().map_or(0, |m| m.len() as u64);
            trained_tensors(cfg) - matrices * cfg.arch.layers
        }
        _ => 0,
    }
}

/// Parameters on one GPU before ZeRO: (outside the routed experts, routed
/// experts), as the module docs' rule splits them.
pub(crate) fn params_per_gpu(cfg: &DetailedConfig) -> (f64, f64) {
    let a = &cfg.arch;
    let par = &cfg.parallel;
    let (tp, pp) = (par.tp as f64, par.pp as f64);
    let layers = a.layers_param_split();
    let split = a.embedding_params() as f64 / embedding_divisor(cfg)
        + a.head_params() as f64 / par.head_divisor()
        + layers.dense as f64 / tp;
    let whole = (layers.replicated + a.final_norm_params()) as f64;
    let experts = layers.experts as f64 / (par.ep * par.etp) as f64;
    ((split + whole) / pp, experts / pp)
}

/// The model states on one GPU for `cfg` (checked), what is offloaded
/// ([`super::offload`]) left out.
pub(crate) fn model_states(cfg: &DetailedConfig) -> ModelStates {
    model_states_on_gpu(cfg, true)
}

/// The model states on one GPU; `offload`: leave out what is offloaded.
///
/// A quantized base ([`super::quant`]) stores its projections in
/// bitsandbytes' format and the rest in fp32 (PEFT's
/// `prepare_model_for_kbit_training`). DPO with a reference model keeps a
/// frozen copy of the weights in their 16-bit precision beside the policy
/// (TRL's `ref_model`, prepared with the policy's ZeRO-3 partitioning, or
/// replicated under stages 0–2; `DPOTrainer._prepare_deepspeed`); with LoRA
/// the reference is the base with the adapters disabled, nothing more.
pub(crate) fn model_states_on_gpu(cfg: &DetailedConfig, offload: bool) -> ModelStates {
    let par = &cfg.parallel;
    let (base, experts) = params_per_gpu(cfg);
    let deepspeed = matches!(
        cfg.framework,
        crate::detailed::config::Framework::DeepSpeed { .. }
    );
    let master_bytes =
        if (cfg.precision == Precision::Mixed || deepspeed) && !peft(cfg) && !fsdp2_policy(cfg) {
            4.0
        } else {
            0.0
        };
    let split = (par.tp * par.pp) as f64;
    let step_tensors = 4.0 * step_tensor_count(cfg) as f64 / split;
    // A state `bytes` per value, partitioned by ZeRO from `stage` on.
    let state = |bytes: f64, stage: u8| match cfg.lora_rank {
        Some(_) => trained_params(cfg) / split * bytes / par.zero_divisor(stage),
        None => {
            base * bytes / par.zero_divisor(stage)
                + experts * bytes / par.expert_zero_divisor(stage)
        }
    };
    let wb = weight_bytes(cfg);
    let (frozen, replicated) = frozen_base(cfg, base + experts, wb, split);
    let reference = if cfg.objective.reference_model() && cfg.lora_rank.is_none() {
        (base + experts) * wb
    } else {
        0.0
    };
    let adapter_bytes = if fp32_adapters(cfg) { 4.0 } else { wb };
    let params = match cfg.lora_rank {
        // The frozen base is partitioned by ZeRO-3 like any weight.
        Some(_) => frozen / par.zero_divisor(3) + replicated + state(adapter_bytes, 3),
        // FSDP2's policy keeps the fp32 shards (its all-gathers are bf16).
        None if fsdp2_policy(cfg) => state(4.0, 3),
        None => state(wb, 3),
    } + reference / par.zero_divisor(3);
    // DeepSeek-V3's router weight stays fp32 in a 16-bit model as
    // `transformers` loads it (`_keep_in_fp32_modules_strict`: `gate.weight`),
    // so its gradient and AdamW's moments of it are fp32 too.
    let router = router_values_fp32(cfg) / (par.pp as f64);
    // AdamW's moments of an fp32 weight are fp32 (`zeros_like`).
    let router_moments = if cfg.optimizer == Optimizer::AdamW {
        router * (8.0 - state_bytes(cfg))
    } else {
        0.0
    };
    let mut s = ModelStates {
        params: params
            + router * (4.0 - wb) / par.zero_divisor(3)
            + super::fp8::te_weight_workspace(cfg)
            - super::fp8::te_weights_16bit_dropped(cfg),
        grads: (state(grad_bytes(cfg), grad_stage(cfg))
            + router * (4.0 - grad_bytes(cfg)) / par.zero_divisor(grad_stage(cfg)))
            * ddp_copies(cfg),
        master_weights: state(master_bytes, 1),
        optimizer_state: state(state_bytes(cfg), 1)
            + step_tensors / par.zero_divisor(1)
            + router_moments / par.zero_divisor(1),
    };
    if offload && cfg.offload.optimizer {
        // CPU Adam updates on the host: the fp32 master, the moments and the
        // fp32 gradient partition live there; 16-bit gradients are copied
        // out bucket by bucket as backward produces them.
        s.master_weights = 0.0;
        s.optimizer_state = 0.0;
        s.grads = 0.0;
    }
    if offload && cfg.offload.params {
        s.params = 0.0;
    }
    s
}

/// The embedding's divisor: the plan's, or with a table tied to the output
/// layer the output layer's (the plans that split that layer split the
/// shared table).
pub(crate) fn embedding_divisor(cfg: &DetailedConfig) -> f64 {
    if cfg.arch.tied_embeddings {
        cfg.parallel.head_divisor()
    } else {
        cfg.parallel.embedding_divisor()
    }
}

/// Parameters of the input embedding, the output layer (0 when tied) and
/// one layer, on one GPU before ZeRO: tensor parallelism splits the first
/// two; a layer's share is what [`params_per_gpu`] leaves per layer
/// (routed experts split by ep · etp, norms and router whole).
pub(crate) fn param_split(cfg: &DetailedConfig) -> (f64, f64, f64) {
    let a = &cfg.arch;
    let par = &cfg.parallel;
    let embedding = a.embedding_params() as f64 / embedding_divisor(cfg);
    let head = a.head_params() as f64 / par.head_divisor();
    let (base, experts) = params_per_gpu(cfg);
    let per_gpu = (base + experts) * par.pp as f64;
    // The final norm rides with the layers, as it always has here.
    let layer = (per_gpu - embedding - head) / a.layers as f64;
    (embedding, head, layer)
}

/// A stage of an uneven pipeline split's model states, as a multiple of
/// the average stage's that [`model_states`] prices (the whole model over
/// p): its own parameters, `layers` layers (each its share of
/// [`param_split`]), the input embedding on the `first`, the output layer
/// on the `last` (a tied table's copy there, as Megatron-Core's last stage
/// keeps one: `LanguageModule.setup_embeddings_and_output_layer`), over
/// the average (embedding + output layer + L layers) / p. Every state
/// follows the parameters it belongs to.
pub(crate) fn stage_states_scale(
    cfg: &DetailedConfig,
    layers: u64,
    first: bool,
    last: bool,
) -> f64 {
    let (embedding, head, layer) = param_split(cfg);
    let head = if cfg.arch.tied_embeddings {
        embedding
    } else {
        head
    };
    let (base, experts) = params_per_gpu(cfg);
    let own =
        layers as f64 * layer + if first { embedding } else { 0.0 } + if last { head } else { 0.0 };
    own / (base + experts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detailed::{estimate, preset, Architecture, LoraTargets};

    #[test]
    fn zero_stages_match_the_paper() {
        // Rajbhandari et al. 2020, Fig. 1: Ψ = 7.5 B, K = 12, N_d = 64 → 120,
        // 31.4, 16.6, 1.9 GB per GPU of model states.
        let arch = Architecture::llama(32, 4096, 32, 32, 11008, 32000);
        let psi = 7.5e9;
        let mut cfg = DetailedConfig::new(arch, 2048, 64);
        cfg.parallel.dp = 64;
        for (stage, want) in [(0u8, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)] {
            cfg.parallel.zero = stage;
            let b = estimate(&cfg).unwrap();
            let states = b.params + b.grads + b.master_weights + b.optimizer_state;
            let per_psi = states / arch.params() as f64;
            let gb = per_psi * psi / 1e9;
            assert!((gb - want).abs() < 0.05, "stage {stage}: {gb}");
        }
    }

    #[test]
    fn experts_divide_by_ep_and_etp_not_tp() {
        // Mixtral-8x7B on 16 GPUs: tp 2, dp 8, ep 8 (one expert per GPU), etp 1.
        let arch = preset("mixtral-8x7b").unwrap().arch;
        let mut cfg = DetailedConfig::new(arch, 4096, 8);
        cfg.parallel.dp = 8;
        cfg.parallel.tp = 2;
        cfg.parallel.sp = true;
        cfg.parallel.ep = 8;
        let split = arch.layers_param_split();
        assert_eq!(split.experts, 32 * 8 * 3 * 4096 * 14336);
        // Norms (2 per layer + final) and routers (4096 × 8 per layer) stay whole.
        assert_eq!(split.replicated, 32 * (2 * 4096 + 4096 * 8));
        let (base, experts) = params_per_gpu(&cfg);
        let outside = (arch.params() - split.experts - split.replicated - 4096) as f64;
        assert_eq!(base, outside / 2.0 + (split.replicated + 4096) as f64);
        assert_eq!(experts, split.experts as f64 / 8.0);
        // ZeRO-1: the expert state over dp·tp/(ep·etp) = 2 GPUs, the rest over dp = 8.
        cfg.parallel.zero = 1;
        let b = estimate(&cfg).unwrap();
        assert_eq!(b.optimizer_state, base * 8.0 / 8.0 + experts * 8.0 / 2.0);
        assert_eq!(b.params, (base + experts) * 2.0);
        // Expert tensor parallelism halves the experts again.
        cfg.parallel.etp = 2;
        assert_eq!(params_per_gpu(&cfg).1, split.experts as f64 / 16.0);
        // ep × etp must divide dp × tp; ep must divide the experts.
        cfg.parallel.ep = 16;
        assert!(estimate(&cfg).is_err());
        cfg.parallel.etp = 1;
        cfg.parallel.ep = 3;
        cfg.parallel.dp = 3;
        cfg.batch = 3;
        assert!(estimate(&cfg)
            .unwrap_err()
            .to_string()
            .contains("divide the experts"));
    }

    #[test]
    fn lora_freezes_the_base() {
        let arch = preset("llama-2-7b").unwrap().arch;
        let mut cfg = DetailedConfig::new(arch, 2048, 1);
        cfg.lora_rank = Some(8);
        let b = estimate(&cfg).unwrap();
        let lora = arch.lora_params(8, LoraTargets::default()) as f64; // 32 · 8 · (8192 + 8192)
        assert_eq!(lora, 4_194_304.0);
        // All seven projections of Llama-2-7B at rank 8: 32 · 8 · (4 · 8192 + 3 · 15104).
        let all: LoraTargets = "all".parse().unwrap();
        assert_eq!(arch.lora_params(8, all), 32 * 8 * (4 * 8192 + 3 * 15104));
        assert_eq!(
            "q,v".parse::<LoraTargets>().unwrap(),
            LoraTargets::default()
        );
        assert!("q,x".parse::<LoraTargets>().is_err());
        assert_eq!(b.grads, lora * 2.0);
        assert_eq!(b.optimizer_state, lora * 8.0);
        assert_eq!(b.params, (arch.params() as f64 + lora) * 2.0);
    }
}
