//! The budget as a table, the dominant-term sentence and each term's formula.

use super::{Budget, Inputs};
use crate::budget::{dominant_sentence, Term};
use crate::chart::term_colour_hex;
use leptos::prelude::*;

/// Rows Parameters … Activations and Total, GB to one decimal (the CLI's
/// figures), each with its formula in symbols and words.
#[component]
pub fn BudgetTable() -> impl IntoView {
    let Budget(budget) = expect_context::<Budget>();
    let Inputs(inputs) = expect_context::<Inputs>();
    let mixed = move || inputs.read().mixed_precision;
    let gb = move |t: Term| {
        budget
            .get()
            .map(|b| format!("{:.1}", b.gb(t)))
            .unwrap_or_default()
    };
    let dominant = move || budget.get().ok().map(|b| b.dominant());

    let rows = Term::ALL.map(|term| {
        view! {
            <tr data-term=term.json_key() class:dominant=move || dominant() == Some(term)>
                <th scope="row">
                    <span class="swatch" style:background-color=term_colour_hex(term)></span>
                    {term.label()}
                </th>
                <td class="gb">{move || gb(term)}</td>
                <td class="formula">
                    <code>{move || term.formula(mixed())}</code>
                    <span class="why">{move || term.explanation(mixed())}</span>
                </td>
            </tr>
        }
    });

    view! {
        <p class="dominant-sentence" aria-live="polite">
            {move || match budget.get() {
                Ok(b) => dominant_sentence(&b),
                Err(e) => e.to_string(),
            }}
        </p>
        <table class="budget">
            <caption>"Memory budget (GB = 10" <sup>"9"</sup> " bytes; N = parameters)"</caption>
            <thead>
                <tr>
                    <th scope="col">"Term"</th>
                    <th scope="col" class="gb">"GB"</th>
                    <th scope="col">"Formula"</th>
                </tr>
            </thead>
            <tbody>{rows.into_iter().collect_view()}</tbody>
            <tfoot>
                <tr data-term="total">
                    <th scope="row">"Total"</th>
                    <td class="gb">
                        {move || budget.get().map(|b| format!("{:.1}", b.total_gb())).unwrap_or_default()}
                    </td>
                    <td class="formula"><code>"sum of the five terms"</code></td>
                </tr>
            </tfoot>
        </table>
    }
}
