//! GRPO's generation settings: completion length, completions per prompt,
//! and a colocated vLLM engine (what it generates is priced in
//! [`crate::detailed::memory::grpo`]).

/// What GRPO generates per prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rollout {
    /// Tokens of each completion (`max_completion_length`, every
    /// completion assumed to run to it); the sequence is prompt +
    /// completion.
    pub completion: u64,
    /// Completions per prompt, G (`num_generations`): it must divide the
    /// batch.
    pub generations: u64,
    /// Generation by a vLLM engine colocated on the training GPUs
    /// (`use_vllm=True`, `vllm_mode="colocate"`) instead of `model.generate`.
    pub vllm: Option<Vllm>,
}

/// A colocated vLLM engine (TRL's `VLLMGeneration`, `vllm_generation.py`):
/// `LLM(gpu_memory_utilization=f)` takes that fraction of the card for its
/// own copy of the weights, its activations and its paged key/value cache,
/// whatever the step needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vllm {
    /// Bytes it reserves: `vllm_gpu_memory_utilization` (TRL's default 0.3)
    /// × the card's memory.
    pub reserved: u64,
    /// `vllm_enable_sleep_mode`: after generating, `llm.sleep(level=2)`
    /// discards its weights and cache, so training runs without the
    /// reservation (woken for the next rollout).
    pub sleep: bool,
}

impl Default for Rollout {
    /// TRL's defaults: 512 tokens, 8 completions per prompt.
    fn default() -> Self {
        Self {
            completion: 512,
            generations: 8,
            vllm: None,
        }
    }
}

impl Rollout {
    /// Completion tokens in a sequence of `seq`: at most seq − 1 (a prompt
    /// has at least one token).
    pub fn completion_tokens(&self, seq: u64) -> u64 {
        self.completion.clamp(1, seq.saturating_sub(1).max(1))
    }
}
