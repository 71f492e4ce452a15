//! One type for each kind of reactive value the views use.
//!
//! tachys compiles its rendering code once per type it renders, and every
//! `move ||` closure is a type of its own: a view written with closures for
//! its texts, attributes and handlers carries a copy of that code per
//! closure. Passing `Signal<String>`, `Signal<bool>` and boxed handlers
//! instead lets one copy serve the whole page (measured: 28 KB of gzip
//! less wasm, with `hidden` in place of `<Show>`; README "Size").
//!
//! The same holds for `<Show>` and `AnyView`, each a copy of tachys's code
//! per use: parts that differ by state are built once and hidden with the
//! `hidden` attribute instead.

use leptos::prelude::*;

/// Text that follows the page state.
pub type Text = Signal<String>;

/// Text computed by `f`, recomputed when what it reads changes.
pub fn text(f: impl Fn() -> String + Send + Sync + 'static) -> Text {
    Signal::derive(f)
}

/// An on/off value that follows the page state (`hidden`, `checked`, a class).
pub type Cond = Signal<bool>;

/// A condition computed by `f`.
pub fn cond(f: impl Fn() -> bool + Send + Sync + 'static) -> Cond {
    Signal::derive(f)
}

/// The negation of `c`, for `hidden` attributes.
pub fn not(c: Cond) -> Cond {
    Signal::derive(move || !c.get())
}

/// A handler for `input` and `change` events.
pub type OnEvent = Box<dyn FnMut(web_sys::Event)>;

/// Boxes `f` as an [`OnEvent`].
pub fn on_event(f: impl FnMut(web_sys::Event) + 'static) -> OnEvent {
    Box::new(f)
}

/// A handler for `click` events.
pub type OnClick = Box<dyn FnMut(web_sys::MouseEvent)>;

/// Boxes `f` as an [`OnClick`].
pub fn on_click(mut f: impl FnMut() + 'static) -> OnClick {
    Box::new(move |_| f())
}
