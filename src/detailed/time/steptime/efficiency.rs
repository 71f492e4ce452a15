//! The sustained fractions of the data sheet's rates ([`Efficiency`]): one
//! set for every model, card and layout, by card from published
//! measurements (FlashAttention-2's and -3's papers, Bekman's "Maximum
//! Achievable Matmul FLOPS" table).

use crate::detailed::time::hardware::Gpu;

/// The sustained fractions of the data sheet's rates: one set for every
/// model, card and layout (none is fitted to a row of the validation).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Efficiency {
    /// Tensor-core matrix multiplies, of dense peak: 0.80, the low end of
    /// "optimized GEMM can reach up to 80–90 % of the theoretical maximum
    /// device throughput" (Dao 2023, "FlashAttention-2", §1).
    pub matmul: f64,
    /// FlashAttention's forward, of dense peak, over the operations it
    /// runs: 0.50 on A100, the low end of FlashAttention-2's "50–73 % of
    /// the theoretical maximum FLOPs/s on A100" (Dao 2023, abstract); by
    /// architecture in [`Efficiency::for_gpu`].
    pub attention_forward: f64,
    /// FlashAttention's backward: 0.50, the same range.
    pub attention_backward: f64,
    /// Memory bandwidth a streaming kernel sustains, of the data sheet's:
    /// 0.80 (an assumption: no single source; editable).
    pub memory: f64,
    /// Bus bandwidth a ring collective sustains, of the link's: 0.80 (an
    /// assumption; `nccl-tests`' "bus bandwidth" is the measured
    /// counterpart, `doc/PERFORMANCE.md`).
    pub link: f64,
}

impl Default for Efficiency {
    fn default() -> Self {
        Self {
            matmul: 0.80,
            attention_forward: 0.50,
            attention_backward: 0.50,
            memory: 0.80,
            link: 0.80,
        }
    }
}

/// FlashAttention-2's sustained fraction of the dense peak by the card's
/// architecture (the kernel uses Ampere's instructions wherever it runs):
///
/// - Hopper: 0.35, "FlashAttention-2 achieving only 35 % utilization on the
///   H100 GPU" (Shah et al. 2024, FlashAttention-3, abstract); Blackwell
///   (B200, GB200, B300, GB300) has no published figure and takes Hopper's;
/// - Ampere: 0.50, the low end of "50–73 % of the theoretical maximum
///   FLOPs/s on A100" (Dao 2023, abstract); Ada, CDNA 3 and CDNA 4 have no
///   published figure and take the A100's.
pub const FLASH_ATTENTION_2: [(&[&str], f64); 2] = [
    (
        &[
            "h100-sxm",
            "h100-pcie",
            "h100-nvl",
            "h100-hbm2e",
            "h200",
            "b200",
            "gb200",
            "b300",
            "gb300",
        ],
        0.35,
    ),
    (
        &[
            "a100-40gb",
            "a100-80gb",
            "rtx-3090",
            "l40s",
            "rtx-4090",
            "mi300x",
            "mi325x",
            "mi350x",
            "mi355x",
        ],
        0.50,
    ),
];

/// The largest fraction of the dense bf16 peak a matrix multiply reaches
/// on each card, measured by a search over shapes in PyTorch: the "Maximum
/// Achievable Matmul FLOPS" table of Bekman, "Machine Learning
/// Engineering", `compute/accelerator/README.md` (A100 SXM 271.2 of 312
/// TFLOPS, H100 SXM 794.5 of 989, "H200 is the same", B200 1745 of 2250,
/// MI300X 668.4 of 1300, MI325X 784.9 of 1300). Cards it does not list take
/// their architecture's, an assumption: the H100 PCIe, NVL and 96 GB HBM2e
/// the H100 SXM's; GB200, B300 and GB300 the B200's; the MI350X and
/// MI355X (CDNA 4) the MI325X's, their nearest; with none, the A100's.
pub const MATMUL_MAMF: [(&[&str], f64); 5] = [
    (
        &["h100-sxm", "h100-pcie", "h100-nvl", "h100-hbm2e", "h200"],
        794.5 / 989.0,
    ),
    (&["b200", "gb200", "b300", "gb300"], 1745.0 / 2250.0),
    (&["mi300x"], 668.4 / 1300.0),
    (&["mi325x", "mi350x", "mi355x"], 784.9 / 1300.0),
    (
        &["a100-40gb", "a100-80gb", "rtx-3090", "l40s", "rtx-4090"],
        271.2 / 312.0,
    ),
];

