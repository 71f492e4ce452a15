//! Parallelism: how data, tensor, sequence and pipeline parallelism and
//! ZeRO split the model states and activations across GPUs.

use crate::detailed::model::Architecture;

/// Parallelism, per GPU (in `--json` as `inputs.parallel`, these names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Parallelism {
    /// Data-parallel replicas, N_d.
    pub dp: u64,
    /// ZeRO stage 0–3 (Rajbhandari et al. 2020, §5).
    pub zero: u8,
    /// Tensor-parallel degree, t (Shoeybi et al. 2019).
    pub tp: u64,
    /// Sequence parallelism with tensor parallelism (Korthikanti §4.2.2).
    pub sp: bool,
    /// Pipeline stages, p (1F1B schedule).
    pub pp: u64,
    /// Virtual stages (model chunks) per pipeline GPU, v: 1 for 1F1B, more
    /// for the interleaved 1F1B schedule (Narayanan et al. 2021, §2.2.2).
    pub vp: u64,
    /// Expert parallelism: routed experts spread over this many GPUs.
    pub ep: u64,
    /// Expert tensor parallelism: each expert split over this many GPUs.
    pub etp: u64,
    /// Context parallelism: each sequence split over this many GPUs, which
    /// pass the keys and values around a ring (Megatron-Core's
    /// `--context-parallel-size`; Liu et al. 2023, "Ring Attention").
    #[serde(default = "one")]
    pub cp: u64,
    /// How context parallelism exchanges the sequence.
    #[serde(default)]
    pub cp_comm: CpComm,
    /// The pipeline schedule (with pp > 1).
    #[serde(default)]
    pub schedule: Schedule,
    /// Tensor parallelism on the layers only: the embedding, the output
    /// layer and the logits whole on every tensor-parallel rank, as a
    /// DTensor plan over the decoder layers leaves them (measured,
    /// `tests/fixtures/tp_measured.tsv`); with `sp`, torchtitan's sequence
    /// parallelism, whose column-wise projections save their gathered
    /// inputs whole (`tp_sp_measured.tsv`). False: Megatron's
    /// vocabulary-parallel embedding, output layer and loss.
    #[serde(default)]
    pub tp_layers_only: bool,
    /// Whose tensor-parallel plan shards the embedding, the output layer
    /// and the logits ([`TpPlan`]); `tp_layers_only` above is
    /// [`TpPlan::Layers`] and wins ([`Parallelism::plan`]). Absent from
    /// `--json` when Megatron's.
    #[serde(default, skip_serializing_if = "TpPlan::is_megatron")]
    pub tp_plan: TpPlan,
    /// Hybrid sharding (PyTorch FSDP's `HYBRID_SHARD`, FSDP2 over a 2-D
    /// mesh, torchtitan's `data_parallel_shard_degree`): ZeRO shards over
    /// groups of this many data-parallel GPUs, and the dp / n groups
    /// replicate, all-reducing their gradient shards. None: one group of
    /// all dp.
    #[serde(default)]
    pub dp_shard: Option<u64>,
    /// Layers on the first pipeline stage when it is not an even share
    /// (Megatron-LM's `--decoder-first-pipeline-num-layers`,
    /// `num_layers_in_first_pipeline_stage`); the stages in between share
    /// what the first and last leave evenly
    /// (`megatron/core/transformer/transformer_block.py`,
    /// `get_num_layers_to_build`). Absent from `--json` when even.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_stage_layers: Option<u64>,
    /// Layers on the last pipeline stage when it is not an even share
    /// (`--decoder-last-pipeline-num-layers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_stage_layers: Option<u64>,
}

/// The layers of an uneven pipeline split's stages
/// ([`Parallelism::stage_split`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StageSplit {
    /// The first stage's (it also holds the embedding).
    pub first: u64,
    /// Each stage's between the first and the last.
    pub middle: u64,
    /// The last stage's (it also holds the output layer and the loss).
    pub last: u64,
}

