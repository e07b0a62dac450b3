//! A request the switch refuses, with the OpenFlow error (type, code) it
//! answers and a sentence for people.

/// An OpenFlow error reply's type and code, and why.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("{reason} (OpenFlow error type {err_type}, code {code})")]
pub struct OfError {
    pub err_type: u16,
    pub code: u16,
    pub reason: String,
}

impl OfError {
    pub fn new(err_type: u16, code: u16, reason: impl Into<String>) -> OfError {
        OfError {
            err_type,
            code,
            reason: reason.into(),
        }
    }
}
