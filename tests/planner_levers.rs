//! The trainers' memory features as the planner's levers (issue 34): each
//! offered where it applies, with the flags that apply it, and priced in
//! time with the right sign and size: torchtune's chunked loss costs its
//! sums of the output layer's gradient, activation offloading costs only
//! the PCIe traffic its compute does not hide, `torch.compile` saves the
//! memory-bound kernels it fuses, the optimizer in backward costs no time.

use membudget::detailed::plan::planner::{flags, make_it_fit, Change};
use membudget::detailed::time::hardware::gpu;
use membudget::detailed::time::steptime::{step_time, Cluster, Efficiency};
use membudget::detailed::{
    preset, Architecture, AttentionKernel, DetailedConfig, Precision, Profile, Recompute,
};

fn h100() -> (Cluster, Efficiency) {
    (
        Cluster::new(gpu("h100-sxm").unwrap(), 8),
        Efficiency::default(),
    )
}

/// Llama 3.1 8B fully fine-tuned on one H100 as transformers runs it
/// (SDPA, no dropout), `micro` sequences of 4,096 tokens a step.
fn llama_8b(micro: u64) -> DetailedConfig {
    let mut c = DetailedConfig::new(preset("llama-3.1-8b").unwrap().arch, 4096, micro);
    c.profile = Profile::Hf;
    c.precision = Precision::Bf16;
    c.attention = AttentionKernel::Flash;
    c.dropout = false;
    c
}

fn lever(cfg: &DetailedConfig, name: &str) -> Change {
    let (cluster, eff) = h100();
    let plan = make_it_fit(cfg, 80e9, None, Some((&cluster, &eff)));
    plan.changes
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no lever {name}"))
}

fn step_s(cfg: &DetailedConfig) -> f64 {
    let (cluster, eff) = h100();
    step_time(cfg, &cluster, &eff).step_s
}

/// The chunked loss: the logits' fp32 copy gone, and 7 sums of the
/// output layer's bf16 weight gradient (3 × 128,256 × 4,096 × 2 bytes
/// each) at the H100's sustained memory rate, per micro-batch.
#[test]
fn the_chunked_loss_costs_its_gradient_sums() {
    let cfg = llama_8b(1);
    let c = lever(&cfg, "torchtune's chunked loss (8 chunks)");
    assert_eq!(
        flags(&cfg, &c.cfg),
        ["--loss", "chunked"].map(String::from).to_vec()
    );
    assert!(c.saved > 0.5e9, "{}", c.saved);
    let (cluster, eff) = h100();
    let rate = cluster.gpu.memory_gbps * 1e9 * eff.memory;
    let sums = 7.0 * 3.0 * 128_256.0 * 4096.0 * 2.0 / rate;
    let want = 1.0 + sums / step_s(&cfg);
    let time = c.time.unwrap();
    assert!(time > 1.0, "{time}");
    assert!((time / want - 1.0).abs() < 1e-9, "{time} vs {want}");
}

