//! Models as the trainers name them (torchtune's builders, torchtitan's
//! flavours, Hugging Face hub names and local checkpoint folders) to
//! membudget's presets.

use crate::detailed::model::presets::PRESETS;

/// Names with the same shape as a preset under another name: Llama 3 and
/// Llama 3.1 differ only in RoPE scaling and context length, which no
/// figure here reads (both `config.json`s: 32 layers, 4096 hidden, 14336
/// ffn, 8 KV heads, 128256 vocabulary for 8B; 80/8192/28672 for 70B).
const ALIASES: &[(&str, &str)] = &[
    ("llama-3-8b", "llama-3.1-8b"),
    ("llama-3-70b", "llama-3.1-70b"),
    ("llama-2-7b-hf", "llama-2-7b"),
    ("llama-2-13b-hf", "llama-2-13b"),
    ("llama-2-70b-hf", "llama-2-70b"),
    ("mistral-7b-v0.1", "mistral-7b"),
    ("mistral-7b-v0.3", "mistral-7b"),
];

/// The preset a hub name or checkpoint folder names
/// (`meta-llama/Meta-Llama-3.1-8B-Instruct`, `checkpoints/meta-llama/Llama-2-7b-hf`).
pub fn hub(name: &str) -> Option<&'static str> {
    let last = name.trim().trim_end_matches('/').rsplit('/').next()?;
    let mut n = last.to_ascii_lowercase();
    if let Some(rest) = n.strip_prefix("meta-") {
        n = rest.to_string();
    }
    for suffix in ["-instruct", "-chat", "-hf", "-base", "-it", "-bnb-4bit"] {
        if let Some(rest) = n.strip_suffix(suffix) {
            n = rest.to_string();
        }
    }
    preset_or_alias(&n)
}

fn preset_or_alias(n: &str) -> Option<&'static str> {
    if let Some(p) = PRESETS.iter().find(|p| p.name == n) {
        return Some(p.name);
    }
    ALIASES.iter().find(|(a, _)| *a == n).map(|(_, p)| *p)
}

/// The preset a torchtune builder names
/// (`torchtune.models.llama3_1.lora_llama3_1_8b`): its last part without
/// `lora_`/`qlora_`, family and size split by `_` (`llama3_1_8b`,
/// `qwen2_5_7b`).
pub fn torchtune(component: &str) -> Option<&'static str> {
    let last = component.rsplit('.').next()?;
    let base = last
        .strip_prefix("qlora_")
        .or_else(|| last.strip_prefix("lora_"))
        .unwrap_or(last);
    let (family, size) = base.rsplit_once('_')?;
    let family = match family {
        "llama2" => "llama-2".to_string(),
        "llama3" => "llama-3".to_string(),
        "llama3_1" => "llama-3.1".to_string(),
        "llama3_2" => "llama-3.2".to_string(),
        "qwen2_5" => "qwen2.5".to_string(),
        "qwen3" | "mistral" => family.to_string(),
        _ => return None,
    };
    // Sizes with a point are written with `_` (`qwen2_5_0_5b`): not split
    // above, so such a size lands in `family` and is not found.
    preset_or_alias(&format!("{family}-{size}"))
}

/// torchtune's QLoRA builders keep the base in NF4
/// (`torchtune/models/llama3_1/_model_builders.py`, `qlora_llama3_1_8b =
/// partial(lora_llama3_1_8b, quantize_base=True)`).
pub fn torchtune_is_qlora(component: &str) -> bool {
    component
        .rsplit('.')
        .next()
        .is_some_and(|l| l.starts_with("qlora_"))
}

/// The preset a torchtitan model name and flavour name (`llama3`, `8B`).
pub fn torchtitan(name: &str, flavor: &str) -> Option<&'static str> {
    let size = flavor.to_ascii_lowercase();
    match name {
        // torchtitan's llama3 flavours have Llama 3.1's shapes
        // (torchtitan/models/llama3/__init__.py, llama3_configs).
        "llama3" | "llama" => preset_or_alias(&format!("llama-3.1-{size}")),
        "llama2" => preset_or_alias(&format!("llama-2-{size}")),
        _ => None,
    }
}
