//! What the GPUs sustain: the card's peak and the sustained rates a step's
//! kernels run at ([`Rates`], from [`Efficiency`]), the links between GPUs
//! inside a node and across nodes, and the two prices every part is built
//! from: a matrix multiply at the roofline without overlap (Williams et
//! al. 2009) and a ring all-reduce (Patarasuk & Yuan 2009).

use super::efficiency::Efficiency;
use super::offload::HOST_GBPS_PER_GPU;
use crate::detailed::config::{DetailedConfig, Precision};
use crate::detailed::time::hardware::{nvlink_domain, Dtype, Gpu};

/// The GPUs a step runs on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cluster {
    /// The card.
    pub gpu: Gpu,
    /// GPUs per node: groups that fit in one talk over NVLink.
    pub gpus_per_node: u64,
}

impl Cluster {
    /// `gpu` in nodes of `gpus_per_node`.
    pub fn new(gpu: Gpu, gpus_per_node: u64) -> Self {
        Self {
            gpu,
            // An NVL72 rack's 72 GPUs share one NVLink domain, whatever
            // the trays' count for the host.
            gpus_per_node: gpus_per_node.max(1).max(nvlink_domain(&gpu)),
        }
    }
}

/// Seconds for an m × k by k × n product at the roofline without overlap.
pub(super) fn gemm(m: f64, k: f64, n: f64, peak: f64, bw: f64) -> f64 {
    2.0 * m * k * n / peak + 2.0 * (m * k + k * n + m * n) / bw
}

/// Seconds for a ring all-reduce of `bytes` over `n` GPUs at `bw` bytes/s.
pub(super) fn all_reduce(bytes: f64, n: u64, bw: f64) -> f64 {
    if n <= 1 {
        return 0.0;
    }
    2.0 * (n - 1) as f64 / n as f64 * bytes / bw
}

/// The part of a collective of `comm` seconds that compute of `work`
/// seconds beside it does not hide, when both are split into `n` pieces
/// run as a pipeline: piece i's collective waits for piece i's compute
/// (a gradient bucket filled by backward, a GEMM's chunk), or piece i's
/// compute waits for its collective (a gather ahead of forward, an
/// all-gather feeding a GEMM's chunk). One piece of each is never hidden;
/// beyond that, whatever outlasts the other n − 1 pieces of compute:
/// max(comm/n, comm − work·(n−1)/n). With n = 1 the whole collective shows.
pub(super) fn pipelined(comm: f64, work: f64, n: f64) -> f64 {
    let n = n.max(1.0);
    (comm / n).max(comm - work * (n - 1.0) / n).max(0.0)
}

/// Rates for a step: sustained FLOP/s and bytes/s.
pub(super) struct Rates {
    /// The card's dense peak, FLOP/s ([`peak`]): MFU's denominator.
    pub peak: f64,
    pub flops: f64,
    /// The layers' `nn.Linear` matmuls: at the card's fp8 rate under
    /// float8 training ([`crate::detailed::memory::fp8`]), otherwise
    /// `flops`.
    pub linear: f64,
    pub attention: f64,
    pub attention_backward: f64,
    pub bytes: f64,
    /// The card's fp8 GEMMs take either operand layout (Blackwell,
    /// [`crate::detailed::time::hardware::BLACKWELL`]).
    pub fp8_any_layout: bool,
    /// The card, for its links.
    gpu: Gpu,
    /// GPUs per node ([`Cluster::gpus_per_node`]).
    gpus_per_node: u64,
    /// The links' and the host memory's sustained fractions.
    eff: Efficiency,
}

/// The card's dense peak, FLOP/s: bf16's (tf32's for an fp32 step), or
/// fp32's for a card without it.
fn peak(cfg: &DetailedConfig, gpu: &Gpu) -> f64 {
    let dtype = match cfg.precision {
        Precision::Fp32 => Dtype::Tf32,
        _ => Dtype::Bf16,
    };
    gpu.peak_tflops(dtype)
        .or(gpu.peak_tflops(Dtype::Fp32))
        .unwrap_or(1.0)
        * 1e12
}

