//! The optimizer step's temporaries on one GPU: what AdamW (per-parameter
//! loop or `foreach`), Lion, Adafactor and Muon allocate beside the state
//! while they update, DeepSpeed's flat partitions, and the fp32 copy
//! ZeRO-3 makes of each sub-group's gradients.

use crate::detailed::config::{AdamImpl, DetailedConfig, Framework, Optimizer};
use crate::detailed::memory::states::{grad_bytes, param_split, trained_params, update_bytes};
use crate::detailed::memory::zero3::largest_sub_group;
use crate::detailed::model::Family;

/// The update's temporaries on one GPU, `stage3` saying whether
/// DeepSpeed's ZeRO-3 runs it.
pub(super) fn temporaries(cfg: &DetailedConfig, adam: AdamImpl, stage3: bool) -> f64 {
    let par = &cfg.parallel;
    let shard = (par.tp * par.pp) as f64 * par.zero_divisor(1);
    // DeepSpeed updates one flat fp32 partition at a time: the whole
    // partition under stages 1 and 2, a sub-group of it under stage 3.
    let partition = trained_params(cfg) / shard;
    let sub_group = if stage3 {
        partition.min(largest_sub_group(cfg))
    } else {
        partition
    } * update_bytes(cfg);
    let temporaries = update(cfg, adam, shard, sub_group);
    // CPU Adam runs on the host. ZeRO-3 flattens each sub-group's
    // gradient partition into a new fp32 tensor before its update.
    if cfg.offload.optimizer {
        0.0
    } else if stage3 {
        temporaries + sub_group
    } else {
        temporaries
    }
}

/// The optimizer's own temporaries while it updates, `shard` being what
/// divides the trained parameters on one GPU and `sub_group` the bytes of
/// the flat partition DeepSpeed updates at once.
fn update(cfg: &DetailedConfig, adam: AdamImpl, shard: f64, sub_group: f64) -> f64 {
    match (cfg.optimizer, adam) {
        // DeepSpeed hands the optimizer one flat fp32 partition
        // (`single_partition_of_fp32_groups`): the loop's two
        // temporaries are that size (measured).
        (Optimizer::AdamW, AdamImpl::ForLoop)
            if matches!(cfg.framework, Framework::DeepSpeed { .. }) =>
        {
            2.0 * sub_group
        }
        (Optimizer::AdamW, AdamImpl::ForLoop) => 2.0 * largest_local(cfg) * update_bytes(cfg),
        (Optimizer::AdamW, AdamImpl::Foreach) => trained_params(cfg) * update_bytes(cfg) / shard,
        // `lion-pytorch`: `exp_avg.clone().mul_(β1).add(grad, 1 − β1)`,
        // two tensors of the parameter's size (measured exact).
        (Optimizer::Lion, _) => 2.0 * largest_local(cfg) * update_bytes(cfg),
        // Adafactor's `var_estimate = row_var @ col_var`, one tensor of
        // the parameter's size (modelled; on the CPU its reductions add
        // a buffer the measurement shows, not modelled).
        (Optimizer::Adafactor, _) => largest_local(cfg) * update_bytes(cfg),
        (Optimizer::Muon, _) => muon(cfg),
        _ => 0.0,
    }
}

/// Muon's temporaries on one GPU.
fn muon(cfg: &DetailedConfig) -> f64 {
    let par = &cfg.parallel;
    // The larger of AdamW's per-parameter loop over the tensors
    // outside the layers (two of the embedding's size) and Muon's
    // Newton–Schulz iteration on the largest layer matrix m × n
    // (m ≤ n): `grad.lerp(buf)` in the parameter's dtype, the bf16
    // iterate twice while it is replaced, and the bf16 m × m Gram
    // matrix and its update (`_zeropower_via_newtonschulz`).
    let tp = par.tp as f64;
    let outer =
        (cfg.arch.vocab * cfg.arch.hidden) as f64 / par.embedding_divisor().min(par.head_divisor());
    let (m, n) = cfg
        .arch
        .layer_matrices()
        .unwrap_or_default()
        .into_iter()
        .map(|(r, c)| (r.min(c) as f64, r.max(c) as f64))
        .fold((0.0, 0.0), |best: (f64, f64), mn| {
            if mn.0 * mn.1 > best.0 * best.1 {
                mn
            } else {
                best
            }
        });
    let ns = m * n * (update_bytes(cfg) + 4.0) + 4.0 * m * m;
    (2.0 * outer * update_bytes(cfg)).max(ns / tp) / par.zero_divisor(1)
}

