//! What the monitor tests share.

/// Every capture of tcpdump's test suite (`../shared/pcaps/tcpdump`), sorted.
pub fn captures() -> Vec<std::path::PathBuf> {
    let dir =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/pcaps/tcpdump");
    let mut v: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng"))
        .collect();
    v.sort();
    v
}

/// `f` over every capture, on every core (for tools such as tshark whose
/// start-up dominates), by path.
#[allow(dead_code)] // not every test binary that shares this module uses it
pub fn on_every_capture<T: Send>(
    f: impl Fn(&std::path::Path) -> T + Sync,
) -> std::collections::HashMap<std::path::PathBuf, T> {
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