/// The layers' linear layers' peak, FLOP/s.
fn linear_peak(cfg: &DetailedConfig, gpu: &Gpu, peak: f64) -> f64 {
    // Float8 (torchao): the layers' linear layers run `torch._scaled_mm` at
    // the fp8 tensor cores' dense peak, at the same achievable fraction
    // (Bekman's MAMF tables measure bf16; fp8 is assumed alike). A card
    // without fp8 keeps its rate (torchao refuses it; the command line and
    // the page say so).
    if crate::detailed::memory::fp8::enabled(cfg)
        && crate::detailed::time::hardware::fp8_runs_on(cfg, gpu)
    {
        gpu.peak_tflops(Dtype::Fp8).map_or(peak, |t| t * 1e12)
    } else {
        peak
    }
}

impl Rates {
    /// The rates of `cfg`'s step on `cluster` at the fractions `eff`.
    pub fn new(cfg: &DetailedConfig, cluster: &Cluster, eff: &Efficiency) -> Self {
        let gpu = &cluster.gpu;
        let peak = peak(cfg, gpu);
        let linear_peak = linear_peak(cfg, gpu, peak);
        Rates {
            peak,
            flops: peak * eff.matmul,
            linear: linear_peak * eff.matmul,
            attention: peak * eff.attention_forward,
            attention_backward: peak * eff.attention_backward,
            bytes: gpu.memory_gbps * 1e9 * eff.memory,
            fp8_any_layout: crate::detailed::time::hardware::BLACKWELL.contains(&gpu.key),
            gpu: *gpu,
            gpus_per_node: cluster.gpus_per_node,
            eff: *eff,
        }
    }

    /// Bytes/s per GPU of a ring over a group of `n` GPUs with stride
    /// `stride` in the rank order.
    pub fn link(&self, n: u64, stride: u64) -> f64 {
        let (gpu, gpn) = (&self.gpu, self.gpus_per_node);
        // Megatron's rank order puts tensor parallelism innermost, then data,
        // then pipeline: a group of n with stride k stays in a node when
        // n·k ≤ GPUs per node. A group that spans nodes runs its rings through
        // every member's NIC at once (NCCL builds one ring per NIC), so the
        // members a node holds share the step across nodes: their NICs
        // together, up to NVLink's rate.
        let gbps = if n * stride <= gpn {
            gpu.intra_node_gbps
        } else {
            let members = self.local_members(n, stride) as f64;
            (gpu.inter_node_gbps * members).min(gpu.intra_node_gbps)
        };
        gbps * 1e9 * self.eff.link
    }

    /// Seconds for an all-to-all in which each GPU of a group of `n` (stride
    /// `stride` in the rank order) sends `bytes` to the other members, an
    /// equal share to each. Unlike a ring, an all-to-all's traffic between
    /// nodes does not pass along NVLink to be shared by the node's NICs:
    /// NCCL runs it as one send and one receive per pair of GPUs
    /// (`ncclGroupStart`, `ncclSend`/`ncclRecv`, NCCL's user guide,
    /// "Point-to-point communication", all-to-all), so the share bound for
    /// members on other nodes leaves through the sender's own NIC, at the
    /// network's rate per GPU, while the share for members on its own node
    /// crosses NVLink; both run at once. DeepSeek-AI 2024 (DeepSeek-V3
    /// technical report, §3.2.2) bounds its cross-node expert dispatch the
    /// same way, by the per-GPU InfiniBand rate (50 GB/s against NVLink's
    /// 160 GB/s).
    pub fn all_to_all(&self, bytes: f64, n: u64, stride: u64) -> f64 {
        if n <= 1 {
            return 0.0;
        }
        let local = self.local_members(n, stride);
        let peers = (n - 1) as f64;
        let off_node = (n - local) as f64 / peers;
        let on_node = (local - 1) as f64 / peers;
        self.split_exchange(bytes * on_node, bytes * off_node)
    }

