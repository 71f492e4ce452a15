//! Offload against DeepSpeed's own estimators: `fixtures/deepspeed_estimates.tsv`
//! (written by `fixtures/deepspeed_estimates.py`, DeepSpeed 0.19.8) holds
//! their per-CPU and per-GPU bytes for 192 settings; the reproductions in
//! `membudget::detailed::memory::offload` must give every one to the byte, and the
//! model's own figures must agree with them where their assumptions meet.
#![cfg(not(target_arch = "wasm32"))]

use crate::common;

use membudget::detailed::memory::offload::{deepspeed_zero2, deepspeed_zero3, BUFFER_FACTOR};
use membudget::detailed::{estimate, host_ram, preset, DetailedConfig};

#[test]
fn deepspeed_estimators_reproduced_to_the_byte() {
    let text = include_str!("fixtures/deepspeed_estimates.tsv");
    let mut rows = 0;
    for (line, c) in common::tsv_rows(text) {
        let n = |i: usize| c[i].parse::<u64>().unwrap();
        let flag = |i: usize| c[i] == "1";
        let got = if c[0] == "2" {
            deepspeed_zero2(n(2), n(4), n(5), flag(6), BUFFER_FACTOR)
        } else {
            let (cpu, gpu, _) = deepspeed_zero3(
                n(2),
                n(3),
                n(4),
                n(5),
                flag(6),
                flag(7),
                flag(8),
                BUFFER_FACTOR,
            );
            (cpu, gpu)
        };
        assert_eq!(got, (n(9), n(10)), "{line}");
        rows += 1;
    }
    assert_eq!(rows, 192);
}

/// Mixed-precision AdamW on the whole model, tp = pp = 1, one node: the
/// host states are DeepSpeed's 16 (optimizer offload) or 18 (and the
/// parameters) bytes per parameter, the node's host RAM its per-CPU figure,
/// and the GPU's model states its per-GPU figure less the largest layer
/// (which the step timeline has as ZeRO-3's gathered layers).
#[test]
fn the_model_meets_deepspeed_where_their_assumptions_meet() {
    let arch = preset("llama-2-7b").unwrap().arch;
    let p = arch.params();
    for gpus in [1u64, 4, 8] {
        let mut cfg = DetailedConfig::new(arch, 2048, gpus);
        cfg.parallel.dp = gpus;
        cfg.offload.gpus_per_node = gpus;
        cfg.offload.optimizer = true;
        for (zero, params) in [(2u8, false), (3, false), (3, true)] {
            cfg.parallel.zero = zero;
            cfg.offload.params = params;
            let what = format!("{gpus} GPUs, ZeRO-{zero}, params offloaded {params}");
            let host = host_ram(&cfg).unwrap();
            let bytes = if params { 18.0 } else { 16.0 };
            assert_eq!(host.states, bytes * p as f64, "{what}");
            let (ds_cpu, ds_gpu) = if zero == 2 {
                deepspeed_zero2(p, gpus, 1, true, BUFFER_FACTOR)
            } else {
                let (c, g, _) = deepspeed_zero3(p, 0, gpus, 1, true, params, true, BUFFER_FACTOR);
                (c, g)
            };
            assert!(
                (host.total() - ds_cpu as f64).abs() < 1.0,
                "{what}: {} vs {ds_cpu}",
                host.total()
            );
            let b = estimate(&cfg).unwrap();
            let states = b.params + b.grads + b.master_weights + b.optimizer_state;
            assert!(
                (states - ds_gpu as f64).abs() < 1.0,
                "{what}: {states} vs {ds_gpu}"
            );
        }
    }
}
