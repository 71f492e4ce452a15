//! The GPUs people train on, as data: memory as sold, dense peak TFLOPS per
//! precision, memory bandwidth and the links a GPU talks over.
//!
//! Every figure is the vendor's data sheet's, cited on its row; tensor-core
//! figures are **dense** (the sheets' "with sparsity" halved), and for
//! GeForce cards the rate with fp32 accumulation (what training uses).
//! Links are per GPU and per direction, in GB/s (10⁹ bytes): the sheets give
//! NVLink and PCIe both ways summed, so they are halved here. The network
//! between nodes is the NIC per GPU of the vendor's reference system (DGX,
//! HGX or the AMD Instinct platform); for cards sold for PCIe servers,
//! which have no reference system, one 100 Gb/s NIC per GPU is assumed and
//! said so. Memory "as sold" is GiB, as the page's GPU picker counts it
//! (an "80 GB" card shows 81,920 MiB in `nvidia-smi`).
//!
//! ```
//! use membudget::detailed::time::hardware::{gpu, Dtype};
//!
//! let h100 = gpu("h100-sxm").unwrap();
//! assert_eq!(h100.peak_tflops(Dtype::Bf16), Some(989.4));
//! assert_eq!(h100.peak_tflops(Dtype::Fp8), Some(1978.9));
//! assert_eq!(gpu("a100-80gb").unwrap().peak_tflops(Dtype::Fp8), None);
//! ```

use crate::detailed::config::{DetailedConfig, Fp8};

/// The number formats a card's matrix units are rated in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    /// IEEE single precision, without tensor cores.
    Fp32,
    /// TensorFloat-32 on tensor cores (fp32 storage).
    Tf32,
    /// bf16 or fp16 on tensor cores, fp32 accumulation.
    Bf16,
    /// fp8 (E4M3/E5M2) on tensor cores.
    Fp8,
}

/// One card.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gpu {
    /// Short name for `--gpu` and the address.
    pub key: &'static str,
    /// The name a reader knows it by.
    pub name: &'static str,
    /// Memory as sold, GiB.
    pub memory_gib: f64,
    /// Dense peak TFLOPS: fp32 (no tensor cores), tf32, bf16/fp16, fp8.
    pub tflops: [Option<f64>; 4],
    /// Memory bandwidth, GB/s.
    pub memory_gbps: f64,
    /// GPU-to-GPU within a node (NVLink, Infinity Fabric; PCIe where there
    /// is none), GB/s per direction.
    pub intra_node_gbps: f64,
    /// Network per GPU between nodes, GB/s per direction.
    pub inter_node_gbps: f64,
    /// To the host over PCIe, GB/s per direction.
    pub pcie_gbps: f64,
}

impl Gpu {
    /// Dense peak TFLOPS in `dtype`, if the card has matrix units for it.
    pub fn peak_tflops(&self, dtype: Dtype) -> Option<f64> {
        self.tflops[dtype as usize]
    }

    /// Memory in bytes.
    pub fn memory_bytes(&self) -> f64 {
        self.memory_gib * (1u64 << 30) as f64
    }
}

/// PCIe 4.0 x16: 64 GB/s both ways, 32 GB/s each (PCI-SIG).
const PCIE4: f64 = 32.0;
/// PCIe 5.0 x16: 128 GB/s both ways, 64 GB/s each (PCI-SIG).
const PCIE5: f64 = 64.0;
/// One 200 Gb/s HDR InfiniBand NIC per GPU (DGX A100: 8 × ConnectX-6).
const HDR: f64 = 25.0;
/// One 400 Gb/s NDR InfiniBand NIC per GPU (DGX H100/H200/B200: 8 ×
/// ConnectX-7; AMD Instinct MI300X platform: 8 × 400 GbE).
const NDR: f64 = 50.0;
/// One 100 Gb/s Ethernet NIC per GPU: an assumption for PCIe servers, which
/// have no reference system.
const ETH100: f64 = 12.5;
/// One 800 Gb/s ConnectX-8 SuperNIC per GPU (HGX B300, GB300 NVL72).
const XDR: f64 = 100.0;
/// PCIe 6.0 x16: 256 GB/s both ways, 128 GB/s each (PCI-SIG); B300's host
/// interface.
const PCIE6: f64 = 128.0;
/// Grace's NVLink-C2C to its Blackwell GPUs: 900 GB/s both ways per Grace,
/// shared by its two GPUs (GB200 and GB300 superchips): 225 GB/s per GPU
/// per direction.
const C2C: f64 = 225.0;