    /// The members of a group of `n` GPUs (stride `stride` in the rank
    /// order) that share a node.
    pub fn local_members(&self, n: u64, stride: u64) -> u64 {
        (self.gpus_per_node / stride.max(1)).clamp(1, n.max(1))
    }

    /// Seconds for an exchange that sends `nvlink` bytes inside the node
    /// and `network` bytes through the GPU's own NIC, both at once (as
    /// [`Rates::all_to_all`] does with its two shares).
    pub fn split_exchange(&self, nvlink: f64, network: f64) -> f64 {
        let gpu = &self.gpu;
        let fast = gpu.intra_node_gbps * 1e9 * self.eff.link;
        let nic = gpu.inter_node_gbps.min(gpu.intra_node_gbps) * 1e9 * self.eff.link;
        (nvlink / fast).max(network / nic.max(1.0))
    }

    /// Bytes/s over PCIe between the GPU and the host.
    pub fn pcie(&self) -> f64 {
        self.gpu.pcie_gbps * 1e9 * self.eff.link
    }

    /// Bytes/s of the host's memory per GPU ([`HOST_GBPS_PER_GPU`]).
    pub fn host(&self) -> f64 {
        HOST_GBPS_PER_GPU * 1e9 * self.eff.memory
    }
}

#[cfg(test)]
mod tests {
    use super::gemm;

    /// The roofline without overlap: a narrow product is slower per
    /// operation than a wide one.
    #[test]
    fn narrow_products_pay_for_their_bytes() {
        let (peak, bw) = (312e12 * 0.8, 2039e9 * 0.8);
        let wide = gemm(8192.0, 8192.0, 8192.0, peak, bw) / (8192.0f64.powi(3));
        let narrow = gemm(8192.0, 512.0, 512.0, peak, bw) / (8192.0 * 512.0 * 512.0);
        assert!(narrow > 1.2 * wide);
    }

    /// An all-to-all inside a node runs at NVLink's rate; one over eight
    /// nodes sends 56 of its 63 shares through the GPU's own NIC, not the
    /// node's eight NICs together as a ring would.
    #[test]
    fn all_to_all_leaves_through_the_sender_s_nic() {
        use super::{Cluster, Efficiency, Rates};
        use crate::detailed::config::DetailedConfig;
        use crate::detailed::model::preset;
        use crate::detailed::time::hardware::gpu;
        let h100 = gpu("h100-sxm").unwrap();
        let cfg = DetailedConfig::new(preset("mixtral-8x7b").unwrap().arch, 4096, 8);
        let eff = Efficiency::for_gpu(&h100);
        let r = Rates::new(&cfg, &Cluster::new(h100, 8), &eff);
        let (bytes, link) = (1e9, eff.link);
        let inside = r.all_to_all(bytes, 8, 1);
        assert!((inside - bytes / (h100.intra_node_gbps * 1e9 * link)).abs() < 1e-12);
        let across = r.all_to_all(bytes, 64, 1);
        let nic = bytes * 56.0 / 63.0 / (h100.inter_node_gbps * 1e9 * link);
        assert!((across - nic).abs() < 1e-12);
        // A ring's rate, the node's NICs shared, was 7 times faster.
        assert!(across > 5.0 * bytes / r.link(64, 1));
        // A stride of 2 (expert tensor parallelism 2) puts 4 members in a node.
        let strided = r.all_to_all(bytes, 8, 2);
        let off = bytes * 4.0 / 7.0 / (h100.inter_node_gbps * 1e9 * link);
        assert!((strided - off).abs() < 1e-12);
        assert_eq!(r.all_to_all(bytes, 1, 1), 0.0);
    }
}
