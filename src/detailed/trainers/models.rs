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
    // Qwen2's small and 7B models have Qwen2.5's shapes (both config.json:
    // 24/896/4864 and 2 KV heads for 0.5B, 28/1536/8960 for 1.5B,
    // 28/3584/18944 with 4 KV heads for 7B, the same vocabularies and ties).
    ("qwen2-0.5b", "qwen2.5-0.5b"),
    ("qwen2-1.5b", "qwen2.5-1.5b"),
    ("qwen2-7b", "qwen2.5-7b"),
    // Qwen2.5-Math-7B is Qwen2.5-7B's shape with a 4,096-token RoPE
    // (its config.json: 28/3584/18944, 4 KV heads, 152,064 vocabulary).
    ("qwen2.5-math-7b", "qwen2.5-7b"),
];

/// The preset a hub name or checkpoint folder names
/// (`meta-llama/Meta-Llama-3.1-8B-Instruct`, `checkpoints/meta-llama/Llama-2-7b-hf`).
/// A name that is a preset's followed by a release tag
/// (`Qwen3-4B-Instruct-2507`, `TinyLlama-1.1B-intermediate-step-1431k-3T`)
/// names that preset: the longest preset or alias before a `-`.
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
    preset_or_alias(&n).or_else(|| tagged(&n))
}

/// The longest preset or alias name that `n` starts with, followed by `-`.
fn tagged(n: &str) -> Option<&'static str> {
    let names = PRESETS
        .iter()
        .map(|p| p.name)
        .chain(ALIASES.iter().map(|a| a.0));
    let best = names
        .filter(|p| n.strip_prefix(p).is_some_and(|rest| rest.starts_with('-')))
        .max_by_key(|p| p.len())?;
    preset_or_alias(best)
}

fn preset_or_alias(n: &str) -> Option<&'static str> {
    if let Some(p) = PRESETS.iter().find(|p| p.name == n) {
        return Some(p.name);
    }
    ALIASES.iter().find(|(a, _)| *a == n).map(|(_, p)| *p)
}

/// The preset a torchtune builder names
/// (`torchtune.models.llama3_1.lora_llama3_1_8b`,
/// `torchtune.models.qwen3.qwen3_0_6b_instruct`): its last part without
/// `lora_`/`qlora_` and `_base`/`_instruct`, the family's module name, then
/// the size with `_` for its point (`qwen2_5_1_5b` is Qwen2.5-1.5B).
pub fn torchtune(component: &str) -> Option<&'static str> {
    const FAMILIES: &[(&str, &str)] = &[
        ("llama3_1_", "llama-3.1"),
        ("llama3_2_", "llama-3.2"),
        ("llama3_", "llama-3"),
        ("llama2_", "llama-2"),
        ("qwen2_5_", "qwen2.5"),
        ("qwen3_", "qwen3"),
        ("mistral_", "mistral"),
    ];
    let last = component.rsplit('.').next()?;
    let mut base = last
        .strip_prefix("qlora_")
        .or_else(|| last.strip_prefix("lora_"))
        .unwrap_or(last);
    for suffix in ["_base", "_instruct"] {
        base = base.strip_suffix(suffix).unwrap_or(base);
    }
    let (family, size) = FAMILIES
        .iter()
        .find_map(|(module, family)| Some((family, base.strip_prefix(module)?)))?;
    preset_or_alias(&format!("{family}-{}", size.replace('_', ".")))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torchtune_builders_name_their_preset() {
        let cases = [
            (
                "torchtune.models.llama3_1.lora_llama3_1_8b",
                Some("llama-3.1-8b"),
            ),
            ("torchtune.models.llama3.llama3_8b", Some("llama-3.1-8b")),
            (
                "torchtune.models.qwen2_5.qwen2_5_1_5b_instruct",
                Some("qwen2.5-1.5b"),
            ),
            (
                "torchtune.models.qwen2_5.lora_qwen2_5_0_5b",
                Some("qwen2.5-0.5b"),
            ),
            ("torchtune.models.qwen3.qwen3_0_6b_base", Some("qwen3-0.6b")),
            (
                "torchtune.models.qwen3.qlora_qwen3_14b_instruct",
                Some("qwen3-14b"),
            ),
            ("torchtune.models.gemma.gemma_2b", None),
            ("torchtune.models.llama3_2.llama3_2_11b", None),
        ];
        for (component, want) in cases {
            assert_eq!(torchtune(component), want, "{component}");
        }
    }

    #[test]
    fn hub_names_with_release_tags_find_their_preset() {
        let cases = [
            ("Qwen/Qwen3-4B-Instruct-2507", Some("qwen3-4b")),
            ("Qwen/Qwen3-0.6B", Some("qwen3-0.6b")),
            ("Qwen/Qwen2-0.5B", Some("qwen2.5-0.5b")),
            ("Qwen/Qwen2.5-1.5B-Instruct", Some("qwen2.5-1.5b")),
            (
                "checkpoints/TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T",
                Some("tinyllama-1.1b"),
            ),
            ("unsloth/Qwen3-14B-unsloth-bnb-4bit", Some("qwen3-14b")),
            ("gpt2-medium", Some("gpt2-medium")),
            // Other shapes under a preset's family name stay unknown.
            ("Qwen/Qwen2.5-VL-3B-Instruct", None),
            ("meta-llama/Llama-3.2-11B-Vision", None),
            ("open-r1/Qwen2.5-Math-7B-RoPE-300k", Some("qwen2.5-7b")),
        ];
        for (name, want) in cases {
            assert_eq!(hub(name), want, "{name}");
        }
    }
}
