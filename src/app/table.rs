//! The budget as a table, the dominant-term sentence and each term's formula;
//! with a pinned baseline, its column and the change per term.

use super::reactive::{cond, not, text};
use super::{BaselineBudget, Budget, State};
use crate::budget::{
    dominant_sentence, figure, master_copy_example, rounding_note, Breakdown, Term,
};
use crate::chart::term_colour_hex;
use leptos::prelude::*;

/// `+73.0`, `−14.0` (a true minus sign), `0.0`.
fn signed(v: f64) -> String {
    let shown = format!("{:.1}", v.abs());
    if shown == "0.0" {
        shown
    } else if v > 0.0 {
        format!("+{shown}")
    } else {
        format!("−{shown}")
    }
}

/// A term's bytes, or the total for `None`.
fn bytes_of(b: &Breakdown, t: Option<Term>) -> f64 {
    t.map_or(b.total, |t| b.bytes(t))
}

/// The term whose figure changed most from `base` to `cur` (by size).
fn largest_change(base: &Breakdown, cur: &Breakdown) -> Option<Term> {
    let change = |t: Term| (cur.bytes(t) - base.bytes(t)).abs();
    Term::ALL
        .into_iter()
        .filter(|&t| change(t) > 0.0)
        .max_by(|&a, &b| change(a).total_cmp(&change(b)))
}

/// Rows Parameters … Activations and Total in the chosen unit to one
/// decimal (the CLI's figures in GB), each with its formula in symbols and
/// words; a Baseline and a Change column while a baseline is pinned.
#[component]
pub fn BudgetTable() -> impl IntoView {
    let Budget(budget) = super::context::<Budget>();
    let BaselineBudget(baseline) = super::context::<BaselineBudget>();
    let State(state) = super::context::<State>();
    let mixed = move || state.read().config.mixed_precision;
    let unit = move || state.read().unit;
    let shown = move |b: &Breakdown, t: Option<Term>| figure(bytes_of(b, t), unit());
    let current = move |t| budget.get().map(|b| shown(&b, t)).unwrap_or_default();
    let pinned = move || baseline.get().is_some();
    let base_cell = move |t| baseline.get().map(|b| shown(&b, t)).unwrap_or_default();
    let change_cell = move |t| match (baseline.get(), budget.get()) {
        (Some(base), Ok(cur)) => signed(unit().of(bytes_of(&cur, t) - bytes_of(&base, t))),
        _ => String::new(),
    };
    let largest = move || match (baseline.get(), budget.get()) {
        (Some(base), Ok(cur)) => largest_change(&base, &cur),
        _ => None,
    };
    let dominant = move || budget.get().ok().map(|b| b.dominant());
    // The current column's, or else the baseline's.
    let note = move || {
        let cur = budget.get().ok().and_then(|b| rounding_note(&b, unit()));
        let base = baseline.get().and_then(|b| rounding_note(&b, unit()));
        cur.or(base).unwrap_or_default().to_string()
    };
    let (why, lines) = master_copy_example();

    let hide_pinned = not(cond(pinned));
    let rows = Term::ALL.map(|term| {
        view! {
            <tr
                data-term=term.json_key()
                class:dominant=cond(move || dominant() == Some(term))
                class:largest-change=cond(move || largest() == Some(term))
            >
                <th scope="row">
                    <span class="swatch" style:background-color=term_colour_hex(term)></span>
                    {term.label()}
                </th>
                <td class="baseline num" hidden=hide_pinned>{text(move || base_cell(Some(term)))}</td>
                <td class="gb num">{text(move || current(Some(term)))}</td>
                <td class="change num" hidden=hide_pinned>{text(move || change_cell(Some(term)))}</td>
                <td class="formula">
                    <code>{text(move || term.formula(mixed()).to_string())}</code>
                    <span class="why">{text(move || term.explanation(mixed()).to_string())}</span>
                </td>
            </tr>
        }
    });

    view! {
        <p class="dominant-sentence" aria-live="polite">
            {text(move || match budget.get() {
                Ok(b) => dominant_sentence(&b, unit()),
                Err(e) => e.to_string(),
            })}
        </p>
        <table class="budget" class:comparing=cond(pinned)>
            <caption>
                {text(move || format!("Memory budget ({}; N = parameters)", unit().definition()))}
            </caption>
            <thead>
                <tr>
                    <th scope="col">"Term"</th>
                    <th scope="col" class="num" hidden=hide_pinned>"Baseline"</th>
                    <th scope="col" class="num">
                        {text(move || if pinned() { "Current".into() } else { unit().label().into() })}
                    </th>
                    <th scope="col" class="num" hidden=hide_pinned>"Change"</th>
                    <th scope="col" class="formula">"Formula"</th>
                </tr>
            </thead>
            <tbody>{rows.into_iter().collect_view()}</tbody>
            <tfoot>
                <tr data-term="total">
                    <th scope="row">{text(move || format!("Total ({})", unit().label()))}</th>
                    <td class="baseline num" hidden=hide_pinned>{text(move || base_cell(None))}</td>
                    <td class="gb num">{text(move || current(None))}</td>
                    <td class="change num" hidden=hide_pinned>{text(move || change_cell(None))}</td>
                    <td class="formula">
                        <code>"sum of the five terms"</code>
                        <span class="why" id="rounding-note">{text(note)}</span>
                    </td>
                </tr>
            </tfoot>
        </table>
        <figure class="master-why" id="master-why">
            <figcaption>{why}</figcaption>
            <pre>{lines.join("\n")}</pre>
        </figure>
    }
}
