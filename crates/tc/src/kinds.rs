//! Classifiers by their `tc` kind name.

use crate::block::ETH_P_ALL;
use crate::classifier::Classifier;
use crate::flower::Flower;
use crate::u32::U32;

/// A new, empty classifier of `kind` (as after `tc filter add ... KIND`),
/// for a filter of protocol `all`.
pub fn new_classifier(kind: &str) -> Result<Box<dyn Classifier>, String> {
    new_classifier_for(kind, ETH_P_ALL)
}

/// A new, empty classifier of `kind` for a filter of `protocol` (flower
/// reads its keys against the protocol, as tc does).
pub fn new_classifier_for(kind: &str, protocol: u16) -> Result<Box<dyn Classifier>, String> {
    match kind {
        "u32" => Ok(Box::new(U32::new())),
        "flower" => Ok(Box::new(Flower::new(protocol))),
        other => Err(format!(
            "Unknown filter \"{other}\": sluice has u32 and flower; matchall and bpf are to come"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u32_and_flower_are_known_and_others_are_named() {
        assert_eq!(new_classifier("u32").unwrap().kind(), "u32");
        assert_eq!(new_classifier("flower").unwrap().kind(), "flower");
        assert_eq!(
            new_classifier_for("flower", 0x0800).unwrap().kind(),
            "flower"
        );
        let e = new_classifier("matchall").unwrap_err();
        assert!(e.contains("\"matchall\"") && e.contains("to come"), "{e}");
    }
}
