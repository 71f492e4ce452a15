//! Bytes per value of what a step keeps: shared by every part that prices
//! a tensor, so that none of them takes it from another.

use crate::detailed::config::{BaseQuant, DetailedConfig, Precision, Profile, QuantPath};

/// Bytes per activation value: 4 in fp32, 2 otherwise. A quantized base
/// in the "hf" profile computes in fp32: PEFT's `prepare_model_for_kbit_training`
/// casts the embedding, norms and output layer to fp32, so the residual
/// stream and everything computed from it is fp32 (bitsandbytes returns
/// its matmuls in the input's dtype); measured in `tests/fixtures/lora_measured.tsv`.
/// The other quantization paths leave those weights in the model's dtype
/// and compute in it (`tests/fixtures/qlora_paths_measured.tsv`).
pub(crate) fn act_bytes(cfg: &DetailedConfig) -> f64 {
    let kbit = cfg.profile == Profile::Hf
        && cfg.base_quant != BaseQuant::None
        && cfg.quant_path == QuantPath::Peft;
    if cfg.precision == Precision::Fp32 || kbit {
        4.0
    } else {
        2.0
    }
}
