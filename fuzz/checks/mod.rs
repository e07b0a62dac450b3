//! The property of every fuzz target, one module each (`check(data)`
//! panics when the input breaks it): the fuzz targets call them, and so
//! does the regression test that replays `fuzz/regressions/<target>/*`
//! under `cargo test` (crates/cli/tests/fuzz_regressions.rs).

#[path = "assemble.rs"]
pub mod assemble;
#[path = "btf.rs"]
pub mod btf;
#[path = "captures.rs"]
pub mod captures;
#[path = "cbpf.rs"]
pub mod cbpf;
#[path = "decode.rs"]
pub mod decode;
#[path = "elf.rs"]
pub mod elf;
#[path = "expr.rs"]
pub mod expr;
#[path = "genspec.rs"]
pub mod genspec;
#[path = "interp.rs"]
pub mod interp;
#[path = "ipfix.rs"]
pub mod ipfix;
#[path = "jit.rs"]
pub mod jit;
#[path = "mapupdate.rs"]
pub mod mapupdate;
#[path = "ofctl.rs"]
pub mod ofctl;
#[path = "openflow.rs"]
pub mod openflow;
#[path = "packet.rs"]
pub mod packet;
#[path = "routes.rs"]
pub mod routes;
#[path = "tc.rs"]
pub mod tc;
#[path = "verifier.rs"]
pub mod verifier;
#[path = "xpf.rs"]
pub mod xpf;

/// Every target, in the order `./dev.sh fuzz` runs them.
pub const TARGETS: [&str; 19] = [
    "decode",
    "assemble",
    "interp",
    "elf",
    "verifier",
    "jit",
    "cbpf",
    "xpf",
    "captures",
    "openflow",
    "packet",
    "genspec",
    "btf",
    "expr",
    "tc",
    "ofctl",
    "ipfix",
    "routes",
    "mapupdate",
];

/// Runs `data` through `target`'s check; `false` for an unknown target.
pub fn run(target: &str, data: &[u8]) -> bool {
    match target {
        "decode" => decode::check(data),
        "assemble" => assemble::check(data),
        "interp" => interp::check(data),
        "elf" => elf::check(data),
        "verifier" => verifier::check(data),
        "jit" => jit::check(data),
        "cbpf" => cbpf::check(data),
        "xpf" => xpf::check(data),
        "captures" => captures::check(data),
        "openflow" => openflow::check(data),
        "packet" => packet::check(data),
        "genspec" => genspec::check(data),
        "btf" => btf::check(data),
        "expr" => expr::check(data),
        "tc" => tc::check(data),
        "ofctl" => ofctl::check(data),
        "ipfix" => ipfix::check(data),
        "routes" => routes::check(data),
        "mapupdate" => mapupdate::check(data),
        _ => return false,
    }
    true
}
