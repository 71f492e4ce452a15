//! A quantized frozen base (QLoRA, LLM.int8()): the bytes of its weights in
//! bitsandbytes' storage format, and the 16-bit copy of one weight that the
//! layer being computed makes.
//!
//! bitsandbytes quantizes the projections of every layer (`nn.Linear`, and
//! GPT-2's `Conv1D`, replaced by `Linear4bit`/`Linear8bitLt` in
//! `transformers`' `integrations/bitsandbytes.py`); the embedding, the output
//! layer (`llm_int8_skip_modules` defaults to it), the norms and the biases
//! stay unquantized. Each quantized tensor of n = in · out weights stores:
//!
//! - **NF4** (`bitsandbytes.functional.quantize_4bit`, blocksize 64; Dettmers
//!   et al. 2023, "QLoRA", §3): two 4-bit codes per byte, ⌈n/2⌉ bytes; one
//!   fp32 absmax per block of 64, ⌈n/64⌉ · 4 bytes; the 16-value NF4 code
//!   table (64 bytes) in its `QuantState`.
//! - **NF4 with double quantization** (`compress_statistics=True`, QLoRA §3
//!   "Double Quantization": 8/64 + 32/(64·256) = 0.127 bits per parameter
//!   for the constants instead of 32/64 = 0.5): the absmax, less their mean
//!   (one fp32 `offset`), quantized to one byte each in blocks of 256, with
//!   one fp32 absmax per 256 and the 256-value fp32 dynamic map (1,024
//!   bytes; bitsandbytes 0.50 keeps a copy in each tensor's `state2`).
//! - **int8** (`Int8Params`, LLM.int8(), Dettmers et al. 2022): one byte per
//!   weight and one fp32 scale per output row (`SCB`).
//!
//! Un-quantized weights: PEFT's `prepare_model_for_kbit_training` (the
//! QLoRA recipe's first call) casts every 16-bit parameter that is not
//! quantized to fp32, so they take 4 bytes each.
//!
//! How a trainer reaches that base ([`QuantPath`]) changes two things:
//!
//! - **the unquantized weights' dtype**: fp32 after PEFT's
//!   `prepare_model_for_kbit_training` (`Peft`), the model's own dtype
//!   otherwise (Lightning/litgpt's `Linear4bit`, torchtune, FSDP-QLoRA);
//! - **the storage of a 4-bit tensor**: bitsandbytes' (above; FSDP-QLoRA's
//!   `quant_storage=bfloat16` views the same packed bytes as bf16:
//!   `backends/default/ops.py` `quantize_4bit`, `packed.view(quant_storage)`),
//!   or torchao's `NF4Tensor` (torchao 0.18,
//!   `quantization/quantize_/workflows/nf4/nf4_tensor.py`, `to_nf4` with
//!   torchtune's defaults, block 64 and scaler block 256): the packed codes
//!   (⌈n/2⌉ bytes), one int8 scaler per block of 64 (`quantized_scalers`),
//!   one `quantization_factor` per 256 scalers and one `scaler_mean`, both in
//!   the weight's dtype, and the 16-value NF4 table in that dtype
//!   (`double_quantize_scalers`, `from_tensor`).
//!
//! Checked to the byte against bitsandbytes 0.50 quantizing real
//! `transformers` models on the CPU (`tests/fixtures/qlora_measured.tsv`,
//! `tests/qlora_vs_measured.rs`).

use crate::detailed::config::{BaseQuant, QuantPath};
use crate::detailed::model::{Architecture, Family};

/// The projections of one layer, as (in, out) pairs.
pub fn layer_projections(a: &Architecture) -> Vec<(u64, u64)> {
    let (h, f) = (a.hidden, a.ffn);
    match (a.family, a.mla) {
        (Family::Gpt2, _) => vec![(h, a.qkv_width()), (h, h), (h, f), (f, h)],
        (Family::Llama, Some(m)) => {
            let qk = m.nope_dim + m.rope_dim;
            let mut p = if m.q_rank > 0 {
                vec![(h, m.q_rank), (m.q_rank, a.heads * qk)]
            } else {
                vec![(h, a.heads * qk)]
            };
            p.extend([
                (h, m.kv_rank + m.rope_dim),
                (m.kv_rank, a.heads * (m.nope_dim + m.v_dim)),
                (a.heads * m.v_dim, h),
            ]);
            p.extend([(h, f), (h, f), (f, h)]);
            p
        }
        (Family::Llama, None) => vec![
            (h, a.q_dim()),
            (h, a.kv_dim()),
            (h, a.kv_dim()),
            (a.o_dim(), h),
            (h, f),
            (h, f),
            (f, h),
        ],
    }
}

/// Bytes of one quantized tensor of `inp × out` weights (module docs).
pub fn tensor_bytes(quant: BaseQuant, inp: u64, out: u64) -> u64 {
    let n = inp * out;
    let blocks = n.div_ceil(64);
    match quant {
        BaseQuant::None => 0,
        BaseQuant::Nf4 {
            double_quant: false,
        } => n.div_ceil(2) + 4 * blocks + 64,
        BaseQuant::Nf4 { double_quant: true } => {
            n.div_ceil(2) + blocks + 4 * blocks.div_ceil(256) + 4 + 64 + 1024
        }
        BaseQuant::Int8 => n + 4 * out,
    }
}