/// torchtune's activation offloading: hidden behind a 8B model's compute
/// (no time), paid for where a small layer computes faster than PCIe
/// moves its checkpoint (the excess only).
#[test]
fn offloading_costs_only_the_pcie_traffic_compute_does_not_hide() {
    let mut cfg = llama_8b(8);
    cfg.recompute = Recompute::Full;
    let name = "activations offloaded to the CPU (torchtune)";
    let c = lever(&cfg, name);
    assert_eq!(
        flags(&cfg, &c.cfg),
        ["--offload-activations", "torchtune"]
            .map(String::from)
            .to_vec()
    );
    assert!(c.saved > 0.0);
    assert_eq!(c.time, Some(1.0));
    // Full recomputation is needed first: no lever without it.
    let (cluster, eff) = h100();
    let plan = make_it_fit(&llama_8b(8), 80e9, None, Some((&cluster, &eff)));
    assert!(!plan.changes.iter().any(|c| c.name == name));
    // A narrow model with fused kernels on a B200 (8 TB/s of memory, PCIe
    // 5): 16 layers of h 128 over 16,384 tokens, each layer's checkpointed
    // bf16 input and the final norm's n·h·(8 + 2) bytes out in forward and
    // back in backward: more than the micro-batch's compute hides. (Eager
    // kernels move about three times those bytes through memory, which
    // hides them; its peak is not the checkpoints', so the planner does
    // not offer it here: priced directly.)
    let (cluster, eff) = (Cluster::new(gpu("b200").unwrap(), 8), Efficiency::default());
    let mut small = DetailedConfig::new(Architecture::llama(16, 128, 2, 2, 256, 256), 512, 32);
    small.profile = Profile::Fused;
    small.precision = Precision::Bf16;
    small.attention = AttentionKernel::Flash;
    small.dropout = false;
    small.recompute = Recompute::Full;
    let mut offloaded = small;
    offloaded.offload.activations = true;
    offloaded.offload.activations_by = membudget::detailed::ActOffload::Torchtune;
    let before = step_time(&small, &cluster, &eff);
    let after = step_time(&offloaded, &cluster, &eff);
    let extra = after.step_s - before.step_s;
    let n = 512.0 * 32.0 * 128.0;
    let moved = 16.0 * n * 2.0 + n * 10.0;
    let pcie = cluster.gpu.pcie_gbps * 1e9 * eff.link;
    let p = after.parts;
    let compute = p.matmul + p.attention + p.memory_bound;
    assert!(extra > 0.0, "{extra}");
    assert!(membudget::detailed::estimate(&offloaded).is_ok());
    assert!((extra - p.offload).abs() < 1e-12, "{extra} {}", p.offload);
    assert!(
        (p.offload - (2.0 * moved / pcie - compute)).abs() < 1e-9 * before.step_s,
        "{} vs {}",
        p.offload,
        2.0 * moved / pcie - compute
    );
}

/// `torch.compile`: the products and attention unchanged, the step
/// shorter by exactly the memory-bound time inductor's fusion saves.
#[test]
fn compile_saves_the_fused_kernels_time() {
    let cfg = llama_8b(1);
    let c = lever(&cfg, "torch.compile");
    assert_eq!(
        flags(&cfg, &c.cfg),
        ["--compile"].map(String::from).to_vec()
    );
    let (cluster, eff) = h100();
    let (a, b) = (
        step_time(&cfg, &cluster, &eff),
        step_time(&c.cfg, &cluster, &eff),
    );
    assert_eq!(a.parts.matmul, b.parts.matmul);
    let fused = a.parts.memory_bound - b.parts.memory_bound;
    assert!(fused > 0.0);
    let time = c.time.unwrap();
    assert!(time < 1.0 && time > 0.8, "{time}");
    assert!(((1.0 - time) * a.step_s - fused).abs() < 1e-9 * a.step_s);
}

/// The optimizer in backward frees each gradient after its step (with
/// full recomputation the step's peak is at the end of backward, where
/// every gradient lives): the same bytes through the same update, so no
/// time; not offered with accumulation, which it forbids.
#[test]
fn the_optimizer_in_backward_costs_no_time_and_forbids_accumulation() {
    let mut cfg = llama_8b(1);
    cfg.recompute = Recompute::Full;
    let name = "the optimizer step in backward";
    let c = lever(&cfg, name);
    assert_eq!(
        flags(&cfg, &c.cfg),
        ["--optimizer-in-backward"].map(String::from).to_vec()
    );
    assert!(c.saved > 0.0);
    assert_eq!(c.time, Some(1.0));
    let mut acc = cfg;
    acc.batch = 4;
    let (cluster, eff) = h100();
    let plan = make_it_fit(&acc, 80e9, None, Some((&cluster, &eff)));
    assert!(plan
        .changes
        .iter()
        .all(|c| !c.name.contains(name) || c.cfg.accumulation_steps() == 1));
}
