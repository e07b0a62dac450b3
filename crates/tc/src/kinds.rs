//! Classifiers by their `tc` kind name.

use crate::bpf::Bpf;
use crate::classifier::Classifier;
use crate::matchall::Matchall;
use crate::u32::U32;

/// A new, empty classifier of `kind` (as after `tc filter add ... KIND`).
pub fn new_classifier(kind: &str) -> Result<Box<dyn Classifier>, String> {
    match kind {
        "u32" => Ok(Box::new(U32::new())),
        "matchall" => Ok(Box::new(Matchall::default())),
        "bpf" => Ok(Box::new(Bpf::default())),
        other => Err(format!(
            "Unknown filter \"{other}\": sluice has u32, matchall and bpf; flower is to come"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u32_is_known_and_others_are_named() {
        assert_eq!(new_classifier("u32").unwrap().kind(), "u32");
        let e = new_classifier("flower").unwrap_err();
        assert!(e.contains("\"flower\"") && e.contains("to come"), "{e}");
    }
}
