//! Strategies shared by the property tests.
#![cfg(not(target_arch = "wasm32"))]

use membudget::budget::TrainingConfig;
use proptest::prelude::*;

/// Any configuration the core accepts.
pub fn any_config() -> impl Strategy<Value = TrainingConfig> {
    (
        0.1f64..=1000.0,
        1u32..=1024,
        128u32..=131_072,
        128u32..=65_536,
        1u32..=256,
        any::<bool>(),
    )
        .prop_map(
            |(params_b, batch, seq_len, hidden, layers, mixed_precision)| TrainingConfig {
                params_b,
                batch,
                seq_len,
                hidden,
                layers,
                mixed_precision,
            },
        )
}
