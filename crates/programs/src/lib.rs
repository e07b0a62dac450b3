//! The example programs of `programs/`, built by this crate's build script
//! with clang (`-target bpf -O2 -g -mcpu=v3`). The objects are also written
//! to `target/bpf/<name>.o`.

pub mod compile;
pub mod thirdparty;

include!(concat!(env!("OUT_DIR"), "/programs.rs"));

/// The object of program `name` (e.g. `xdp_ddos`).
pub fn object(name: &str) -> Option<&'static [u8]> {
    PROGRAMS
        .iter()
        .find(|(n, ..)| *n == name)
        .map(|(_, o, _)| *o)
}

/// The object of tool program `name` (`gen`, `xsk`): programs sluice
/// loads into the kernel for its own tools, not examples.
pub fn tool(name: &str) -> Option<&'static [u8]> {
    TOOLS.iter().find(|(n, ..)| *n == name).map(|(_, o, _)| *o)
}

/// Every tool program: (name, object).
pub fn tools() -> impl Iterator<Item = (&'static str, &'static [u8])> {
    TOOLS.iter().map(|(n, o, _)| (*n, *o))
}

/// The context probes: (name, object).
pub fn probes() -> impl Iterator<Item = (&'static str, &'static [u8])> {
    PROBES.iter().map(|(n, o, _)| (*n, *o))
}

/// The C source of program `name`.
pub fn source(name: &str) -> Option<&'static str> {
    PROGRAMS.iter().find(|(n, ..)| *n == name).map(|(.., s)| *s)
}

/// The assembly of xPF program `name` (`programs/xpf/<name>.s`).
pub fn xpf(name: &str) -> Option<&'static str> {
    XPF.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// Names of all example programs.
pub fn names() -> impl Iterator<Item = &'static str> {
    PROGRAMS.iter().map(|(n, ..)| *n)
}

/// Where the build put the programs' headers, for compiling variants.
pub fn include_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/include")
}

/// The captures of tcpdump's test suite (`../shared/pcaps/tcpdump`, many
/// malformed on purpose) that every program must survive, sorted.
pub fn captures() -> Vec<std::path::PathBuf> {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/pcaps/tcpdump");
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng"))
        .collect();
    files.sort();
    files
}

/// Where the C sources are.
pub fn source_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs")
}
