//! ZeRO-3's trace of one step: the weights as DeepSpeed partitions them
//! (the embedding, each layer's matrices, the output layer), the modules in
//! the order their hooks fire in forward and backward, and where backward's
//! gradients overflow the reduce bucket.

use crate::detailed::config::DetailedConfig;
use crate::detailed::memory::events::Moment;
use crate::detailed::model::Family;

/// One module as ZeRO-3's trace sees it: its weights (indices into the
/// weights' sizes) and the values it counts towards reuse distances.
pub(super) struct Module {
    pub(super) at: Moment,
    pub(super) params: Vec<usize>,
    pub(super) numel: f64,
}

impl Module {
    /// The module at `at` with the weights `params` (sizes in `numel`) and
    /// `extra` values of its own beside them.
    fn new(at: Moment, params: Vec<usize>, extra: f64, numel: &[f64]) -> Self {
        Module {
            numel: params.iter().map(|&i| numel[i]).sum::<f64>() + extra,
            at,
            params,
        }
    }

    /// A container (the model, each layer, its attention and MLP): no
    /// weights of its own, but it prefetches when its hook runs.
    fn container(at: Moment, numel: &[f64]) -> Self {
        Module::new(at, vec![], 0.0, numel)
    }
}

/// A layer's weights as tensors on this GPU.
pub(super) struct LayerTensors {
    /// Its matrices' values, each its own module.
    pub(super) matrices: Vec<f64>,
    /// What the matrices leave: norms and biases.
    pub(super) rest: f64,
    /// Its values below the persistence threshold, kept gathered.
    pub(super) persistent: f64,
}

impl LayerTensors {
    /// The tensors of one of `cfg`'s layers of `layer` values on this GPU,
    /// weights of at most `threshold` values persistent.
    pub(super) fn of(cfg: &DetailedConfig, layer: f64, threshold: f64) -> Self {
        let tp = cfg.parallel.tp as f64;
        // A layer's weights as tensors (`ds_numel` on this GPU), each its
        // own module (`nn.Linear`); what the matrices leave is norms and
        // biases, each below the threshold. Mixture of experts and latent
        // attention: the layer as one module of one weight (an upper bound
        // on what is gathered at once).
        let matrices: Vec<f64> = cfg
            .arch
            .layer_matrices()
            .map(|m| m.iter().map(|&(r, c)| (r * c) as f64 / tp).collect())
            .unwrap_or_else(|| vec![layer]);
        let rest = (layer - matrices.iter().sum::<f64>()).max(0.0);
        // The norms and biases (a norm is `hidden` values) persist unless
        // the threshold is below them; then each is gathered around its
        // use, a transient too small to count.
        let rest_persists = threshold >= cfg.arch.hidden as f64;
        let persistent = matrices.iter().filter(|n| **n <= threshold).sum::<f64>()
            + if rest_persists { rest } else { 0.0 };
        LayerTensors {
            matrices,
            rest,
            persistent,
        }
    }
}

/// The weights ZeRO-3 partitions, by index.
pub(super) struct Weights {
    /// Each weight's values on this GPU.
    pub(super) numel: Vec<f64>,
    /// Each layer's weights.
    pub(super) layers: Vec<Vec<usize>>,
    /// The output layer's (the embedding's, 0, when tied).
    pub(super) head: usize,
}

impl Weights {
    /// The embedding of `embedding` values, `layers` layers of the
    /// `matrices`, and the output layer of `head` values (none if tied).
    pub(super) fn new(embedding: f64, head: f64, layers: u64, matrices: &[f64]) -> Self {
        // The weights: the embedding, each layer's matrices, the output
        // layer (the embedding's own when tied).
        let mut numel = vec![embedding];
        let layer_params: Vec<Vec<usize>> = (0..layers)
            .map(|_| {
                matrices
                    .iter()
                    .map(|&n| {
                        numel.push(n);
                        numel.len() - 1
                    })
                    .collect()
            })
            .collect();
        let head_param = if head > 0.0 {
            numel.push(head);
            numel.len() - 1
        } else {
            0
        };
        Weights {
            numel,
            layers: layer_params,
            head: head_param,
        }
    }
}

/// The trace of one step of `cfg`: forward, then backward in reverse (as
/// the backward hooks fire, measured: down, up, gate, o, v, k, q). Norms
/// are modules of persistent weights only: they count towards reuse
/// distances.
pub(super) fn trace(cfg: &DetailedConfig, w: &Weights, t: &LayerTensors) -> Vec<Module> {
    let a = &cfg.arch;
    let numel = &w.numel;
    // Containers (the model, each layer, its attention and MLP) have
    // no weights of their own but prefetch when their hooks run.
    let mut trace = vec![
        Module::container(Moment::Start, numel),
        Module::container(Moment::Start, numel),
        Module::new(Moment::Start, vec![0], 0.0, numel),
    ];
    // The attention's matrices come first: Llama's q, k, v, o; GPT-2's
    // c_attn, c_proj.
    let attention = match a.family {
        Family::Llama => 4,
        Family::Gpt2 => 2,
    };
    let split = (attention.min(t.matrices.len()), t.matrices.len());
    for (i, ps) in w.layers.iter().enumerate() {
        layer_forward(&mut trace, numel, i as u64, ps, split, t.rest);
    }
    // The output layer is gathered after the final norm, before the
    // logits exist.
    let head = w.head;
    trace.push(Module::new(Moment::OutputGather, vec![], 0.0, numel));
    trace.push(Module::new(Moment::OutputGather, vec![head], 0.0, numel));
    trace.push(Module::new(Moment::HeadBackward, vec![head], 0.0, numel));
    trace.push(Module::new(
        Moment::NormBackward,
        vec![],
        a.final_norm_params() as f64,
        numel,
    ));
    for (i, ps) in w.layers.iter().enumerate().rev() {
        layer_backward(&mut trace, numel, i as u64, ps, split, t.rest);
    }
    trace.push(Module::new(Moment::EmbeddingBackward, vec![0], 0.0, numel));
    trace
}