/// A tensor-parallel plan: how the input embedding, the output layer and
/// the logits are split over the tensor-parallel GPUs (the decoder layers
/// are split alike in all: q, k, v, gate and up column-wise, o and down
/// row-wise).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TpPlan {
    /// Megatron's vocabulary-parallel embedding, output layer and
    /// cross-entropy (Shoeybi et al. 2019, §3; Megatron-Core's
    /// `VocabParallelEmbedding`, `ColumnParallelLinear` with
    /// `gather_output=False`, `vocab_parallel_cross_entropy`).
    #[default]
    Megatron,
    /// transformers' `tp_plan="auto"` for Llama (5.25:
    /// `models/llama/configuration_llama.py` `base_model_tp_plan`, the
    /// layers; `distributed/mixin.py` adds `"embed_tokens":
    /// "embedding_rowwise"` to any plan, `EmbeddingParallel(shard_dim=0)`
    /// in `distributed/tensor_parallel.py`, its partial lookups all-reduced
    /// whole; `modeling_llama.py` `LlamaForCausalLM._tp_plan`
    /// `{"lm_head": "colwise_gather_output"}`, `ColwiseParallel(
    /// output_layouts=Replicate())`): the embedding and the output layer
    /// split over the vocabulary, the logits all-gathered whole on every
    /// GPU for the loss. No sequence parallelism.
    Hf,
    /// torchtitan's `apply_tp` (`models/llama3/infra/parallelize.py`):
    /// `tok_embeddings` `RowwiseParallel(input_layouts=Replicate(),
    /// output_layouts=Shard(1))`, `norm` `SequenceParallel()`, `output`
    /// `ColwiseParallel(input_layouts=Shard(1), output_layouts=
    /// Replicate())`: embedding and output layer split over the
    /// vocabulary, the logits gathered whole on every GPU; always with
    /// sequence parallelism on the layers.
    Torchtitan,
    /// torchtitan with `loss_parallel`: the output layer's
    /// `output_layouts=Shard(-1)`, `use_local_output=False`, and the
    /// cross-entropy under `torch.distributed.tensor.parallel.loss_parallel()`:
    /// the logits stay split over the vocabulary.
    LossParallel,
    /// A DTensor plan over the decoder layers only (`--tp-layers-only`):
    /// the embedding, output layer and logits whole on every GPU.
    Layers,
}

impl TpPlan {
    /// Every plan, in the order the page lists them.
    pub const ALL: [TpPlan; 5] = [
        TpPlan::Megatron,
        TpPlan::Hf,
        TpPlan::Torchtitan,
        TpPlan::LossParallel,
        TpPlan::Layers,
    ];

    /// Its name, as the command line and the address spell it.
    pub fn name(self) -> &'static str {
        match self {
            TpPlan::Megatron => "megatron",
            TpPlan::Hf => "hf",
            TpPlan::Torchtitan => "torchtitan",
            TpPlan::LossParallel => "loss-parallel",
            TpPlan::Layers => "layers",
        }
    }

    /// Megatron's (serde leaves it out of `--json`).
    pub fn is_megatron(&self) -> bool {
        *self == TpPlan::Megatron
    }
}

impl std::str::FromStr for TpPlan {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.to_ascii_lowercase();
        TpPlan::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                "tensor-parallel plan must be megatron, hf, torchtitan, loss-parallel or layers"
                    .into()
            })
    }
}

/// A pipeline schedule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Schedule {
    /// One forward, one backward (Narayanan et al. 2021, §2.2; interleaved
    /// with virtual stages, §2.2.2).
    #[default]
    #[serde(rename = "1f1b")]
    OneFOneB,
    /// Zero Bubble's ZB-H1 (Qi et al. 2024, "Zero Bubble Pipeline
    /// Parallelism", §3.1): backward split into the input's gradient (B)
    /// and the weights' (W), W deferred into the bubble; the bubble falls
    /// to (p − 1)(T_F + T_B − T_W), a third of 1F1B's when the three are
    /// equal, with the same peak activation memory as 1F1B.
    ZbH1,
}

