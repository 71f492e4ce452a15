//! Properties of the detailed model over random configurations: it never
//! panics, answers finite non-negative figures that add up, and moves the
//! way the papers say when one knob turns.
#![cfg(not(target_arch = "wasm32"))]

use membudget::detailed::{
    estimate, memory::sac, timeline, AdamImpl, AttentionKernel, DetailedConfig, Device, Moment,
    Profile, Recompute, Step, StepOptions, PRESETS,
};
use proptest::prelude::*;

use crate::common;

fn any_config() -> impl Strategy<Value = DetailedConfig> {
    (
        0..PRESETS.len(),
        prop::sample::select(vec![128u64, 512, 2048, 8192]),
        1u64..=8,
        common::any_precision(),
        common::any_optimizer(),
        any::<(bool, bool, bool, bool)>(),
        common::any_recompute(),
        (
            prop::sample::select(vec![1u64, 2, 4, 8]),
            0u8..=3,
            prop::sample::select(vec![1u64, 2]),
            any::<bool>(),
        ),
        proptest::option::of(1u64..=64),
    )
        .prop_map(
            |(
                m,
                seq,
                micro,
                precision,
                optimizer,
                (flash, dropout, hf, cpu),
                recompute,
                (dp, zero, tp, sp),
                lora,
            )| {
                let mut cfg = DetailedConfig::new(PRESETS[m].arch, seq, micro * dp);
                cfg.micro_batch = Some(micro);
                cfg.precision = precision;
                cfg.optimizer = optimizer;
                cfg.attention = if flash {
                    AttentionKernel::Flash
                } else {
                    AttentionKernel::Eager
                };
                cfg.dropout = dropout;
                // A gpt2 shape with grouped queries is Megatron's GPT
                // alone (Nemotron-4; refused under hf elsewhere).
                let megatron_gpt = cfg.arch.kv_heads != cfg.arch.heads
                    && cfg.arch.family == membudget::detailed::Family::Gpt2;
                let hf = hf && !megatron_gpt;
                cfg.profile = if hf { Profile::Hf } else { Profile::Fused };
                cfg.device = if cpu { Device::Cpu } else { Device::Cuda };
                cfg.recompute = recompute;
                cfg.parallel.dp = dp;
                cfg.parallel.zero = zero;
                // transformers shards no Falcon-H1 layer (refused elsewhere).
                let hf_hybrid = hf && cfg.arch.ssm.is_some();
                cfg.parallel.tp = if cfg.arch.heads.is_multiple_of(tp) && !hf_hybrid {
                    tp
                } else {
                    1
                };
                // Experts under tensor parallelism need sequence
                // parallelism (Megatron-LM's rule, checked elsewhere).
                cfg.parallel.sp = sp || (cfg.arch.moe.is_some() && cfg.parallel.tp > 1);
                cfg.lora_rank = lora;
                // Per-operator checkpointing where it is priced (refused
                // in words elsewhere, `sac::unsupported`).
                if cfg.recompute == Recompute::SelectiveOp && sac::unsupported(&cfg).is_some() {
                    cfg.recompute = Recompute::Full;
                }
                cfg
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn figures_are_finite_and_add_up(cfg in any_config()) {
        let b = estimate(&cfg).unwrap();
        let parts = [b.params, b.grads, b.master_weights, b.optimizer_state, b.activations];
        for x in parts.iter().chain([&b.logits, &b.total]) {
            prop_assert!(x.is_finite() && *x >= 0.0);
        }
        let sum: f64 = parts.iter().sum();
        prop_assert!((b.total - sum).abs() <= b.total * 1e-12);
        prop_assert!(b.logits <= b.activations);
    }

    #[test]
    fn recomputation_and_flash_never_add_memory(cfg in any_config()) {
        let base = DetailedConfig { recompute: Recompute::None, ..cfg };
        let none = estimate(&base).unwrap().activations;
        let selective = estimate(&DetailedConfig { recompute: Recompute::Selective, ..base }).unwrap().activations;
        let full = estimate(&DetailedConfig { recompute: Recompute::Full, ..base }).unwrap().activations;
        prop_assert!(full <= selective && selective <= none);
        // torchtitan's per-operator policy keeps at least the layer's
        // input (only that for GPT-2 under eager attention: its
        // projections are all `addmm`) and less than the whole layer.
        let op = DetailedConfig { recompute: Recompute::SelectiveOp, ..base };
        if sac::unsupported(&op).is_none() {
            let kept = estimate(&op).unwrap().activations;
            prop_assert!(full <= kept && kept < none, "{full} {kept} {none}");
        }
        // In the fused profile flash keeps no a·s² term. (Stock GPT-2 with
        // SDPA can keep more than eager at short sequences: it is measured so.)
        let eager = DetailedConfig { attention: AttentionKernel::Eager, dropout: false, profile: Profile::Fused, ..base };
        let flash = DetailedConfig { attention: AttentionKernel::Flash, ..eager };
        prop_assert!(estimate(&flash).unwrap().activations <= estimate(&eager).unwrap().activations);
    }

    #[test]
    fn activations_grow_with_micro_batch_states_do_not(cfg in any_config()) {
        let one = estimate(&cfg).unwrap();
        let micro = cfg.micro_batch.unwrap();
        let more = DetailedConfig { micro_batch: Some(micro * 2), batch: cfg.batch * 2, ..cfg };
        let two = estimate(&more).unwrap();
        prop_assert!(two.activations > one.activations);
        prop_assert_eq!(two.params, one.params);
        prop_assert_eq!(two.optimizer_state, one.optimizer_state);
    }

    #[test]
    fn the_step_peak_is_finite_holds_the_states_and_grows_with_the_micro_batch(
        cfg in any_config(),
        first in any::<bool>(),
        adam in prop::sample::select(vec![None, Some(AdamImpl::ForLoop), Some(AdamImpl::Foreach), Some(AdamImpl::Fused)]),
    ) {
        let opts = StepOptions { step: if first { Step::First } else { Step::Later }, adam };
        let b = estimate(&cfg).unwrap();
        let t = timeline(&cfg, &opts).unwrap();
        let peak = t.peak_bytes();
        prop_assert!(peak.is_finite() && peak > 0.0);
        for e in &t.events {
            prop_assert!(e.live.total() <= peak);
            for v in [e.live.params, e.live.grads, e.live.master_weights, e.live.optimizer_state, e.live.activations, e.live.transient] {
                prop_assert!(v.is_finite() && v >= -1e-6 * peak, "{e:?}");
            }
        }
        // At the update every model state is live at once.
        let update = t.events.iter().find(|e| e.moment == Moment::OptimizerUpdate).unwrap();
        let states = b.params + b.grads + b.master_weights + b.optimizer_state;
        prop_assert!((update.live.params + update.live.grads + update.live.master_weights + update.live.optimizer_state - states).abs() <= states * 1e-9);
        prop_assert!(peak >= states * (1.0 - 1e-12));
        // The fit solver's binary search needs the peak not to fall as the micro-batch grows.
        let micro = cfg.micro_batch.unwrap();
        let more = DetailedConfig { micro_batch: Some(micro + 1), batch: (micro + 1) * cfg.parallel.dp, ..cfg };
        prop_assert!(timeline(&more, &opts).unwrap().peak_bytes() >= peak * (1.0 - 1e-12));
    }
}

proptest! {
    /// GRPO (with or without KL, generate or a colocated vLLM engine),
    /// float8 recipes and Llama-family presets at random: every figure is
    /// finite and non-negative, or the configuration is refused in words;
    /// the step time on an H100 is finite and positive.
    #[test]
    fn grpo_and_float8_are_finite_or_refused(
        m in 0..PRESETS.len(),
        seq in prop::sample::select(vec![64u64, 512, 4096]),
        completion in 1u64..=8192,
        gens in prop::sample::select(vec![1u64, 2, 4, 8]),
        micro in 1u64..=8,
        accum in 1u64..=3,
        objective in prop::sample::select(vec!["grpo", "grpo-kl", "sft", "dpo"]),
        fp8 in prop::sample::select(vec!["none", "tensorwise", "rowwise", "te"]),
        (hf, cpu, lora, vllm) in any::<(bool, bool, bool, Option<(u8, bool)>)>(),
        (zero, fsdp2) in (0u8..=3, any::<bool>()),
    ) {
        use membudget::detailed::{config::Vllm, time::hardware::gpu, time::steptime::{step_time, Cluster, Efficiency}, Framework};
        let mut cfg = DetailedConfig::new(PRESETS[m].arch, seq, micro * accum * 2);
        cfg.micro_batch = Some(micro);
        cfg.parallel.dp = 2;
        cfg.parallel.zero = zero;
        if fsdp2 && zero == 3 {
            cfg.framework = Framework::Fsdp2 { reshard_after_forward: true };
        }
        cfg.attention = AttentionKernel::Flash;
        cfg.profile = if hf { Profile::Hf } else { Profile::Fused };
        cfg.device = if cpu { Device::Cpu } else { Device::Cuda };
        cfg.objective = objective.parse().unwrap();
        cfg.fp8 = fp8.parse().unwrap();
        cfg.lora_rank = lora.then_some(16);
        cfg.rollout.completion = completion;
        cfg.rollout.generations = gens;
        cfg.rollout.vllm = vllm.map(|(pct, sleep)| Vllm {
            reserved: (f64::from(pct % 90 + 5) / 100.0 * 85.9e9) as u64,
            sleep,
        });
        match estimate(&cfg) {
            Err(e) => prop_assert!(!e.to_string().is_empty()),
            Ok(b) => {
                for x in [b.params, b.grads, b.master_weights, b.optimizer_state, b.activations, b.total] {
                    prop_assert!(x.is_finite() && x >= 0.0, "{b:?}");
                }
                let t = timeline(&cfg, &StepOptions::default()).unwrap();
                for e in &t.events {
                    let l = e.live;
                    for v in [l.params, l.grads, l.master_weights, l.optimizer_state, l.activations, l.transient] {
                        prop_assert!(v.is_finite() && v >= -1e-6 * t.peak_bytes(), "{e:?}");
                    }
                }
                let h100 = Cluster::new(gpu("h100-sxm").unwrap(), 8);
                let s = step_time(&cfg, &h100, &Efficiency::for_gpu(&h100.gpu));
                prop_assert!(s.step_s.is_finite() && s.step_s > 0.0, "{s:?}");
                prop_assert!(s.parts.named().iter().all(|(_, v)| v.is_finite() && *v >= 0.0), "{s:?}");
            }
        }
    }
}
