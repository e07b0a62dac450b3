//! Shared by the tests that run Open vSwitch's `ovs-ofctl` (testkit's
//! driver) and read what it prints.
#![allow(dead_code)]

/// `ovs-ofctl` is there (or the test is skipped).
pub fn have_ovs_ofctl(what: &str) -> bool {
    testkit::tool::OVS_OFCTL.available(what)
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}
