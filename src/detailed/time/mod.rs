//! How long a step takes: the cards ([`hardware`]), the model's and the
//! hardware's FLOPs ([`flops`]), and one optimizer step's time and where it
//! goes ([`steptime`]), and the range its validation supports
//! ([`validation`]). Reads what a step keeps from
//! [`crate::detailed::memory`]; nothing below it reads time.

pub mod flops;
pub mod hardware;
pub mod steptime;
pub mod validation;