/// The table. Columns: key, name, memory as sold (GiB), dense TFLOPS
/// [fp32, tf32, bf16, fp8], memory GB/s, intra-node, network, PCIe (GB/s
/// per direction); each row's source is in [`SOURCES`].
pub const GPUS: [Gpu; 24] = [
    Gpu {
        key: "a100-40gb",
        name: "A100 SXM 40GB",
        memory_gib: 40.0,
        tflops: [Some(19.5), Some(156.0), Some(312.0), None],
        memory_gbps: 1555.0,
        intra_node_gbps: 300.0,
        inter_node_gbps: HDR,
        pcie_gbps: PCIE4,
    },
    Gpu {
        key: "a100-80gb",
        name: "A100 SXM 80GB",
        memory_gib: 80.0,
        tflops: [Some(19.5), Some(156.0), Some(312.0), None],
        memory_gbps: 2039.0,
        intra_node_gbps: 300.0,
        inter_node_gbps: HDR,
        pcie_gbps: PCIE4,
    },
    Gpu {
        key: "h100-sxm",
        name: "H100 SXM",
        memory_gib: 80.0,
        tflops: [Some(66.9), Some(494.7), Some(989.4), Some(1978.9)],
        memory_gbps: 3350.0,
        intra_node_gbps: 450.0,
        inter_node_gbps: NDR,
        pcie_gbps: PCIE5,
    },
    Gpu {
        key: "h100-pcie",
        name: "H100 PCIe",
        memory_gib: 80.0,
        tflops: [Some(51.0), Some(378.0), Some(756.0), Some(1513.0)],
        memory_gbps: 2000.0,
        intra_node_gbps: 300.0,
        inter_node_gbps: NDR,
        pcie_gbps: PCIE5,
    },
    Gpu {
        key: "h100-nvl",
        name: "H100 NVL",
        memory_gib: 94.0,
        tflops: [Some(60.0), Some(417.5), Some(835.5), Some(1670.5)],
        memory_gbps: 3900.0,
        intra_node_gbps: 300.0,
        inter_node_gbps: NDR,
        pcie_gbps: PCIE5,
    },
    Gpu {
        key: "h100-hbm2e",
        name: "H100 96GB HBM2e (500 W)",
        memory_gib: 96.0,
        tflops: [Some(60.0), Some(417.5), Some(835.5), Some(1670.5)],
        memory_gbps: 2400.0,
        intra_node_gbps: 450.0,
        inter_node_gbps: NDR,
        pcie_gbps: PCIE5,
    },
    Gpu {
        key: "h200",
        name: "H200 SXM",
        memory_gib: 141.0,
        tflops: [Some(66.9), Some(494.7), Some(989.4), Some(1978.9)],
        memory_gbps: 4800.0,
        intra_node_gbps: 450.0,
        inter_node_gbps: NDR,
        pcie_gbps: PCIE5,
    },
    Gpu {
        key: "b200",
        name: "B200 (HGX)",
        memory_gib: 180.0,
        tflops: [Some(75.0), Some(1100.0), Some(2250.0), Some(4500.0)],
        memory_gbps: 7700.0,
        intra_node_gbps: 900.0,
        inter_node_gbps: NDR,
        pcie_gbps: PCIE5,
    },
    Gpu {
        key: "gb200",
        name: "GB200 (NVL72)",
        memory_gib: 186.0,
        tflops: [Some(80.0), Some(1250.0), Some(2500.0), Some(5000.0)],
        memory_gbps: 8000.0,
        intra_node_gbps: 900.0,
        inter_node_gbps: NDR,
        pcie_gbps: C2C,
    },
    Gpu {
        key: "b300",
        name: "B300 (HGX)",
        memory_gib: 288.0,
        tflops: [Some(75.0), Some(1125.0), Some(2250.0), Some(4500.0)],
        memory_gbps: 7700.0,
        intra_node_gbps: 900.0,
        inter_node_gbps: XDR,
        pcie_gbps: PCIE6,
    },
    Gpu {
        key: "gb300",
        name: "GB300 (NVL72)",
        memory_gib: 288.0,
        tflops: [Some(80.0), Some(1250.0), Some(2500.0), Some(5000.0)],
        memory_gbps: 8000.0,
        intra_node_gbps: 900.0,
        inter_node_gbps: XDR,
        pcie_gbps: C2C,
    },
    Gpu {
        key: "l40s",
        name: "L40S",
        memory_gib: 48.0,
        tflops: [Some(91.6), Some(183.0), Some(362.05), Some(733.0)],
        memory_gbps: 864.0,
        intra_node_gbps: PCIE4,
        inter_node_gbps: ETH100,
        pcie_gbps: PCIE4,
    },
    Gpu {
        key: "rtx-4090",
        name: "GeForce RTX 4090",
        memory_gib: 24.0,
        tflops: [Some(82.6), Some(82.6), Some(165.2), Some(330.3)],
        memory_gbps: 1008.0,
        intra_node_gbps: PCIE4,
        inter_node_gbps: ETH100,
        pcie_gbps: PCIE4,
    },
    Gpu {
        key: "rtx-3090",
        name: "GeForce RTX 3090",
        memory_gib: 24.0,
        tflops: [Some(35.6), Some(35.6), Some(71.0), None],
        memory_gbps: 936.0,
        intra_node_gbps: 56.25,
        inter_node_gbps: ETH100,
        pcie_gbps: PCIE4,
    },
    Gpu {
        key: "mi300x",
        name: "Instinct MI300X",
        memory_gib: 192.0,
        tflops: [Some(163.4), Some(653.7), Some(1307.4), Some(2614.9)],
        memory_gbps: 5300.0,
        intra_node_gbps: 448.0,
        inter_node_gbps: NDR,
        pcie_gbps: PCIE5,
    },
    Gpu {
        key: "mi325x",
        name: "Instinct MI325X",
        memory_gib: 256.0,
        tflops: [Some(163.4), Some(653.7), Some(1307.4), Some(2614.9)],
        memory_gbps: 6000.0,
        intra_node_gbps: 448.0,
        inter_node_gbps: NDR,
        pcie_gbps: PCIE5,
    },
    Gpu {
        key: "mi350x",
        name: "Instinct MI350X",
        memory_gib: 288.0,
        tflops: [Some(144.2), None, Some(2306.9), Some(4613.8)],
        memory_gbps: 8000.0,
        intra_node_gbps: 537.6,
        inter_node_gbps: NDR,
        pcie_gbps: PCIE5,
    },
    Gpu {
        key: "mi355x",
        name: "Instinct MI355X",
        memory_gib: 288.0,
        tflops: [Some(157.3), None, Some(2516.6), Some(5033.2)],
        memory_gbps: 8000.0,
        intra_node_gbps: 537.6,
        inter_node_gbps: NDR,
        pcie_gbps: PCIE5,
    },
    Gpu {
        key: "a10",
        name: "A10",
        memory_gib: 24.0,
        tflops: [Some(31.2), Some(62.5), Some(125.0), None],
        memory_gbps: 600.0,
        intra_node_gbps: PCIE4,
        inter_node_gbps: ETH100,
        pcie_gbps: PCIE4,
    },
    Gpu {
        key: "a10g",
        name: "A10G (AWS G5)",
        memory_gib: 24.0,
        tflops: [Some(35.0), Some(35.0), Some(70.0), None],
        memory_gbps: 600.0,
        intra_node_gbps: PCIE4,
        inter_node_gbps: ETH100,
        pcie_gbps: PCIE4,
    },
    Gpu {
        key: "l4",
        name: "L4",
        memory_gib: 24.0,
        tflops: [Some(30.3), Some(60.0), Some(121.0), Some(242.5)],
        memory_gbps: 300.0,
        intra_node_gbps: PCIE4,
        inter_node_gbps: ETH100,
        pcie_gbps: PCIE4,
    },
    Gpu {
        key: "rtx-a6000",
        name: "RTX A6000",
        memory_gib: 48.0,
        tflops: [Some(38.7), Some(77.4), Some(154.8), None],
        memory_gbps: 768.0,
        intra_node_gbps: 56.25,
        inter_node_gbps: ETH100,
        pcie_gbps: PCIE4,
    },
    Gpu {
        key: "rtx-6000-ada",
        name: "RTX 6000 Ada",
        memory_gib: 48.0,
        tflops: [Some(91.1), Some(182.1), Some(364.2), Some(728.5)],
        memory_gbps: 960.0,
        intra_node_gbps: PCIE4,
        inter_node_gbps: ETH100,
        pcie_gbps: PCIE4,
    },
    Gpu {
        key: "rtx-5090",
        name: "GeForce RTX 5090",
        memory_gib: 32.0,
        tflops: [Some(104.8), Some(104.8), Some(209.5), Some(419.0)],
        memory_gbps: 1792.0,
        intra_node_gbps: PCIE5,
        inter_node_gbps: ETH100,
        pcie_gbps: PCIE5,
    },
];

