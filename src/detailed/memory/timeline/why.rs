//! The sentence the page shows under the step chart: where the step peaks,
//! how far from the sum of the model states and the saved activations, and
//! what is live at that moment that the sum does not count.

use crate::detailed::config::Loss;
use crate::detailed::memory::events::{Live, Moment, Phase, StepTimeline};

/// Why the peak of `t` differs from `sum` (the model states plus the saved
/// activations), in a sentence or two for the page; `size` writes a byte
/// count in the reader's unit.
pub fn why_peak(t: &StepTimeline, sum: f64, size: impl Fn(f64) -> String) -> String {
    let e = t.peak_event();
    let l = &e.live;
    let peak = t.peak_bytes();
    let (relation, by) = if peak >= sum {
        ("above", peak - sum)
    } else {
        ("below", sum - peak)
    };
    let head = format!(
        "The step peaks at {} during {} ({} phase), {} {relation} the sum of states and saved activations ({}).",
        size(peak),
        e.moment.label(),
        e.phase.name(),
        size(by),
        size(sum),
    );
    // GRPO's steps open with the rollout; a colocated vLLM engine that
    // stays awake is part of every training event's transient buffers,
    // said on its own.
    let grpo = t
        .events
        .first()
        .is_some_and(|e| e.phase == Phase::Generation);
    let engine = if e.phase == Phase::Generation {
        0.0
    } else {
        t.engine
    };
    let own = Live {
        transient: l.transient - engine,
        ..*l
    };
    let l = &own;
    let transient = size(l.transient);
    let why = rollout(e.moment, grpo, &transient)
        .or_else(|| collective(e.moment, &transient))
        .unwrap_or_else(|| {
            let (grads, saved) = (size(l.grads), size(l.activations));
            fused_loss(e.moment, t.loss, &transient).unwrap_or_else(|| {
                step(
                    e.moment,
                    e.micro_batch,
                    l.grads == 0.0,
                    [&transient, &grads, &saved],
                )
            })
        });
    // ZeRO-3 allocates its bucket at start-up and keeps it.
    let zero3 = t.events.iter().any(|e| e.moment == Moment::GradientReduce);
    let bucket = match bucket_held(e.moment, zero3, t.bucket) {
        Some(held) => format!(
            " Of the transient buffers, {} is DeepSpeed's gradient bucket (reduce_bucket_size), {held}.",
            size(t.bucket)
        ),
        None => String::new(),
    };
    let vllm = if engine > 0.0 {
        format!(
            " Beside all this a colocated vLLM engine keeps its reservation ({}) through training.",
            size(engine)
        )
    } else {
        String::new()
    };
    head + &why + &bucket + &vllm
}

/// GRPO's moments: the rollout, the reference's scoring, the fused head's
/// loss; `transient` is the transient buffers written out. `None` for the
/// others.
fn rollout(moment: Moment, grpo: bool, transient: &str) -> Option<String> {
    Some(match moment {
        Moment::Prefill => format!(
            " GRPO's rollout begins: the prompts' key/value cache and one layer's MLP tensors for every prompt ({transient}) sit beside the weights and the optimizer state; no gradient or saved activation exists yet."
        ),
        Moment::Decode => format!(
            " GRPO's rollout at its last token: the key/value cache of every completion this GPU generates at once and the step's logits (or a colocated vLLM engine's reservation) ({transient}) sit beside the weights and the optimizer state."
        ),
        Moment::ReferenceForward if grpo => format!(
            " The reference model scores the completions without grad, a micro-batch at a time: its forward's buffers ({transient})."
        ),
        Moment::Loss if grpo => format!(
            " TRL's fused LM head keeps no logits: every saved activation plus its product tile and statistics ({transient})."
        ),
        _ => return None,
    })
}