/// The quantized base: (bytes of all quantized tensors, weights left
/// unquantized). `None` for an unquantized base.
pub fn quantized_base(a: &Architecture, quant: BaseQuant) -> Option<(u64, u64)> {
    if quant == BaseQuant::None {
        return None;
    }
    let projections = layer_projections(a);
    let per_layer: u64 = projections
        .iter()
        .map(|&(i, o)| tensor_bytes(quant, i, o))
        .sum();
    let quantized_weights: u64 = projections.iter().map(|&(i, o)| i * o).sum();
    let rest = a.params() - a.layers * quantized_weights;
    Some((a.layers * per_layer, rest))
}

/// Bytes of one `inp × out` tensor as torchao's `NF4Tensor` stores it,
/// its dtype `wb` bytes per value (module docs).
pub fn torchao_tensor_bytes(inp: u64, out: u64, wb: u64) -> u64 {
    let n = inp * out;
    let blocks = n.div_ceil(64);
    n.div_ceil(2) + blocks + wb * blocks.div_ceil(256) + wb + 16 * wb
}

/// The quantized base as `path` stores it, the unquantized weights `wb`
/// bytes each in the model's dtype: (bytes of all quantized tensors with
/// their state, bytes of the weights left unquantized). `None` for an
/// unquantized base.
pub fn quantized_base_on(
    a: &Architecture,
    quant: BaseQuant,
    path: QuantPath,
    wb: u64,
) -> Option<(u64, u64)> {
    let (bnb, rest) = quantized_base(a, quant)?;
    let quantized = match path {
        QuantPath::Torchao => {
            a.layers
                * layer_projections(a)
                    .iter()
                    .map(|&(i, o)| torchao_tensor_bytes(i, o, wb))
                    .sum::<u64>()
        }
        _ => bnb,
    };
    // `prepare_model_for_kbit_training` casts the rest to fp32.
    let rest_bytes = if path == QuantPath::Peft { 4 } else { wb };
    Some((quantized, rest * rest_bytes))
}

/// The bytes of the quantization state alone (everything but the packed
/// codes) of the quantized base: what FSDP-QLoRA keeps whole on every rank,
/// since `QuantState` is an attribute of the module, not a parameter FSDP
/// flattens (bitsandbytes `nn/modules.py`, `Linear4bit` and
/// `fix_4bit_weight_quant_state_from_module`).
pub fn quant_state_bytes(a: &Architecture, quant: BaseQuant) -> u64 {
    let per_layer: u64 = layer_projections(a)
        .iter()
        .map(|&(i, o)| tensor_bytes(quant, i, o) - (i * o).div_ceil(2))
        .sum();
    a.layers * per_layer
}

/// The largest projection's weights: the 16-bit copy that
/// `dequantize_4bit` (or int8's dequantization in backward) makes for the
/// layer being computed, freed after its matmul (`MatMul4Bit` saves the
/// packed weight, not the copy).
pub fn largest_projection(a: &Architecture) -> u64 {
    layer_projections(a)
        .iter()
        .map(|&(i, o)| i * o)
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detailed::preset;

    #[test]
    fn storage_follows_the_format_definition() {
        // One 4096 × 4096 projection: 16,777,216 weights, 262,144 blocks.
        let (n, blocks) = (4096u64 * 4096, 4096u64 * 4096 / 64);
        let nf4 = BaseQuant::Nf4 {
            double_quant: false,
        };
        let dq = BaseQuant::Nf4 { double_quant: true };
        assert_eq!(tensor_bytes(nf4, 4096, 4096), n / 2 + 4 * blocks + 64);
        assert_eq!(
            tensor_bytes(dq, 4096, 4096),
            n / 2 + blocks + 4 * 1024 + 4 + 64 + 1024
        );
        assert_eq!(tensor_bytes(BaseQuant::Int8, 4096, 4096), n + 4 * 4096);
        // QLoRA §3: the constants cost 32/64 = 0.5 bits per weight, 8/64 +
        // 32/(64·256) = 0.127 with double quantization.
        let bits = |q| (tensor_bytes(q, 4096, 4096) as f64 * 8.0 - 4.0 * n as f64) / n as f64;
        assert!((bits(nf4) - 0.5).abs() < 1e-4, "{}", bits(nf4));
        assert!((bits(dq) - 0.127).abs() < 1e-3, "{}", bits(dq));
        // A block split across the end rounds up.
        assert_eq!(tensor_bytes(nf4, 1, 65), 33 + 8 + 64);
    }

    #[test]
    fn llama_8b_in_nf4() {
        let a = preset("llama-3.1-8b").unwrap().arch;
        let (q, rest) = quantized_base(&a, BaseQuant::Nf4 { double_quant: true }).unwrap();
        // Outside the projections: two 128256 × 4096 tables, 65 norms.
        assert_eq!(rest, 2 * 128_256 * 4096 + 65 * 4096);
        // 6.98 B quantized weights at 4.127 bits: 3.60 GB.
        let gb = q as f64 / 1e9;
        assert!((gb - 3.60).abs() < 0.01, "{gb}");
        assert_eq!(largest_projection(&a), 4096 * 14336);
    }
}
