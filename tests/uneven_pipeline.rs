//! Uneven pipeline splits (`--first-stage-layers`, `--last-stage-layers`,
//! Megatron-LM's `--decoder-first/last-pipeline-num-layers`): each stage's
//! memory with its own layers, states and micro-batches in flight, and the
//! step paced by the slowest stage.
#![cfg(not(target_arch = "wasm32"))]

use membudget::detailed::{
    memory::stage_estimates, preset, time::hardware::gpu, time::steptime::step_time,
    time::steptime::Cluster, time::steptime::Efficiency, AttentionKernel, DetailedConfig,
};

/// Llama-3.1-405B as NVIDIA's recipe lays it out on 128 B200s
/// (Megatron-Bridge, `src/megatron/bridge/recipes/llama/llama31_perf.py`,
/// `llama31_405b_pretrain_128gpu_b200_bf16_config`: tp 4 with sequence
/// parallelism, pp 8, vp 8, cp 2, micro-batch 1, global batch 64, 8,192
/// tokens; over `recipes/llama/llama3.py`'s `llama31_405b_pretrain_config`,
/// `account_for_embedding_in_pipeline_split` and
/// `account_for_loss_in_pipeline_split` on: (126 + 2) / 8 = 16 layers a
/// rank, one fewer on the first and the last, Megatron-Core's
/// `get_num_layers_to_build`), the distributed optimizer over dp 2 × cp 2.
fn recipe(first_last: Option<u64>, vp: u64) -> DetailedConfig {
    let mut c = DetailedConfig::new(preset("llama-3.1-405b").unwrap().arch, 8192, 64);
    c.micro_batch = Some(1);
    c.attention = AttentionKernel::Flash;
    c.dropout = false;
    let p = &mut c.parallel;
    (p.tp, p.sp, p.pp, p.vp, p.cp, p.dp, p.zero) = (4, true, 8, vp, 2, 2, 1);
    (p.first_stage_layers, p.last_stage_layers) = (first_last, first_last);
    c
}

/// Exact bytes per stage. One layer of Llama-3.1-405B holds 3,187,703,808
/// parameters (q and o 16,384², k and v 16,384 × 1,024, the MLP
/// 3 × 16,384 × 53,248, two norms of 16,384); tensor parallelism over 4
/// splits all but the norms: 796,917,760 + 32,768 on each GPU, and the
/// model carries its final norm (16,384) with the layers, 16,384 / 126 a
/// layer. The embedding and the output layer, 128,256 × 16,384 each, split
/// over 4 by the vocabulary: 525,336,576 on each GPU. Weights in bf16 (2
/// bytes), fp32 master (4) and Adam's two moments (8) sharded over
/// dp × cp = 4.
#[test]
fn llama_405b_stages_as_nvidias_recipe_splits_them() {
    let layer = 796_917_760.0 + 32_768.0 + 16_384.0 / 126.0;
    let outer = 525_336_576.0;
    let stages = stage_estimates(&recipe(Some(15), 8)).unwrap();
    let ranks: Vec<u64> = stages.iter().map(|s| s.0).collect();
    assert_eq!(ranks, [0, 1, 7]);
    let (first, middle, last) = (stages[0].1, stages[1].1, stages[2].1);
    // Weights: 15 layers and the embedding, 16 layers, 15 layers and the
    // output layer.
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b;
    assert!(close(first.params, 2.0 * (15.0 * layer + outer)));
    assert!(close(middle.params, 2.0 * 16.0 * layer));
    assert!(close(last.params, first.params));
    assert_eq!(first.params.round(), 24_959_192_893.0);
    assert_eq!(middle.params.round(), 25_502_421_057.0);
    assert!(close(middle.master_weights, 4.0 * 16.0 * layer / 4.0));
    assert!(close(middle.optimizer_state, 8.0 * 16.0 * layer / 4.0));
    // Activations: A = 533,200,896 bytes a layer a micro-batch (4,096
    // tokens a GPU), times each rank's micro-batches in flight under the
    // interleaved schedule, p + (p − 2·rank − 1)/v (Megatron-Core's
    // warm-up, `get_pp_rank_microbatches`): 8.875, 8.625, 7.125.
    let a = 533_200_896.0;
    assert_eq!(first.activations, 15.0 * 8.875 * a);
    assert_eq!(middle.activations, 16.0 * 8.625 * a);
    assert_eq!(first.activations, 70_982_369_280.0);
    assert_eq!(middle.activations, 73_581_723_648.0);
    assert!(last.activations > 15.0 * 7.125 * a && last.logits == 525_336_576.0);
    // The second rank decides the fit: 162.8 GB at rest.
    assert_eq!(middle.total.round(), 162_840_197_348.0);
    let reported = membudget::detailed::estimate(&recipe(Some(15), 8)).unwrap();
    assert_eq!(reported, middle);
    // Evenly, 126 layers do not split over 8 × 8 chunks: Megatron refuses
    // it, and so does the model.
    let e = membudget::detailed::estimate(&recipe(None, 8)).unwrap_err();
    assert!(
        e.to_string()
            .contains("divisible by stages × virtual stages"),
        "{e}"
    );
}

