//! Classifiers by their `tc` kind name.

use crate::bpf::Bpf;
use crate::classifier::Classifier;
use crate::error::TcError;
use crate::flower::Flower;
use crate::matchall::Matchall;
use crate::protocol::ETH_P_ALL;
use crate::u32::U32;

/// A new, empty classifier of `kind` (as after `tc filter add ... KIND`),
/// for a filter of protocol `all`.
pub fn new_classifier(kind: &str) -> Result<Box<dyn Classifier>, TcError> {
    new_classifier_for(kind, ETH_P_ALL)
}

/// A new, empty classifier of `kind` for a filter of `protocol` (flower
/// reads its keys against the protocol, as tc does).
pub fn new_classifier_for(kind: &str, protocol: u16) -> Result<Box<dyn Classifier>, TcError> {
    match kind {
        "u32" => Ok(Box::new(U32::new())),
        "matchall" => Ok(Box::new(Matchall::default())),
        "bpf" => Ok(Box::new(Bpf::default())),
        "flower" => Ok(Box::new(Flower::new(protocol))),
        other => Err(TcError::UnknownKind(other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_known_and_others_are_named() {
        assert_eq!(new_classifier("u32").unwrap().kind(), "u32");
        assert_eq!(new_classifier("flower").unwrap().kind(), "flower");
        assert_eq!(
            new_classifier_for("flower", 0x0800).unwrap().kind(),
            "flower"
        );
        for k in ["matchall", "bpf"] {
            assert_eq!(new_classifier(k).unwrap().kind(), k);
        }
        let e = new_classifier("basic").unwrap_err().to_string();
        assert!(e.contains("\"basic\"") && e.contains("flower"), "{e}");
    }
}
