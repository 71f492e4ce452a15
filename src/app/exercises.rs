//! The lesson's two exercises, each set up with one click or one link.

use super::canvas::Charts;
use super::reactive::{cond, on_click, text};
use super::State;
use crate::state::{Exercise, PageState};
use crate::url::encode;
use leptos::prelude::*;

/// One exercise: the task, a button that sets up the comparison, its own
/// link, and the explanation once the comparison is on screen.
#[component]
fn ExerciseCard(
    /// Which exercise.
    exercise: Exercise,
) -> impl IntoView {
    let State(state) = super::context::<State>();
    let charts = super::context::<Charts>();
    let n = exercise.number();
    let tried = move || exercise.tried(&state.read());
    let link = format!("?{}", encode(&exercise.setup(&PageState::default())));
    view! {
        <article
            class="exercise"
            id=format!("exercise-{n}")
            class:active=cond(move || state.read().exercise == Some(exercise))
        >
            <h3>{format!("Exercise {n}")}</h3>
            <p>{exercise.task()}</p>
            <div class="buttons">
                <button
                    type="button"
                    id=format!("exercise-{n}-setup")
                    on:click=on_click(move || charts.change(state, |s| *s = exercise.setup(s)))
                >
                    "Set it up"
                </button>
                <a href=link id=format!("exercise-{n}-link")>
                    "Link to this exercise"
                </a>
            </div>
            <p class="explanation" id=format!("exercise-{n}-explanation")>
                {text(move || {
                    if tried() {
                        exercise.explanation(state.read().unit)
                    } else {
                        "Try it (or press “Set it up”): the baseline and the change appear side by side, and the explanation here.".into()
                    }
                })}
            </p>
        </article>
    }
}

/// The exercises panel.
#[component]
pub fn Exercises() -> impl IntoView {
    view! {
        <section class="panel exercises" aria-labelledby="exercises-title">
            <h2 id="exercises-title">"Exercises"</h2>
            {Exercise::ALL
                .into_iter()
                .map(|exercise| view! { <ExerciseCard exercise=exercise /> })
                .collect_view()}
        </section>
    }
}

/// In an embed (`?embed=1&ex=2`), the exercise's question under the
/// controls, and its explanation behind "Answer" once the comparison is on
/// screen (the exercises panel is left out of the compact layout, and the
/// answer stays folded so that the reader tries first and the 640×480
/// frame does not scroll).
#[component]
pub fn EmbeddedExercise() -> impl IntoView {
    let State(state) = super::context::<State>();
    move || {
        let s = state.read();
        let exercise = s.exercise.filter(|_| s.embed)?;
        let tried = exercise.tried(&s);
        Some(view! {
            <div class="embed-exercise" id="embed-exercise">
                <p class="question">
                    <strong>{format!("Exercise {}: ", exercise.number())}</strong>
                    {exercise.task()}
                </p>
                <details class="explanation" hidden=!tried>
                    <summary>"Answer"</summary>
                    {exercise.explanation(s.unit)}
                </details>
            </div>
        })
    }
}
