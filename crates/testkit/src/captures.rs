//! The captures every test reads: tcpdump's test suite, shared by the
//! checkouts in `../shared/pcaps/tcpdump` (many malformed on purpose), and
//! the program objects the build puts in `target/bpf`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The directory of tcpdump's test captures.
pub fn captures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/pcaps/tcpdump")
}

/// One capture of tcpdump's suite, by file name.
pub fn capture(name: &str) -> PathBuf {
    captures_dir().join(name)
}

/// Every capture of tcpdump's suite (`.pcap` and `.pcapng`), sorted.
pub fn captures() -> Vec<PathBuf> {
    let dir = captures_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng"))
        .collect();
    files.sort();
    files
}

/// `f` over every capture, on every core (for tools such as tshark whose
/// start-up dominates), by path.
pub fn on_every_capture<T: Send>(f: impl Fn(&Path) -> T + Sync) -> HashMap<PathBuf, T> {
    let paths = captures();
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = paths
            .chunks(paths.len().div_ceil(workers))
            .map(|chunk| {
                s.spawn(move || chunk.iter().map(|p| (p.clone(), f(p))).collect::<Vec<_>>())
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    })
}

/// The object the build made of `programs/NAME.c`: `target/bpf/NAME.o`
/// of the checkout, as a string for command lines.
pub fn object_path(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../../target/bpf/{name}.o"))
        .display()
        .to_string()
}
