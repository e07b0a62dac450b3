//! The error a decode ends with: the OpenFlow error (type, code) a switch
//! answers with, and a reason for people.

use crate::types::{ErrorMsg, error};

/// A message that cannot be decoded, with the `ofp_error_msg` type and code
/// the peer must be told and what was wrong where.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("{reason} (OpenFlow error type {err_type}, code {code})")]
pub struct DecodeError {
    pub err_type: u16,
    pub code: u16,
    pub reason: String,
}

impl DecodeError {
    pub fn new(err_type: u16, code: u16, reason: impl Into<String>) -> Self {
        DecodeError {
            err_type,
            code,
            reason: reason.into(),
        }
    }

    /// BAD_REQUEST/BAD_LEN, the error of a message whose lengths disagree.
    pub(crate) fn bad_len(reason: impl Into<String>) -> Self {
        Self::new(error::BAD_REQUEST, error::BAD_REQUEST_BAD_LEN, reason)
    }

    /// The same error with `what` (the message or part being decoded) in
    /// front of its reason.
    pub(crate) fn within(mut self, what: &str) -> Self {
        self.reason = format!("{what}: {}", self.reason);
        self
    }

    /// The ERROR message that answers `request`: this error's type and code
    /// with the request's first 64 bytes, as the specification asks.
    pub fn reply(&self, request: &[u8]) -> ErrorMsg {
        ErrorMsg {
            err_type: self.err_type,
            code: self.code,
            data: request[..request.len().min(64)].to_vec(),
        }
    }
}
