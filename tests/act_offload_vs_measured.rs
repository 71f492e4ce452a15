//! torchtune's `OffloadActivations` (torchtune 0.6.1) against
//! `tests/fixtures/act_offload_measured.tsv` (`measure_act_offload.py`: its
//! own pack hook around small Hugging Face Llamas' forward on the CPU,
//! counted per layer): what `--offload-activations torchtune` puts on the
//! host, and the saved bytes the model counts per layer.

#![cfg(not(target_arch = "wasm32"))]

use membudget::detailed::{host_ram, ActOffload, DetailedConfig, Recompute};
use std::collections::BTreeMap;

use crate::common;

/// One configuration's rows: (layer, packs, offloaded, host bytes, kept,
/// kept bytes, resident bytes, saved bytes) by layer (-1: outside them).
type Rows = BTreeMap<i64, [f64; 7]>;

/// The fixture's configurations: (the model's configuration without
/// offload, whole-layer checkpointing, its rows).
fn configurations() -> Vec<(DetailedConfig, bool, Rows)> {
    let mut out: Vec<(String, DetailedConfig, bool, Rows)> = Vec::new();
    for (_, c) in common::tsv_rows(include_str!("fixtures/act_offload_measured.tsv")) {
        let key = c[..10].join(" ");
        let num = |i: usize| c[i].parse::<u64>().unwrap();
        if out.last().map(|o| &o.0) != Some(&key) {
            let (layers, hidden, heads, kv, ffn, vocab) =
                (num(0), num(1), num(2), num(3), num(4), num(5));
            let (seq, micro) = (num(6), num(7));
            let arch = common::measured_arch("llama", (layers, hidden, heads, kv, ffn, vocab), seq);
            let mut cfg = DetailedConfig::new(arch, seq, micro);
            cfg.micro_batch = Some(micro);
            common::hf_cpu(&mut cfg, c[8], "sdpa");
            cfg.dropout = false;
            out.push((key, cfg, c[9] == "1", Rows::new()));
        }
        let v: Vec<f64> = c[11..18].iter().map(|x| x.parse().unwrap()).collect();
        out.last_mut()
            .unwrap()
            .3
            .insert(c[10].parse().unwrap(), v.try_into().unwrap());
    }
    out.into_iter().map(|(_, c, k, r)| (c, k, r)).collect()
}

/// Under whole-layer checkpointing (which torchtune's recipes require),
/// the host holds each layer's checkpointed input and the final norm's
/// saved tensors, one copy per pack: the model's host figure within 1 %
/// (per layer the packs are exactly the checkpoint), and nothing of the
/// layers stays on the device.
#[test]
fn torchtune_host_bytes_under_checkpointing() {
    let mut n = 0;
    for (mut cfg, ckpt, rows) in configurations() {
        if !ckpt {
            continue;
        }
        n += 1;
        cfg.recompute = Recompute::Full;
        cfg.offload.activations = true;
        cfg.offload.activations_by = ActOffload::Torchtune;
        cfg.offload.gpus_per_node = 1;
        let model = host_ram(&cfg).unwrap().activations;
        let measured: f64 = rows.values().map(|r| r[2]).sum();
        let err = model / measured - 1.0;
        println!(
            "h {} seq {} {:?}: host measured {measured} model {model} ({:+.2} %)",
            cfg.arch.hidden,
            cfg.seq,
            cfg.precision,
            100.0 * err
        );
        assert!(err.abs() <= 0.01, "{:+.3} %", 100.0 * err);
        // save_on_cpu's figure leaves the final norm out.
        cfg.offload.activations_by = ActOffload::SaveOnCpu;
        let layers_only = host_ram(&cfg).unwrap().activations;
        let in_layers: f64 = rows
            .iter()
            .filter(|(l, _)| **l >= 0)
            .map(|(_, r)| r[2])
            .sum();
        assert_eq!(layers_only, in_layers);
        for (layer, r) in rows.iter().filter(|(l, _)| **l >= 0) {
            assert_eq!((r[0], r[1], r[5]), (1.0, 1.0, 0.0), "layer {layer}");
        }
    }
    assert_eq!(n, 4);
}

/// Without checkpointing (refused by torchtune's recipes; run for what the
/// hook does): what it keeps is under its 1,024-byte threshold, nothing
/// saved stays on the device, and each pack is its own copy, so the host
/// holds more than the device would have (repeated inputs, the linear
/// layers' transposed weight views): 1.8 to 3.6 times. The device's saved
/// bytes per layer, as the model counts them, within ±5 %.
#[test]
fn torchtune_packs_without_checkpointing() {
    let mut n = 0;
    for (mut cfg, ckpt, rows) in configurations() {
        if ckpt {
            continue;
        }
        n += 1;
        cfg.offload.activations = true;
        cfg.offload.gpus_per_node = 1;
        let layers = cfg.arch.layers as f64;
        let model = host_ram(&cfg).unwrap().activations / layers;
        for (layer, r) in rows.iter().filter(|(l, _)| **l >= 0) {
            let [_, _, host, kept, kept_bytes, resident, saved] = *r;
            assert!(kept_bytes < kept * 1024.0, "layer {layer}");
            assert_eq!(resident, kept_bytes.min(resident), "layer {layer}");
            let ratio = host / saved;
            assert!((1.8..=3.7).contains(&ratio), "layer {layer}: {ratio}");
            let err = model / saved - 1.0;
            println!(
                "layer {layer}: saved {saved} model {model} ({:+.2} %), host {host} ({ratio:.2}×)",
                100.0 * err
            );
            assert!(err.abs() <= 0.05, "layer {layer}: {:+.2} %", 100.0 * err);
        }
    }
    assert_eq!(n, 4);
}