/// The largest trained tensor on one GPU, in elements: what the
/// per-parameter AdamW loop makes two temporaries of.
/// The largest parameter the optimizer updates on one GPU, in elements.
/// ZeRO and FSDP2 shard every tensor along its first dimension, a
/// `1/zero_divisor` of each. FSDP1 shards each unit's flat parameter in
/// contiguous chunks, and with `use_orig_params=True` the optimizer sees
/// each weight's piece of this rank's chunk (`_flat_param.py`,
/// `_use_sharded_views`): on the heaviest rank, a whole weight up to a
/// chunk. The units are the root (embedding, output layer) and each
/// layer. Measured (`tests/fixtures/fsdp1_measured.tsv`, two ranks: one
/// holds the whole embedding and its step's temporaries).
fn largest_local(cfg: &DetailedConfig) -> f64 {
    let div = cfg.parallel.zero_divisor(1);
    let sharded = cfg.framework.fsdp_reshard().is_some();
    if !matches!(cfg.framework, Framework::Fsdp1 { .. }) || !sharded || cfg.lora_rank.is_some() {
        return largest_trained(cfg) / div;
    }
    let (embedding, head, layer) = param_split(cfg);
    let root = embedding.max(head).min((embedding + head) / div);
    let tp = cfg.parallel.tp as f64;
    root.max(largest_in_layer(cfg, tp).min(layer / div))
}

fn largest_trained(cfg: &DetailedConfig) -> f64 {
    let a = &cfg.arch;
    let tp = cfg.parallel.tp as f64;
    if let Some(r) = cfg.lora_rank {
        // A is r × in, B is out × r.
        let widest = cfg
            .lora_targets
            .iter()
            .map(|t| {
                let (i, o) = a.projection(t);
                i.max(o)
            })
            .max()
            .unwrap_or(0);
        // The output layer's B and the embedding's A are V wide.
        let t = cfg.lora_targets;
        let outer = if t.lm_head() || t.embed() { a.vocab } else { 0 };
        return (r * widest.max(outer)) as f64;
    }
    let par = &cfg.parallel;
    ((a.vocab * a.hidden) as f64 / par.embedding_divisor().min(par.head_divisor()))
        .max(largest_in_layer(cfg, tp))
}

/// The largest tensor of one layer on one GPU, in elements, `tp` dividing
/// the dense ones.
pub(super) fn largest_in_layer(cfg: &DetailedConfig, tp: f64) -> f64 {
    let a = &cfg.arch;
    let (h, f, kv) = (a.hidden, a.ffn, a.kv_dim());
    let layer_max = match a.family {
        Family::Gpt2 => (h * a.qkv_width()).max(h * f),
        Family::Llama => (h * f).max(h * h).max(h * kv),
    };
    // `transformers` 5.x fuses each layer's experts into one 3-D
    // `gate_up_proj` (E × 2F × h), split over ep · etp.
    let experts = a.moe.map_or(0.0, |m| {
        (m.experts * 2 * m.expert_ffn * h) as f64 / (cfg.parallel.ep * cfg.parallel.etp) as f64
    });
    (layer_max as f64 / tp).max(experts)
}

/// The optimizer in backward: bytes live per value of the parameter its
/// hook steps, its gradient and the update's temporaries. torchtune
/// (`training/memory.py`, `register_optim_in_bwd_hooks`) builds one
/// optimizer per parameter, so the update's temporaries are one tensor's:
/// AdamW's per-parameter loop two (`denom`, as above), `foreach` over a
/// list of one `_foreach_sqrt`'s copy, a fused kernel none; Lion two,
/// Adafactor one; SGD and bitsandbytes' kernels none. The hook's
/// `zero_grad()` then frees the gradient.
pub(super) fn in_backward_per_value(cfg: &DetailedConfig, adam: AdamImpl) -> f64 {
    let copies = match (cfg.optimizer, adam) {
        (Optimizer::AdamW, AdamImpl::ForLoop) | (Optimizer::Lion, _) => 2.0,
        (Optimizer::AdamW, AdamImpl::Foreach) | (Optimizer::Adafactor, _) => 1.0,
        _ => 0.0,
    };
    grad_bytes(cfg) + copies * update_bytes(cfg)
}
