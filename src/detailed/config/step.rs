//! Which optimizer step is walked, and how AdamW's update runs: the
//! options the timeline takes beyond the configuration.

/// Which optimizer step is modelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The first: the optimizer state is created during `optimizer.step()`.
    First,
    /// Any later one: the optimizer state lives through the whole step.
    Later,
}

/// How AdamW's update runs (it decides the update's temporaries).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdamImpl {
    /// One parameter at a time (`foreach=False`, PyTorch's default off CUDA).
    ForLoop,
    /// All parameters at once (`foreach=True`, PyTorch's default on CUDA).
    Foreach,
    /// A fused kernel (`fused=True`, apex or Transformer Engine FusedAdam).
    Fused,
}

/// What the timeline models beyond the configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepOptions {
    /// Which step.
    pub step: Step,
    /// AdamW's implementation; `None`: the default of the profile and device
    /// (fused kernels for the `fused` profile, `foreach` for `hf` on CUDA,
    /// the per-parameter loop for `hf` on the CPU).
    pub adam: Option<AdamImpl>,
}

impl Default for StepOptions {
    fn default() -> Self {
        Self {
            step: Step::Later,
            adam: None,
        }
    }
}