impl Schedule {
    /// Its name, as the command line and the address spell it.
    pub fn name(self) -> &'static str {
        match self {
            Schedule::OneFOneB => "1f1b",
            Schedule::ZbH1 => "zb-h1",
        }
    }
}

impl std::str::FromStr for Schedule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "1f1b" => Ok(Schedule::OneFOneB),
            "zb-h1" => Ok(Schedule::ZbH1),
            _ => Err("schedule must be 1f1b or zb-h1".into()),
        }
    }
}

/// How context parallelism exchanges the sequence, as Megatron-Core's
/// `--cp-comm-type` names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CpComm {
    /// Ring attention: keys and values passed around the GPUs while each
    /// works on the chunk in hand, overlapped with attention (Liu et al.
    /// 2023; Transformer Engine's `AttnFuncWithCPAndKVP2P`).
    #[default]
    P2p,
    /// All-to-all, DeepSpeed-Ulysses (Jacobs et al. 2023, §3.1): before
    /// attention the queries, keys and values are exchanged so that each
    /// GPU holds the whole sequence for heads / cp of the heads, and the
    /// output is exchanged back; four all-to-alls forward and four
    /// backward, not overlapped (Transformer Engine's
    /// `AttnFuncWithCPAndQKVOA2A`). The heads must divide by cp.
    A2a,
}

impl CpComm {
    /// Its name, as the command line and the address spell it.
    pub fn name(self) -> &'static str {
        match self {
            CpComm::P2p => "p2p",
            CpComm::A2a => "a2a",
        }
    }
}

impl std::str::FromStr for CpComm {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "p2p" => Ok(CpComm::P2p),
            "a2a" => Ok(CpComm::A2a),
            _ => Err("context parallelism's communication must be p2p or a2a".into()),
        }
    }
}

/// Serde's default for fields added later (documents without them).
fn one() -> u64 {
    1
}

impl Default for Parallelism {
    fn default() -> Self {
        Self {
            dp: 1,
            zero: 0,
            tp: 1,
            sp: false,
            pp: 1,
            vp: 1,
            ep: 1,
            etp: 1,
            cp: 1,
            cp_comm: CpComm::P2p,
            schedule: Schedule::OneFOneB,
            tp_layers_only: false,
            tp_plan: TpPlan::Megatron,
            dp_shard: None,
            first_stage_layers: None,
            last_stage_layers: None,
        }
    }
}

impl Parallelism {
    /// ZeRO's divisor for a state that stage `stage` partitions: N_d from
    /// that stage on, 1 before (Rajbhandari et al. 2020, §5.1: optimizer
    /// state from stage 1, gradients from 2, parameters from 3).
    pub fn zero_divisor(&self, stage: u8) -> f64 {
        if self.zero >= stage {
            self.shard_group() as f64
        } else {
            1.0
        }
    }

    /// The tensor-parallel plan in force: `tp_layers_only` is
    /// [`TpPlan::Layers`].
    pub fn plan(&self) -> TpPlan {
        if self.tp_layers_only {
            TpPlan::Layers
        } else {
            self.tp_plan
        }
    }

    /// Sets the plan: [`TpPlan::Layers`] as `tp_layers_only`, so that its
    /// `--json` stays as it was before the other plans.
    pub fn set_plan(&mut self, plan: TpPlan) {
        self.tp_layers_only = plan == TpPlan::Layers;
        self.tp_plan = if plan == TpPlan::Layers {
            TpPlan::Megatron
        } else {
            plan
        };
    }

    /// Divisor of the input embedding's table: t where the plan splits it
    /// over the vocabulary (Megatron's `VocabParallelEmbedding`,
    /// transformers' `embedding_rowwise`, torchtitan's row-wise
    /// `tok_embeddings`: all but the layers-only plan).
    pub fn embedding_divisor(&self) -> f64 {
        self.head_divisor()
    }

    /// Divisor of the output layer's weight: t where the plan splits it
    /// column-wise over the vocabulary (all but the layers-only plan).
    pub fn head_divisor(&self) -> f64 {
        match self.plan() {
            TpPlan::Layers => 1.0,
            _ => self.tp.max(1) as f64,
        }
    }