/// The loss's moments under a loss without the full logits
/// ([`crate::detailed::memory::loss`]); `transient` is the transient
/// buffers written out. `None` for the others and the full loss.
fn fused_loss(moment: Moment, loss: Loss, transient: &str) -> Option<String> {
    Some(match (moment, loss) {
        (Moment::Loss, Loss::Chunked) => format!(
            " torchtune's chunked loss holds every saved activation, every chunk's logits in the model's dtype and one chunk's fp32 copy ({transient}); the fp32 log-probabilities of every chunk are saved."
        ),
        (Moment::Loss, Loss::Liger) => format!(
            " Liger's fused loss keeps no logits, but computes the gradients in forward: the output layer's weight gradient and one tile of logits ({transient}) sit on every saved activation."
        ),
        (Moment::Loss, Loss::Cce) => format!(
            " Cut Cross-Entropy keeps no logits: every saved activation plus its per-token statistics ({transient})."
        ),
        (Moment::LossBackward | Moment::HeadBackward, Loss::Chunked) => format!(
            " Backward starts with every saved activation still live; the chunks' gradients ({transient}) stack on top, one chunk's in fp32."
        ),
        (Moment::LossBackward | Moment::HeadBackward, Loss::Liger | Loss::Cce) => format!(
            " Backward starts with every saved activation still live, and the fused loss's gradients of its input and of the output layer's weight ({transient}) stack on top."
        ),
        _ => return None,
    })
}

/// The moments of FSDP2's and DeepSpeed's collectives; `transient` is the
/// transient buffers written out. `None` for the others.
fn collective(moment: Moment, transient: &str) -> Option<String> {
    Some(match moment {
        Moment::RootGather => format!(
            " FSDP2 is all-gathering its root module (embedding, final norm, output layer): the all-gather's output and the unsharded weights it is copied into are both live ({transient})."
        ),
        Moment::WeightsGather => format!(
            " DeepSpeed is all-gathering the updated weights from every GPU's partition into a buffer the size of all of them ({transient})."
        ),
        Moment::OutputGather => format!(
            " DeepSpeed's ZeRO-3 is all-gathering the output layer after the last layer's forward: the gathered weights, the persistent small ones and, on later steps, the prefetch group's flat buffer beside them ({transient}) stack on the saved activations."
        ),
        Moment::GradientReduce => format!(
            " Backward has ended and DeepSpeed's ZeRO-3 all-reduces the gradients left in its bucket: two copies of them beside the bucket and the still-gathered embedding ({transient} in all)."
        ),
        Moment::PartitionReduce => format!(
            " Backward has ended and DeepSpeed's ZeRO-1, without overlap_comm, reduces the whole gradients bucket by bucket: the flat partition of the gradients is allocated while those not yet reduced are still whole ({transient} of transient buffers beside them)."
        ),
        Moment::RootReduce => format!(
            " FSDP2 is reduce-scattering the root module's gradients: cast to the reduce dtype and copied into one flat buffer, two full copies ({transient})."
        ),
        _ => return None,
    })
}

/// The moments every step has: the optimizer step, the loss and its
/// backward, a layer's forward or backward, in `micro_batch`, `no_grads`
/// saying whether no gradient is live; the transient buffers, the gradients
/// and the saved activations written out. Empty for the others.
fn step(moment: Moment, micro_batch: u64, no_grads: bool, written: [&str; 3]) -> String {
    let [transient, grads, saved] = written;
    match moment {
        Moment::OptimizerUpdate | Moment::OptimizerState => format!(
            " By the optimizer step every activation is freed, but the gradients ({grads}), the optimizer state and the update's temporaries ({transient}) are all live."
        ),
        Moment::Loss => format!(
            " The loss holds every saved activation plus the logits and their fp32 copy ({transient}){}.",
            if no_grads {
                "; the gradients do not exist yet (zero_grad freed them)"
            } else {
                ""
            }
        ),
        Moment::LossBackward | Moment::HeadBackward => format!(
            " Backward starts with every saved activation still live, and the loss's gradients ({transient}) stack on top."
        ),
        Moment::LayerBackward(_) => format!(
            " Inside this layer's backward its activation gradients{} ({transient}) stack on the activations not yet freed.",
            if micro_batch > 1 {
                " and the accumulated gradients"
            } else {
                ""
            },
        ),
        Moment::LayerForward(_) => format!(
            " The forward pass has saved {saved} and this layer's transient buffers add {transient}."
        ),
        _ => String::new(),
    }
}

/// How DeepSpeed's gradient bucket of `bucket` bytes is held at `moment`,
/// if it is part of its transient buffers: under ZeRO-3 always, under
/// stages 1 and 2 through backward.
fn bucket_held(moment: Moment, zero3: bool, bucket: f64) -> Option<&'static str> {
    match moment {
        _ if zero3 => Some("allocated at start-up and kept"),
        Moment::HeadBackward | Moment::LayerBackward(_) | Moment::EmbeddingBackward
            if bucket > 0.0 =>
        {
            Some("held from the first gradient to the end of backward")
        }
        _ => None,
    }
}