/// Each card's key and memory as sold (GiB), derived from [`GPUS`] at
/// compile time: what the address codec needs to read `card=`, without the
/// rest of the table (the light lesson page decodes addresses too).
pub const MEMORY: [(&str, f64); GPUS.len()] = {
    let mut out = [("", 0.0); GPUS.len()];
    let mut i = 0;
    while i < GPUS.len() {
        out[i] = (GPUS[i].key, GPUS[i].memory_gib);
        i += 1;
    }
    out
};

/// The key and memory (GiB) of the card with key `key`, case-insensitive.
pub fn memory_of(key: &str) -> Option<(&'static str, f64)> {
    MEMORY
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .copied()
}

/// Where each card's figures come from, by key: apart from [`GPUS`] so
/// that the page, which prices with the figures, does not ship the
/// citations (the command line and docs/hardware.md show them).
pub const SOURCES: [(&str, &str); 24] = [
    ("a100-40gb", "NVIDIA A100 Tensor Core GPU data sheet (2021): FP32 19.5, TF32 312 sparse, BF16 624 sparse; HBM2 1,555 GB/s; NVLink 600 GB/s; PCIe Gen4 64 GB/s"),
    ("a100-80gb", "NVIDIA A100 Tensor Core GPU data sheet (2021): HBM2e 2,039 GB/s; otherwise as the 40GB"),
    ("h100-sxm", "NVIDIA H100 Tensor Core GPU data sheet: FP32 67, TF32 989, BF16 1,979, FP8 3,958 sparse (Hopper whitepaper: 989.4 dense BF16); HBM3 3.35 TB/s; NVLink 900 GB/s; PCIe Gen5 128 GB/s"),
    ("h100-pcie", "NVIDIA H100 PCIe product brief PB-11133-001: FP32 51, TF32 756, BF16 1,513, FP8 3,026 sparse; HBM2e 2 TB/s; NVLink bridge 600 GB/s; PCIe Gen5 128 GB/s"),
    ("h100-nvl", "NVIDIA H100 Tensor Core GPU data sheet, H100 NVL column (per GPU): FP32 60, TF32 835, BF16 1,671, FP8 3,341 sparse; HBM3 94 GB, 3.9 TB/s; NVLink bridge 600 GB/s; PCIe Gen5 128 GB/s; the network as the H100 PCIe's"),
    ("h100-hbm2e", "No data sheet: the H100 with 96 GB of HBM2e at a 500 W limit that torchtitan measured on (\"non-standard ... HBM2e and are limited to a lower TDP. The actual peak TFLOPs should be between SXM and NVL\", Liang et al. 2024, TorchTitan, arXiv 2410.06511): compute assumed the H100 NVL's (the low end of that range); bandwidth assumed six HBM2e stacks at the H100 PCIe's 400 GB/s a stack (2 TB/s over five), 2.4 TB/s; NVLink and network as the H100 SXM's"),
    ("h200", "NVIDIA H200 Tensor Core GPU data sheet: compute as H100 SXM; HBM3e 141 GB, 4.8 TB/s; NVLink 900 GB/s; PCIe Gen5 128 GB/s"),
    ("b200", "NVIDIA HGX B200 data sheet, per GPU (÷ 8): FP32 75, TF32 2.2 PF, BF16 4.5 PF, FP8 9 PF sparse; 180 GB HBM3e, 7.7 TB/s; NVLink 5 1.8 TB/s"),
    ("gb200", "NVIDIA GB200 NVL72 data sheet, per GPU (÷ 72): FP32 5,760 TF, TF32 180 PF, BF16 360 PF, FP8 720 PF sparse; HBM3e 13.4 TB, 576 TB/s; NVLink 130 TB/s (1.8 TB/s a GPU), one 72-GPU NVLink domain; NVLink-C2C 900 GB/s per Grace, two GPUs each; one 400 Gb/s NIC per GPU"),
    ("b300", "NVIDIA HGX B300 data sheet, per GPU (÷ 8): FP32 75, TF32 2.25 PF, BF16 4.5 PF, FP8 9 PF sparse; 288 GB HBM3e, 7.7 TB/s (NVIDIA's Blackwell Ultra per-GPU table); NVLink 5 1.8 TB/s; ConnectX-8 800 Gb/s per GPU; PCIe Gen6"),
    ("gb300", "NVIDIA GB300 NVL72 data sheet, per GPU (÷ 72): TF32 180 PF, BF16 360 PF, FP8 720 PF sparse; 288 GB HBM3e, 8 TB/s (576 TB/s a rack); NVLink 130 TB/s (1.8 TB/s a GPU), one 72-GPU NVLink domain; ConnectX-8 800 Gb/s per GPU; NVLink-C2C as GB200's; FP32 80 from NVIDIA's Blackwell Ultra per-GPU table"),
    ("l40s", "NVIDIA L40S data sheet: FP32 91.6, TF32 366, BF16 733, FP8 1,466 sparse; GDDR6 864 GB/s; no NVLink, PCIe Gen4 x16"),
    ("rtx-4090", "NVIDIA Ada Lovelace GPU architecture whitepaper, appendix A (RTX 4090): FP32 82.6; TF32 82.6, BF16 and FP8 with FP32 accumulate 165.2 and 330.3 dense; GDDR6X 1,008 GB/s; no NVLink"),
    ("rtx-3090", "NVIDIA Ampere GA102 GPU architecture whitepaper, appendix A (RTX 3090): FP32 35.6; TF32 35.6, BF16 with FP32 accumulate 71 dense; GDDR6X 936 GB/s; NVLink bridge 112.5 GB/s"),
    ("mi300x", "AMD Instinct MI300X data sheet: FP32 163.4, TF32 653.7, BF16 1,307.4, FP8 2,614.9 dense; HBM3 192 GB, 5.3 TB/s; Infinity Fabric 7 links, 896 GB/s; PCIe Gen5 x16"),
    ("mi325x", "AMD Instinct MI325X data sheet: compute as MI300X; HBM3E 256 GB, 6 TB/s; Infinity Fabric 896 GB/s"),
    ("mi350x", "AMD Instinct MI350X data sheet: FP32 144.2, BF16 2,306.9, FP8 4,613.8 dense (twice the BF16 rate; CDNA 4 has no TF32); HBM3E 288 GB, 8 TB/s; the MI355X's Infinity Fabric, PCIe and network; air-cooled at 1,000 W against the MI355X's 1,400 W"),
    ("mi355x", "AMD Instinct MI355X data sheet: FP32 157.3, BF16 2,516.6, FP8 5,033.2 dense (CDNA 4 has no TF32: fp32 matmuls at the FP32 rate); HBM3E 288 GB, 8 TB/s; Infinity Fabric 7 links of 153.6 GB/s; PCIe Gen5 x16; 400 GbE per GPU (AMD Pensando Pollara 400)"),
    ("a10", "NVIDIA A10 Tensor Core GPU data sheet: FP32 31.2, TF32 125, BF16 250 sparse; GDDR6 24 GB, 600 GB/s; PCIe Gen4 64 GB/s; no NVLink"),
    ("a10g", "No NVIDIA data sheet is published for AWS's A10G: Baseten, \"NVIDIA A10 vs A10G for ML model inference\" (2023), spec table: FP32 35, TF32 35, BF16 70 dense; GDDR6 24 GB, 600 GB/s as the A10; PCIe Gen4, no NVLink (EC2 G5)"),
    ("l4", "NVIDIA L4 Tensor Core GPU data sheet: FP32 30.3, TF32 120, BF16 242, FP8 485 sparse; GDDR6 24 GB, 300 GB/s; PCIe Gen4 x16; no NVLink"),
    ("rtx-a6000", "NVIDIA RTX A6000 data sheet: FP32 38.7, TF32 154.8, BF16 309.7 sparse; GDDR6 48 GB, 768 GB/s; NVLink bridge 112.5 GB/s; PCIe Gen4"),
    ("rtx-6000-ada", "NVIDIA RTX 6000 Ada Generation data sheet: FP32 91.1, TF32 364.2, BF16 728.5, FP8 1,457 sparse; GDDR6 48 GB, 960 GB/s; PCIe Gen4 x16; no NVLink"),
    ("rtx-5090", "NVIDIA RTX Blackwell GPU architecture whitepaper, appendix (RTX 5090): FP32 104.8; TF32 104.8, BF16 and FP8 with FP32 accumulate 209.5 and 419 dense; GDDR7 32 GB, 1,792 GB/s; PCIe Gen5; no NVLink"),
];

