//! PENDING MAPPINGS: the one table of trainer keys whose settings other
//! work is adding (issues 34 and 39). Each row names the future flag; while
//! `active` is false the readers list the key as ignored ("… is not priced
//! yet"). After that flag lands, set `active: true` in its row and the
//! readers pass the key on as that flag, with no other change.

/// A setting being added elsewhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pending {
    /// `--loss chunked|liger|cce`: chunked, Liger's fused or Apple's cut
    /// cross-entropy instead of full logits.
    Loss,
    /// `--loss-chunks N`: the chunked loss's chunks.
    LossChunks,
    /// `--impl liger`: Liger's kernels (RMSNorm, RoPE, SwiGLU).
    ImplLiger,
    /// `--optimizer-in-backward`: each parameter stepped as its gradient lands.
    OptimizerInBackward,
    /// `--lora-dtype bf16|fp32`: the adapters' storage.
    LoraDtype,
    /// `--lora-dropout P`: dropout on the adapters' input.
    LoraDropout,
    /// `--lora-targets …,lm_head,embed`: adapters on the output layer or
    /// the embedding.
    LoraTargetsOuter,
    /// `--overlap-comm true|false`: DeepSpeed's overlap_comm buffers.
    OverlapComm,
    /// `--sub-group-size N`: DeepSpeed's optimizer sub-groups.
    SubGroupSize,
    /// `--param-persistence-threshold N`: ZeRO-3's persistent small weights.
    ParamPersistenceThreshold,
}

/// A row of the pending table.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    /// Which setting.
    pub what: Pending,
    /// The flag it will be.
    pub flag: &'static str,
    /// What it prices, for the ignored reason.
    pub feature: &'static str,
    /// Whether the flag exists on this branch: switch on after merging.
    pub active: bool,
}

/// THE pending table: edit `active` here, nowhere else.
pub const PENDING: &[Row] = &[
    Row {
        what: Pending::Loss,
        flag: "--loss",
        feature: "the loss kernel (chunked, Liger, cut cross-entropy)",
        active: true,
    },
    Row {
        what: Pending::LossChunks,
        flag: "--loss-chunks",
        feature: "the chunked loss's chunk count",
        active: true,
    },
    Row {
        what: Pending::ImplLiger,
        flag: "--impl",
        feature: "Liger's kernels",
        active: true,
    },
    Row {
        what: Pending::OptimizerInBackward,
        flag: "--optimizer-in-backward",
        feature: "the optimizer step in backward",
        active: true,
    },
    Row {
        what: Pending::LoraDtype,
        flag: "--lora-dtype",
        feature: "the adapters' dtype",
        active: true,
    },
    Row {
        what: Pending::LoraDropout,
        flag: "--lora-dropout",
        feature: "dropout on LoRA's input",
        active: true,
    },
    Row {
        what: Pending::LoraTargetsOuter,
        flag: "--lora-targets",
        feature: "LoRA on the output layer or embedding",
        active: true,
    },
    Row {
        what: Pending::OverlapComm,
        flag: "--overlap-comm",
        feature: "DeepSpeed's overlap_comm buffers",
        active: true,
    },
    Row {
        what: Pending::SubGroupSize,
        flag: "--sub-group-size",
        feature: "DeepSpeed's optimizer sub-groups",
        active: true,
    },
    Row {
        what: Pending::ParamPersistenceThreshold,
        flag: "--param-persistence-threshold",
        feature: "ZeRO-3's persistence threshold",
        active: true,
    },
];

/// The row of `what`.
pub fn lookup(what: Pending) -> Row {
    PENDING
        .iter()
        .copied()
        .find(|r| r.what == what)
        .unwrap_or(Row {
            what,
            flag: "",
            feature: "this setting",
            active: false,
        })
}