    /// Divisor of the logits and the loss's tensors: t where they stay
    /// split over the vocabulary (Megatron's vocabulary-parallel
    /// cross-entropy, `loss_parallel`), 1 where the plan gathers them
    /// whole on every GPU (`Replicate()` output layouts) or never splits
    /// them.
    pub fn logits_divisor(&self) -> f64 {
        match self.plan() {
            TpPlan::Megatron | TpPlan::LossParallel => self.tp.max(1) as f64,
            _ => 1.0,
        }
    }

    /// Whether the decoder layers are split by a DTensor plan (every plan
    /// but Megatron's): with sequence parallelism the column-wise
    /// projections save their gathered inputs whole.
    pub fn dtensor_layers(&self) -> bool {
        self.plan() != TpPlan::Megatron
    }

    /// The GPUs that hold the same weights and reduce their gradients
    /// together: dp, times cp (Megatron-Core reduces gradients and shards
    /// the distributed optimizer over the data-parallel group with context
    /// parallelism, `parallel_state.get_data_parallel_group(with_context_parallel=True)`).
    pub fn data_group(&self) -> u64 {
        self.dp.max(1) * self.cp.max(1)
    }

    /// The GPUs ZeRO shards over: the data group, or under hybrid
    /// sharding its groups of `dp_shard` (times cp, which torchtitan
    /// flattens into the shard dimension).
    pub fn shard_group(&self) -> u64 {
        self.dp_shard
            .map_or(self.data_group(), |n| n.max(1) * self.cp.max(1))
    }

    /// The groups that replicate the sharded states under hybrid sharding
    /// and all-reduce their gradient shards: dp / dp_shard (1 without it).
    pub fn replicas(&self) -> u64 {
        self.data_group() / self.shard_group().max(1)
    }

    /// The expert-data-parallel group: GPUs holding the same experts,
    /// dp·cp·tp / (ep·etp). Megatron-LM lays experts out as
    /// world = pp · ep · etp · edp beside world = pp · tp · cp · dp
    /// (`megatron/core/parallel_state.py`, `initialize_model_parallel`),
    /// so the expert group is carved from data × context × tensor
    /// parallelism.
    pub fn expert_dp(&self) -> f64 {
        (self.data_group() * self.tp) as f64 / (self.ep * self.etp).max(1) as f64
    }

    /// ZeRO's divisor for the routed experts' states: the expert-data-parallel
    /// group from stage `stage` on (Megatron's distributed optimizer shards
    /// expert state over that group).
    pub fn expert_zero_divisor(&self, stage: u8) -> f64 {
        if self.zero >= stage {
            self.expert_dp()
        } else {
            1.0
        }
    }

    /// Layers on one pipeline stage, ⌈L / p⌉ (Narayanan et al. 2021); under
    /// an uneven split the most any stage holds ([`Parallelism::stage_split`]).
    pub fn stage_layers(&self, arch: &Architecture) -> f64 {
        match self.stage_split(arch) {
            Some(s) => s.first.max(s.middle).max(s.last) as f64,
            None => (arch.layers as f64 / self.pp as f64).ceil(),
        }
    }

    /// The layers of the first, the middle and the last pipeline stages
    /// under an uneven split (`first_stage_layers` or `last_stage_layers`
    /// given, pp ≥ 2), as Megatron-Core builds them
    /// (`megatron/core/transformer/transformer_block.py`,
    /// `get_num_layers_to_build`, 2026): the layers the first and last
    /// stages do not take, split evenly over the stages in between; a stage
    /// not given takes the middle's share. `None` for an even split. The
    /// counts are whole when [`check`](crate::detailed::memory::check)
    /// passes.
    pub fn stage_split(&self, arch: &Architecture) -> Option<StageSplit> {
        if self.pp < 2 || (self.first_stage_layers.is_none() && self.last_stage_layers.is_none()) {
            return None;
        }
        let given = self
            .first_stage_layers
            .iter()
            .chain(&self.last_stage_layers);
        let (taken, count) = given.fold((0u64, 0u64), |(t, n), &l| (t.saturating_add(l), n + 1));
        let left = self.pp - count;
        let middle = match left {
            0 => 0,
            _ => arch.layers.saturating_sub(taken) / left,
        };
        Some(StageSplit {
            first: self.first_stage_layers.unwrap_or(middle),
            middle,
            last: self.last_stage_layers.unwrap_or(middle),
        })
    }

