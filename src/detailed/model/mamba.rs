//! State-space layers: Mamba-2's mixer as hybrid models run it beside
//! their attention (Falcon-H1): its shape and parameters. What it keeps for
//! backward is [`crate::detailed::memory::mixer`], its scan's operations
//! [`crate::detailed::time::flops::scan_flops`].

/// Mamba-2's mixer (Dao & Gu 2024, "Transformers are SSMs", §7, Fig. 6:
/// one input projection to z, x, B, C and Δ, a causal depthwise
/// convolution over x, B and C, the SSD scan, a gated RMSNorm and an output
/// projection), run beside the attention in every layer of Falcon-H1's
/// parallel hybrid (Zuo et al. 2025, "Falcon-H1", §2.1; `FalconH1Mixer`
/// and `FalconH1DecoderLayer`, whose outputs are summed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mamba2 {
    /// SSM heads, H (`mamba_n_heads`).
    pub heads: u64,
    /// Width of each head, P (`mamba_d_head`); the inner width is H·P
    /// (`mamba_d_ssm`).
    pub head_dim: u64,
    /// Groups sharing B and C, G (`mamba_n_groups`).
    pub groups: u64,
    /// State size per group, N (`mamba_d_state`).
    pub state: u64,
    /// Convolution kernel width, K (`mamba_d_conv`).
    pub conv: u64,
    /// Chunk length of the SSD scan, Q (`mamba_chunk_size`).
    pub chunk: u64,
    /// The gated RMSNorm before the output projection (`mamba_rms_norm`);
    /// without it the scan's output is gated by SiLU(z) alone.
    pub gated_norm: bool,
    /// A bias on the convolution (`mamba_conv_bias`).
    pub conv_bias: bool,
    /// A bias on the input projection (`mamba_proj_bias`).
    pub in_bias: bool,
    /// A bias on the output projection (`projectors_bias`).
    pub out_bias: bool,
}

impl Mamba2 {
    /// Inner width, d = H·P.
    pub fn inner(&self) -> u64 {
        self.heads * self.head_dim
    }

    /// Channels the convolution runs over: x, B and C (d + 2·G·N).
    pub fn conv_dim(&self) -> u64 {
        self.inner() + 2 * self.groups * self.state
    }

    /// Output width of the input projection: z, x, B, C and one Δ per head
    /// (2d + 2·G·N + H).
    pub fn in_width(&self) -> u64 {
        self.inner() + self.conv_dim() + self.heads
    }

    /// Parameters of one mixer: `in_proj`, `conv1d`, `dt_bias`, `A_log`,
    /// `D`, the gated norm's weight, `out_proj`.
    pub fn params(&self, hidden: u64) -> u64 {
        let (d, c, w) = (self.inner(), self.conv_dim(), self.in_width());
        hidden * w
            + if self.in_bias { w } else { 0 }
            + c * self.conv
            + if self.conv_bias { c } else { 0 }
            + 3 * self.heads
            + if self.gated_norm { d } else { 0 }
            + d * hidden
            + if self.out_bias { hidden } else { 0 }
    }

    /// Parameter tensors of one mixer.
    pub fn tensors(&self) -> u64 {
        // in_proj, conv1d, dt_bias, A_log, D, out_proj; the optional ones.
        6 + u64::from(self.in_bias)
            + u64::from(self.conv_bias)
            + u64::from(self.gated_norm)
            + u64::from(self.out_bias)
    }
}
