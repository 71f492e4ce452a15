//! What to change: the levers that make a step fit a card, priced by its
//! peak and in GPU-time ([`planner`]), the search over every layout
//! that fits, fastest first ([`search`]), and what a row changes and what
//! the reader holds fixed ([`diff`]). The top room: it reads every
//! other and nothing reads it but the command line and the page.

pub mod diff;
pub mod planner;
pub mod search;

use std::cmp::Ordering;

/// Sorts `v` stably by `cmp`, as `sort_by` does. The sort itself runs
/// over indices in one function that is not generic ([`stable_order`]),
/// so the page's wasm carries one sort for the planner's changes and the
/// search's rows instead of one per element type (measured: 0.7 KB gzip).
pub(crate) fn sort_stably<T: Clone>(v: &mut Vec<T>, cmp: impl Fn(&T, &T) -> Ordering) {
    let order = stable_order(v.len(), &|a, b| cmp(&v[a], &v[b]));
    *v = order.into_iter().map(|i| v[i].clone()).collect();
}

/// The indices `0..n` in the stable order `cmp` gives them.
fn stable_order(n: usize, cmp: &dyn Fn(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| cmp(a, b));
    order
}