    /// Micro-batches whose activations pipeline rank `rank` (0-based)
    /// holds at its peak, for `micro_batches` per step: under 1F1B
    /// min(m, p − rank), the warm-up's forwards and the first backward's
    /// (Narayanan et al. 2021, §2.2.1); under the interleaved schedule its
    /// 2·(p − rank − 1) + (v − 1)·p warm-up chunks and one more, v chunks
    /// a micro-batch: p + (p − 2·rank − 1)/v (Megatron-Core's
    /// `get_pp_rank_microbatches`, `pipeline_parallel/schedules.py`, 2026,
    /// `microbatch_group_size_per_vp_stage` = p by default). Rank 0 is
    /// [`Parallelism::first_stage_in_flight`].
    pub fn stage_in_flight(&self, rank: u64, micro_batches: u64) -> f64 {
        let (p, r) = (self.pp as f64, rank.min(self.pp.saturating_sub(1)) as f64);
        if self.vp > 1 {
            p + (p - 2.0 * r - 1.0) / self.vp as f64
        } else {
            (p - r).min(micro_batches.max(1) as f64)
        }
    }

    /// Micro-batches whose activations the first pipeline stage holds at
    /// its peak, for `micro_batches` per step: under 1F1B min(m, p) (the
    /// warm-up's forwards before the first backward); under the
    /// interleaved schedule p · (1 + (p − 1)/(p · v)), the extra chunks'
    /// forwards of its longer warm-up — Megatron-LM's
    /// `interleaved_schedule_memory_penalty` and 1F1B discount
    /// (`megatron/training/theoretical_memory_usage.py`,
    /// `compute_activation_memory`).
    pub fn first_stage_in_flight(&self, micro_batches: u64) -> f64 {
        let p = self.pp as f64;
        if self.vp > 1 {
            p * (1.0 + (p - 1.0) / (p * self.vp as f64))
        } else {
            p.min(micro_batches.max(1) as f64)
        }
    }