/// Layer `i`'s modules in forward: the layer, its input norm, the
/// attention and its matrices, the second norm, the MLP and its matrices;
/// `ps[..attention]` are the attention's weights, `ps[attention..mlp]` the
/// MLP's, `rest` the norms' values.
fn layer_forward(
    trace: &mut Vec<Module>,
    numel: &[f64],
    i: u64,
    ps: &[usize],
    (attention, mlp): (usize, usize),
    rest: f64,
) {
    let at = Moment::LayerForward(i);
    trace.push(Module::container(at, numel));
    trace.push(Module::new(at, vec![], rest / 2.0, numel));
    trace.push(Module::container(at, numel));
    trace.extend(
        ps[..attention]
            .iter()
            .map(|&p| Module::new(at, vec![p], 0.0, numel)),
    );
    trace.push(Module::new(at, vec![], rest / 2.0, numel));
    trace.push(Module::container(at, numel));
    trace.extend(
        ps[attention..mlp]
            .iter()
            .map(|&p| Module::new(at, vec![p], 0.0, numel)),
    );
}

/// Layer `i`'s modules in backward, as their hooks fire: the layer, the
/// MLP and its matrices in reverse, the second norm, the attention and its
/// matrices in reverse, the input norm (the arguments as for
/// [`layer_forward`]).
fn layer_backward(
    trace: &mut Vec<Module>,
    numel: &[f64],
    i: u64,
    ps: &[usize],
    (attention, mlp): (usize, usize),
    rest: f64,
) {
    let at = Moment::LayerBackward(i);
    trace.push(Module::container(at, numel));
    trace.push(Module::container(at, numel));
    trace.extend(
        ps[attention..mlp]
            .iter()
            .rev()
            .map(|&p| Module::new(at, vec![p], 0.0, numel)),
    );
    trace.push(Module::new(at, vec![], rest / 2.0, numel));
    trace.push(Module::container(at, numel));
    trace.extend(
        ps[..attention]
            .iter()
            .rev()
            .map(|&p| Module::new(at, vec![p], 0.0, numel)),
    );
    trace.push(Module::new(at, vec![], rest / 2.0, numel));
}

/// Index of the first backward module: the output layer's backward.
pub(super) fn backward_from(trace: &[Module]) -> usize {
    trace
        .iter()
        .position(|m| m.at == Moment::HeadBackward)
        .unwrap_or(trace.len())
}

/// Backward's bucket reductions: at each module the bytes a reduction of
/// the bucket holds (0 if none), and those of the reduction of what is left
/// in the bucket when backward ends. `bucket` is `reduce_bucket_size`, `gb`
/// a gradient's bytes per value, `tied` whether the output layer is the
/// embedding's, `world` the GPUs the gradients are reduce-scattered over.
pub(super) fn bucket_reductions(
    trace: &[Module],
    numel: &[f64],
    tied: bool,
    (bucket, gb): (f64, f64),
    world: f64,
) -> (Vec<f64>, f64) {
    // Gradients: copied into the bucket as backward produces them; a
    // weight that would overflow a non-empty bucket reduces it first
    // (`__add_grad_to_ipg_bucket`).
    let mut held = Held::default();
    let mut reduce_at = vec![0.0_f64; trace.len()];
    for (k, m) in trace.iter().enumerate().skip(backward_from(trace)) {
        let norms = (m.params.is_empty() && m.numel > 0.0).then_some(m.numel);
        // A tied table's gradient is ready once, after the embedding's
        // backward has added its share.
        let tied = m.at == Moment::HeadBackward && tied;
        let grads = m.params.iter().filter(|_| !tied).map(|&i| numel[i]);
        for n in grads.chain(norms) {
            if held.values > 0.0 && held.values + n > bucket {
                reduce_at[k] = reduce_at[k].max(held.reduction(bucket, world) * gb);
                held = Held::default();
            }
            held.values += n;
            held.tensors += 1;
        }
    }
    let last = held.reduction(bucket, world) * gb;
    (reduce_at, last)
}

/// The gradients waiting in the bucket: their values and how many tensors.
#[derive(Default)]
struct Held {
    values: f64,
    tensors: u32,
}

impl Held {
    /// The values a reduction of these gradients holds beyond the bucket:
    /// two copies of them (measured), and a third when they are one
    /// gradient larger than the bucket (so in a tensor of its own) that
    /// does not divide by the world: `reduce_scatter_coalesced`
    /// (`runtime/comm/coalesced_collectives.py`, 0.19.8) reduces a single
    /// tensor in place only when `numel() % world_sz == 0`, else
    /// `torch.cat`s a padded copy of it.
    fn reduction(&self, bucket: f64, world: f64) -> f64 {
        let padded = self.tensors == 1 && self.values > bucket && self.values % world != 0.0;
        let copies = if padded { 3.0 } else { 2.0 };
        copies * self.values
    }
}
