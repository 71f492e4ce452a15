//! What to change: the levers that make a step fit a card, priced by its
//! peak and in GPU-time ([`planner`]), the search over every layout
//! that fits, fastest first ([`search`]), and what a row changes and what
//! the reader holds fixed ([`diff`]). The top room: it reads every
//! other and nothing reads it but the command line and the page.

pub mod diff;
pub mod planner;
pub mod search;