    /// Divisor of the activations that only sequence parallelism splits
    /// (Korthikanti et al. 2022, §4.2.2): t with it, 1 without.
    pub fn sp_divisor(&self) -> f64 {
        if self.sp {
            self.tp as f64
        } else {
            1.0
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::detailed::{estimate, preset, DetailedConfig, Recompute};

    /// The first stage's layer activations under the interleaved schedule
    /// are 1F1B's times Megatron-LM's penalty 1 + (p − 1)/(p · v), for
    /// GPT-3 175B's shape in Megatron's own set-up (selective recomputation,
    /// sequence parallelism); and 1F1B holds min(m, p) micro-batches.
    #[test]
    fn interleaving_costs_megatrons_penalty() {
        let arch = crate::detailed::Architecture::gpt2(96, 12288, 96, 51200);
        for (p, v) in [(2u64, 2u64), (4, 2), (4, 4), (8, 3), (8, 12)] {
            let mut cfg = DetailedConfig::new(arch, 2048, 64);
            cfg.recompute = Recompute::Selective;
            cfg.parallel.tp = 8;
            cfg.parallel.sp = true;
            cfg.parallel.pp = p;
            cfg.micro_batch = Some(1);
            // m = 64 micro-batches ≥ p: 1F1B holds p of them.
            let plain = estimate(&cfg).unwrap().activations;
            cfg.parallel.vp = v;
            let interleaved = estimate(&cfg).unwrap().activations;
            let penalty = 1.0 + (p as f64 - 1.0) / (p as f64 * v as f64);
            // The embedding's saved input (one micro-batch's in the
            // breakdown) is not multiplied: within 1 %.
            let ratio = interleaved / plain;
            assert!(
                (ratio - penalty).abs() < 0.01,
                "p{p} v{v}: {ratio} vs {penalty}"
            );
        }
        // 1F1B with fewer micro-batches than stages holds only those.
        let mut cfg = DetailedConfig::new(preset("llama-2-7b").unwrap().arch, 2048, 2);
        cfg.parallel.pp = 4;
        cfg.micro_batch = Some(1);
        let two = estimate(&cfg).unwrap().activations;
        cfg.batch = 8;
        let four = estimate(&cfg).unwrap().activations;
        assert!((four / two - 2.0).abs() < 0.05, "{}", four / two);
    }

    /// Context parallelism (flash attention): each GPU keeps the
    /// activations of seq / cp tokens, exactly those of the sequence cut to
    /// seq / cp; ZeRO shards the states over dp × cp; a sequence that 2·cp
    /// does not divide, or eager attention, is refused.
    #[test]
    fn context_parallelism_divides_the_tokens() {
        let arch = preset("llama-3.1-8b").unwrap().arch;
        let mut cfg = DetailedConfig::new(arch, 131072, 1);
        cfg.attention = crate::detailed::AttentionKernel::Flash;
        cfg.dropout = false;
        cfg.recompute = Recompute::Full;
        let mut short = cfg;
        short.seq = 131072 / 8;
        cfg.parallel.cp = 8;
        let (b, s) = (estimate(&cfg).unwrap(), estimate(&short).unwrap());
        assert_eq!(b.activations, s.activations);
        assert_eq!(b.params, s.params);
        assert_eq!(cfg.gpus(), 8);
        cfg.parallel.zero = 3;
        let z = estimate(&cfg).unwrap();
        assert_eq!(z.optimizer_state, s.optimizer_state / 8.0);
        assert_eq!(z.params, s.params / 8.0);
        cfg.seq = 131072 + 8;
        assert!(estimate(&cfg).is_err(), "2·cp must divide the sequence");
        cfg.seq = 131072;
        cfg.attention = crate::detailed::AttentionKernel::Eager;
        assert!(estimate(&cfg).is_err(), "eager attention");
    }

    /// All-to-all context parallelism saves what the ring saves (each GPU's
    /// share of the tokens, every head, or the whole sequence for heads /
    /// cp: the same bytes), holds a different transient, and needs the
    /// heads to divide by cp: Llama-3.1-8B's 8 key/value heads allow cp 8,
    /// not 16.
    #[test]
    fn all_to_all_saves_what_the_ring_saves() {
        use crate::detailed::{timeline, StepOptions};
        let arch = preset("llama-3.1-8b").unwrap().arch;
        let mut ring = DetailedConfig::new(arch, 131072, 1);
        ring.attention = crate::detailed::AttentionKernel::Flash;
        ring.parallel.cp = 8;
        let mut a2a = ring;
        a2a.parallel.cp_comm = super::CpComm::A2a;
        let (r, a) = (estimate(&ring).unwrap(), estimate(&a2a).unwrap());
        assert_eq!(r.activations, a.activations);
        let layer = |c: &DetailedConfig| {
            let t = timeline(c, &StepOptions::default()).unwrap();
            t.events
                .iter()
                .find(|e| e.moment == crate::detailed::Moment::LayerForward(0))
                .unwrap()
                .live
                .transient
        };
        // Local tokens n = 16,384: the ring's two key/value chunks in flight
        // (4·n·1024·2 bytes) against the exchanged q, k, v (n·(4096 + 2·1024)·2).
        let n = 131072.0 / 8.0;
        assert_eq!(
            layer(&a2a) - layer(&ring),
            n * 6144.0 * 2.0 - 4.0 * n * 1024.0 * 2.0
        );
        a2a.parallel.cp = 16;
        assert!(estimate(&a2a).is_err());
        ring.parallel.cp = 16;
        assert!(estimate(&ring).is_ok());
    }
}