/// The source of the card with key `key`.
pub fn source(key: &str) -> Option<&'static str> {
    SOURCES.iter().find(|(k, _)| *k == key).map(|(_, s)| *s)
}

/// The Blackwell cards, which run MXFP8, and whose fp8 GEMMs take their
/// operands in either layout (TransformerEngine's
/// `nvte_is_non_tn_fp8_gemm_supported`: Hopper's take one, so a tensor a
/// GEMM reads transposed is cast into a transposed copy too).
pub const BLACKWELL: [&str; 4] = ["b200", "gb200", "b300", "gb300"];

/// GPUs one NVLink domain joins: the NVL72 racks' 72 (GB200 and GB300
/// NVL72 data sheets: "72 Blackwell GPUs ... a single NVLink domain"),
/// else none beyond the node the caller gives.
pub fn nvlink_domain(gpu: &Gpu) -> u64 {
    if matches!(gpu.key, "gb200" | "gb300") {
        72
    } else {
        1
    }
}

/// The card named `key` (`h100-sxm`, `a100-80gb`, …), case-insensitive.
pub fn gpu(key: &str) -> Option<Gpu> {
    GPUS.iter()
        .find(|g| g.key.eq_ignore_ascii_case(key))
        .copied()
}

/// Whether `gpu` can run `cfg`'s fp8 recipe: any card with
/// fp8 tensor cores, and for MXFP8 a Blackwell one ([`BLACKWELL`]).
pub fn fp8_runs_on(cfg: &DetailedConfig, gpu: &Gpu) -> bool {
    match cfg.fp8 {
        Fp8::None => true,
        Fp8::TeMxfp8 => BLACKWELL.contains(&gpu.key),
        _ => gpu.peak_tflops(Dtype::Fp8).is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Table-driven: each card's bf16 peak, memory and bandwidth as its
    /// data sheet prints them (sparse figures halved).
    #[test]
    fn figures_are_the_data_sheets() {
        for (key, bf16, gib, gbps) in [
            ("a100-40gb", 312.0, 40.0, 1555.0),
            ("a100-80gb", 312.0, 80.0, 2039.0),
            ("h100-sxm", 989.4, 80.0, 3350.0),
            ("h100-pcie", 756.0, 80.0, 2000.0),
            ("h200", 989.4, 141.0, 4800.0),
            ("b200", 2250.0, 180.0, 7700.0),
            ("l40s", 362.05, 48.0, 864.0),
            ("rtx-4090", 165.2, 24.0, 1008.0),
            ("rtx-3090", 71.0, 24.0, 936.0),
            ("mi300x", 1307.4, 192.0, 5300.0),
            ("h100-nvl", 835.5, 94.0, 3900.0),
            ("gb200", 2500.0, 186.0, 8000.0),
            ("b300", 2250.0, 288.0, 7700.0),
            ("gb300", 2500.0, 288.0, 8000.0),
            ("mi350x", 2306.9, 288.0, 8000.0),
            ("mi355x", 2516.6, 288.0, 8000.0),
            ("a10", 125.0, 24.0, 600.0),
            ("a10g", 70.0, 24.0, 600.0),
            ("l4", 121.0, 24.0, 300.0),
            ("rtx-a6000", 154.8, 48.0, 768.0),
            ("rtx-6000-ada", 364.2, 48.0, 960.0),
            ("rtx-5090", 209.5, 32.0, 1792.0),
        ] {
            let g = gpu(key).unwrap();
            assert_eq!(
                (g.peak_tflops(Dtype::Bf16), g.memory_gib, g.memory_gbps),
                (Some(bf16), gib, gbps),
                "{key}"
            );
        }
    }

    #[test]
    fn every_card_is_consistent() {
        for g in GPUS {
            let t = g.tflops;
            // tf32 at most bf16, bf16 at most fp8 where rated; links
            // slower than memory.
            assert!(t[1] <= t[2] && t[2].is_some(), "{}", g.key);
            assert!(t[3].is_none_or(|f| Some(f) >= t[2]), "{}", g.key);
            assert!(g.inter_node_gbps <= g.intra_node_gbps, "{}", g.key);
            assert!(g.intra_node_gbps < g.memory_gbps, "{}", g.key);
            assert!(source(g.key).is_some_and(|s| !s.is_empty()));
            assert_eq!(gpu(&g.key.to_uppercase()), Some(g));
        }
        assert_eq!(gpu("v100"), None);
    }

    /// docs/hardware.md shows every card as this table has it.
    #[test]
    fn the_docs_table_is_this_one() {
        let doc = include_str!("../../../docs/hardware.md");
        let v = |x: Option<f64>| x.map_or("—".to_string(), |x| x.to_string());
        for g in GPUS {
            let row = format!(
                "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                g.key,
                g.name,
                g.memory_gib,
                v(g.tflops[0]),
                v(g.tflops[1]),
                v(g.tflops[2]),
                v(g.tflops[3]),
                g.memory_gbps,
                g.intra_node_gbps,
                g.inter_node_gbps,
                g.pcie_gbps
            );
            assert!(doc.contains(&row), "docs/hardware.md lacks {row}");
            assert!(doc.contains(source(g.key).unwrap()), "{}'s source", g.key);
        }
    }
}