/// Under plain 1F1B (vp 1) the even split the model prices without the
/// flags puts ⌈126 / 8⌉ = 16 layers and the average stage's states
/// ((embedding + output layer + 126 layers) / 8) on every stage, and the
/// first holds 8 micro-batches: 157.0 GB. The recipe's split puts 15 layers
/// and the embedding there (151.3 GB), 16 layers with 7 in flight on the
/// second (149.0 GB).
#[test]
fn the_uneven_split_lightens_the_first_stage() {
    let layer = 796_917_760.0 + 32_768.0 + 16_384.0 / 126.0;
    let outer = 525_336_576.0;
    let a = 533_200_896.0;
    let even = stage_estimates(&recipe(None, 1)).unwrap();
    assert_eq!(even.len(), 1);
    let even = even[0].1;
    assert_eq!(
        even.params,
        2.0 * (2.0 * outer + 126.0 * (layer - 16_384.0 / 126.0) + 16_384.0) / 8.0
    );
    assert_eq!(even.params, 25_366_614_016.0);
    assert_eq!(even.activations, 16.0 * 8.0 * a);
    assert_eq!(even.total, 157_032_863_744.0);
    let uneven = stage_estimates(&recipe(Some(15), 1)).unwrap();
    let (first, middle) = (uneven[0].1, uneven[1].1);
    assert_eq!(first.activations, 15.0 * 8.0 * a);
    assert_eq!(middle.activations, 16.0 * 7.0 * a);
    assert_eq!(first.total.round(), 151_341_282_645.0);
    assert_eq!(middle.total.round(), 148_976_974_052.0);
    assert!(first.total < even.total);
}

fn llama_8b_pp2(first: Option<u64>, last: Option<u64>) -> DetailedConfig {
    let mut c = DetailedConfig::new(preset("llama-3.1-8b").unwrap().arch, 4096, 16);
    c.micro_batch = Some(1);
    c.attention = AttentionKernel::Flash;
    c.dropout = false;
    c.parallel.pp = 2;
    (c.parallel.first_stage_layers, c.parallel.last_stage_layers) = (first, last);
    c
}

/// The step is paced by the slowest stage (Narayanan et al. 2021, §2.2):
/// with 16 + 16 layers of Llama-3.1-8B over pp 2 the last stage (its
/// layers and the loss) sets it, exactly as the even split; with 24 + 8
/// the first (24 layers, no loss), whose layers' work is 1.5 times 16's;
/// with 8 + 24 the last, 24 layers and the loss. The loss's work H is the
/// same in both: 8+24 − 24+8 = 16+16 − (24+8)/1.5. The bubble is (p − 1)
/// of the slowest stage's micro-batch.
#[test]
fn the_slowest_stage_sets_the_pace() {
    let h100 = Cluster::new(gpu("h100-sxm").unwrap(), 8);
    let eff = Efficiency::for_gpu(&h100.gpu);
    let at = |c: &DetailedConfig| step_time(c, &h100, &eff);
    let even = at(&llama_8b_pp2(None, None));
    let same = at(&llama_8b_pp2(Some(16), Some(16)));
    assert!((same.step_s - even.step_s).abs() <= 1e-12 * even.step_s);
    let front = at(&llama_8b_pp2(Some(24), Some(8)));
    let back = at(&llama_8b_pp2(Some(8), Some(24)));
    let head = back.parts.matmul - front.parts.matmul;
    let head_again = same.parts.matmul - front.parts.matmul / 1.5;
    assert!(
        head > 0.0 && (head - head_again).abs() <= 1e-9 * head,
        "{head} {head_again}"
    );
    assert!(front.step_s > even.step_s && back.step_s > front.step_s);
    // 16 micro-batches a step: the bubble is one of the slowest stage's.
    for s in [&front, &back] {
        let stage = (s.parts.matmul + s.parts.attention + s.parts.memory_bound) / 16.0;
        assert!(
            (s.parts.bubble - stage).abs() <= 1e-9 * stage,
            "{:?}",
            s.parts
        );
    }
}

/// What Megatron-Core refuses is refused in words.
#[test]
fn splits_megatron_refuses_are_refused() {
    use membudget::detailed::{estimate, Framework};
    let refused = |c: DetailedConfig| estimate(&c).unwrap_err().to_string();
    let e = refused(llama_8b_pp2(Some(20), Some(20)));
    assert!(e.contains("40 of the model's 32"), "{e}");
    let mut c = llama_8b_pp2(Some(7), None);
    c.parallel.pp = 4;
    assert!(refused(c).contains("layers left (25) must divide evenly over the stages left (3)"));
    let mut c = llama_8b_pp2(Some(16), None);
    c.parallel.pp = 1;
    assert!(refused(c).contains("give --pp 2 or more"));
    // torchtitan's split (`_generate_llm_fqn_per_model_part`: the
    // embedding and the output each weigh a layer) is of the same form
    // under FSDP2: Llama 3.1 8B's 32 layers over 2 stages are 16 + 16; over
    // 4 stages 8, 9, 8, 7 (the extra layers go to the early stages) is
    // not, and the middle rule refuses it in words.
    let mut c = llama_8b_pp2(Some(16), Some(16));
    c.framework = Framework::Fsdp2 {
        reshard_after_forward: true,
    };
    c.parallel.zero = 3;
    if let Err(e) = estimate(&c) {
        panic!("{e}");
    }
    c.parallel.pp = 4;
    (c.parallel.first_stage_layers, c.parallel.last_stage_layers) = (Some(8), Some(7));
    assert!(refused(c).contains("layers left (17) must divide evenly over the stages left (2)"));
    // pp 4, vp 2: 4 + 4 leave 24 over 2 stages, 12 each, which 2 divides;
    // 5 + 5 leave 22, 11 each, which it does not.
    let mut c = llama_8b_pp2(Some(4), Some(4));
    (c.parallel.pp, c.parallel.vp, c.batch) = (4, 2, 16);
    assert!(estimate(&c).is_ok());
    (c.parallel.first_stage_layers, c.parallel.last_stage_layers) = (Some(5), Some(5));
    assert!(refused(c).contains("middle stage's layers (11) must divide by the virtual stages (2)"));
}
