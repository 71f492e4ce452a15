//! `--gpu` prices the step in time, `--tokens` the training run, and
//! `--plan` searches the layouts: each row's flags, rerun, give its figures.

use std::process::Command;

fn membudget(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_membudget"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The dead end: Llama-3.1-8B at 8,192 tokens on one 80 GB H100
/// has layouts that fit, and rerunning each row's flags gives the row's
/// peak and step time; so does a 64-GPU plan for Llama-3.1-70B.
#[test]
fn plan_rows_rerun_to_their_figures() {
    for (base, gpus) in [
        (
            vec!["--model", "llama-3.1-8b", "--seq", "8192", "--batch", "1"],
            "1",
        ),
        (
            vec![
                "--model",
                "llama-3.1-70b",
                "--seq",
                "4096",
                "--batch",
                "128",
            ],
            "64",
        ),
    ] {
        let mut args = base.clone();
        args.extend(["--gpu", "h100-sxm", "--plan", "--gpus", gpus, "--json"]);
        let doc = membudget(&args);
        let rows = doc["plan"]["rows"].as_array().unwrap();
        assert!(!rows.is_empty(), "{args:?}");
        let steps: Vec<f64> = rows.iter().map(|r| r["step_s"].as_f64().unwrap()).collect();
        assert!(steps.windows(2).all(|w| w[0] <= w[1]), "fastest first");
        let cap = doc["fit"]["capacity"].as_u64().unwrap();
        if base.contains(&"131072") {
            assert!(rows.iter().all(|r| r["flags"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f == "--cp")));
        }
        for r in rows
            .iter()
            .take(5)
            .chain(rows.iter().filter(|r| r["pareto"] == true))
        {
            let flags: Vec<&str> = r["flags"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f.as_str().unwrap())
                .collect();
            let mut again = base.clone();
            again.extend(["--gpu", "h100-sxm", "--json"]);
            again.extend(flags.iter());
            let rerun = membudget(&again);
            assert_eq!(rerun["fit"]["need"], r["peak"], "{flags:?}");
            assert!(rerun["fit"]["fits"].as_bool().unwrap());
            assert!(r["peak"].as_u64().unwrap() <= cap);
            assert_eq!(rerun["time"]["step_s"], r["step_s"], "{flags:?}");
        }
    }
}

/// `--tokens` and `--price`: GPU-hours are tokens over the rate per GPU,
/// days the GPU-hours over the GPUs, the cost GPU-hours × price.
#[test]
fn training_cost_follows_the_rate() {
    let doc = membudget(&[
        "--model",
        "llama-3.1-8b",
        "--seq",
        "4096",
        "--batch",
        "64",
        "--dp",
        "8",
        "--zero",
        "3",
        "--micro-batch",
        "2",
        "--recompute",
        "full",
        "--gpu",
        "h100-sxm",
        "--tokens",
        "1e12",
        "--price",
        "3",
        "--json",
    ]);
    let t = &doc["time"];
    let rate = t["tokens_per_s_per_gpu"].as_f64().unwrap();
    let c = &t["training"];
    let hours = 1e12 / rate / 3600.0;
    assert!((c["gpu_hours"].as_f64().unwrap() / hours - 1.0).abs() < 1e-12);
    assert!((c["days"].as_f64().unwrap() - hours / 8.0 / 24.0).abs() < 1e-9);
    assert!((c["cost"].as_f64().unwrap() - 3.0 * hours).abs() < 1e-6);
    // The parts add up to the step.
    let parts: f64 = t["parts"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_f64().unwrap())
        .sum();
    assert!((parts / t["step_s"].as_f64().unwrap() - 1.0).abs() < 1e-12);
}

/// Time needs a card whose speeds are known; bad efficiencies are refused.
#[test]
fn time_needs_a_card_and_sane_efficiencies() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_membudget"))
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["--model", "gpt2", "--plan"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("need --gpu CARD"));
    let out = run(&["--model", "gpt2", "--gpu-memory", "24", "--tokens", "1e9"]);
    assert!(!out.status.success());
    for bad in ["0", "1.5", "NaN"] {
        let out = run(&["--model", "gpt2", "--gpu", "a100-80gb", "--eff-matmul", bad]);
        assert!(!out.status.success(), "{bad}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--eff-matmul must be"));
    }
}

/// IBM's Llama 2 13B on 128 A100s (fms-fsdp): hybrid sharding inside each
/// node of 8, 400 Gbit/s between nodes. The shard group shards the states
/// as 8 GPUs do; the slower network slows only the cross-node all-reduce.
#[test]
fn hybrid_sharding_and_the_network_reach_the_step() {
    let base = [
        "--model",
        "llama-2-13b",
        "--seq",
        "4096",
        "--batch",
        "128",
        "--micro-batch",
        "1",
        "--dp",
        "128",
        "--zero",
        "3",
        "--impl",
        "hf",
        "--gpu",
        "a100-80gb",
        "--json",
    ];
    let with = |extra: &[&str]| membudget(&[&base[..], extra].concat());
    let hsdp = with(&["--dp-shard", "8"]);
    assert_eq!(hsdp["inputs"]["parallel"]["dp_shard"], 8);
    let full = with(&[]);
    assert!(hsdp["bytes"]["optimizer_state"].as_f64() > full["bytes"]["optimizer_state"].as_f64());
    let slow = with(&["--dp-shard", "8", "--network-gbit", "50"]);
    let (fast_t, slow_t) = (&hsdp["time"], &slow["time"]);
    assert_eq!(fast_t["parts"]["matmul"], slow_t["parts"]["matmul"]);
    assert!(
        slow_t["parts"]["data_parallel"].as_f64().unwrap()
            > fast_t["parts"]["data_parallel"].as_f64().unwrap() + 1.0
    );
    let out = Command::new(env!("CARGO_BIN_EXE_membudget"))
        .args([&base[..], &["--dp-shard", "6"]].concat())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("must divide"));
}

/// `--gpus-per-node 72`: a 72-GPU NVLink domain (NVL72). GPT-OSS 120B's
/// experts over 64 H100s cross the network in nodes of 8 and stay on
/// NVLink in one domain of 72, so the expert-parallel time falls; GB200
/// is priced as its NVL72 rack either way, so the flag changes nothing
/// there.
#[test]
fn seventy_two_gpus_per_node_is_one_nvlink_domain() {
    let step = |gpu: &str, per_node: &str| {
        membudget(&[
            "--model",
            "gpt-oss-120b",
            "--seq",
            "4096",
            "--micro-batch",
            "1",
            "--batch",
            "64",
            "--dp",
            "64",
            "--ep",
            "64",
            "--zero",
            "1",
            "--gpu",
            gpu,
            "--gpus-per-node",
            per_node,
            "--json",
        ])["time"]["parts"]["expert_parallel"]
            .as_f64()
            .unwrap()
    };
    assert!(step("h100-sxm", "72") < 0.5 * step("h100-sxm", "8"));
    assert_eq!(step("gb200", "72"), step("gb200", "4"));
}