/// The A100's measured fraction, against which [`MATMUL_MAMF`] scales the
/// 0.80 of [`Efficiency::default`].
const A100_MAMF: f64 = 271.2 / 312.0;

/// Looks `gpu` up in a table of fractions by card.
fn by_card(table: &[(&[&str], f64)], gpu: &Gpu, default: f64) -> f64 {
    table
        .iter()
        .find(|(keys, _)| keys.contains(&gpu.key))
        .map_or(default, |(_, e)| *e)
}

impl Efficiency {
    /// The defaults on `gpu`:
    ///
    /// - matrix multiplies at 0.80 of peak on the A100, and on other cards
    ///   0.80 scaled by their measured best fraction against the A100's
    ///   ([`MATMUL_MAMF`]): a training step's shapes fall short of the best
    ///   shape by the same factor on every card (an assumption, stated in
    ///   `docs/steptime.md`). H100 and H200: 0.74; B200: 0.71; MI300X: 0.47;
    ///   MI325X: 0.56;
    /// - FlashAttention-2 at its rate on the card's architecture
    ///   ([`FLASH_ATTENTION_2`]);
    /// - memory and links as [`Efficiency::default`].
    pub fn for_gpu(gpu: &Gpu) -> Self {
        let attention = by_card(&FLASH_ATTENTION_2, gpu, 0.50);
        Self {
            matmul: 0.80 * by_card(&MATMUL_MAMF, gpu, A100_MAMF) / A100_MAMF,
            attention_forward: attention,
            attention_backward: attention,
            ..Self::default()
        }
    }

    /// On `gpu` with FlashAttention 1 instead of 2 (software before July
    /// 2023): on the A100 "the forward pass only reaches 30–50 % of the
    /// theoretical maximum FLOPs/s of the device, while the backward pass
    /// ... 25–35 %" (Dao 2023, §1), the low end of each. Both versions run
    /// the Ampere instructions wherever they run, so on other architectures
    /// FlashAttention 1 keeps the fraction of the A100's rate that
    /// FlashAttention-2 keeps ([`FLASH_ATTENTION_2`]: 0.35 / 0.50 on Hopper).
    pub fn for_gpu_flash_attention_1(gpu: &Gpu) -> Self {
        let d = Self::for_gpu(gpu);
        let k = d.attention_forward / 0.50;
        Self {
            attention_forward: 0.30 * k,
            attention_backward: 0.25 * k,
            ..d
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Efficiency;
    use crate::detailed::time::hardware::gpu;

    /// Matrix multiplies run at 0.80 of peak on the A100 and, elsewhere, at
    /// 0.80 scaled by the card's measured best fraction against the A100's;
    /// FlashAttention 1 on Hopper loses what FlashAttention-2 loses there.
    #[test]
    fn efficiencies_by_card() {
        let a100 = Efficiency::for_gpu(&gpu("a100-80gb").unwrap());
        assert_eq!(a100.matmul, 0.80);
        let h100 = gpu("h100-sxm").unwrap();
        let e = Efficiency::for_gpu(&h100);
        assert!((e.matmul - 0.80 * (794.5 / 989.0) / (271.2 / 312.0)).abs() < 1e-12);
        assert!((e.matmul - 0.739).abs() < 1e-3, "{}", e.matmul);
        let f = Efficiency::for_gpu_flash_attention_1(&h100);
        assert!((f.attention_forward - 0.21).abs() < 1e-12);
        assert!((f.attention_backward - 0.175).abs() < 1e-12);
        assert_eq!(f.matmul, e.matmul);
        let f = Efficiency::for_gpu_flash_attention_1(&gpu("a100-40gb").unwrap());
        assert_eq!((f.attention_forward, f.attention_backward), (0.30, 0.25));
        // A card no measurement lists takes the A100's.
        let l40s = Efficiency::for_gpu(&gpu("l40s").unwrap());
        assert_eq!(l40s.matmul, 0.80);
        assert!(Efficiency::for_gpu(&gpu("mi300x").unwrap()).matmul < 0.5);
    }
}
