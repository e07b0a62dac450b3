//! Maps as large as production programs declare: memory is used as entries
//! are written, walks skip what was never written, and changes are told by
//! key.

use maps::{Changes, Map, MapSpec, MapType};

fn k32(i: u32) -> Vec<u8> {
    i.to_le_bytes().to_vec()
}

/// This process's resident memory, in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

// These measure what the kernel accounts for the arena's pages (resident
// memory, /proc/self/pagemap) in maps of hundreds of megabytes: Miri
// models neither the files nor lazily backed pages, so they run natively only.
#[test]
#[cfg_attr(miri, ignore = "needs /proc and lazily backed pages")]
fn a_huge_array_costs_what_it_holds() {
    const N: u32 = 50_000_000;
    let before = rss_kib();
    // 400 MB of declared values.
    let m = Map::new(MapSpec::new("big", MapType::Array, 4, 8, N), 1).unwrap();
    for i in [3u32, 12_345_678, N - 1] {
        m.user_update(&k32(i), &u64::from(i).to_le_bytes(), 0)
            .unwrap();
    }
    let (entries, zeros) = m.entries_skipping_zeros();
    let keys: Vec<u32> = entries
        .iter()
        .map(|(k, _)| u32::from_le_bytes(k[..4].try_into().unwrap()))
        .collect();
    assert_eq!(keys, [3, 12_345_678, N - 1]);
    assert_eq!(entries[1].1, 12_345_678u64.to_le_bytes());
    assert_eq!(zeros, N as usize - 3);
    // The walk read no page that was never written: far under the 400 MB.
    let grown = rss_kib().saturating_sub(before);
    assert!(grown < 32 * 1024, "RSS grew by {grown} KiB");
    assert_eq!(m.user_lookup(&k32(7)).unwrap(), [0; 8]);
}

#[test]
#[cfg_attr(miri, ignore = "needs /proc and lazily backed pages")]
fn per_cpu_arrays_skip_zero_entries_on_every_cpu() {
    let m = Map::new(MapSpec::new("pc", MapType::PercpuArray, 4, 4, 100_000), 4).unwrap();
    let mut v = vec![0u8; 32];
    v[24] = 9; // CPU 3's copy of entry 77.
    m.user_update(&k32(77), &v, 0).unwrap();
    let (entries, zeros) = m.entries_skipping_zeros();
    assert_eq!(entries, vec![(k32(77), v)]);
    assert_eq!(zeros, 99_999);
}

#[test]
#[cfg_attr(miri, ignore = "needs /proc and lazily backed pages")]
fn changes_are_told_by_key() {
    let a = Map::new(MapSpec::new("a", MapType::Array, 4, 8, 1 << 20), 1).unwrap();
    a.user_update(&k32(5), &[1; 8], 0).unwrap();
    let mut t = a.track().unwrap();
    assert_eq!(a.changes(&mut t), Changes::Keys(vec![]));
    a.user_update(&k32(9), &[2; 8], 0).unwrap();
    a.user_update(&k32(5), &[1; 8], 0).unwrap(); // unchanged
    a.user_update(&k32(1_000_000), &[3; 8], 0).unwrap();
    assert_eq!(
        a.changes(&mut t),
        Changes::Keys(vec![k32(9), k32(1_000_000)])
    );
    assert_eq!(a.changes(&mut t), Changes::Keys(vec![]));

    let h = Map::new(MapSpec::new("h", MapType::LruHash, 4, 4, 2), 1).unwrap();
    h.user_update(&k32(1), &[0; 4], 0).unwrap();
    let mut t = h.track().unwrap();
    h.user_update(&k32(2), &[0; 4], 0).unwrap(); // a zero value: told by the log
    h.user_update(&k32(1), &[7; 4], 0).unwrap();
    assert_eq!(h.changes(&mut t), Changes::Keys(vec![k32(1), k32(2)]));
    h.user_update(&k32(3), &[1; 4], 0).unwrap(); // evicts 2
    assert_eq!(h.changes(&mut t), Changes::Keys(vec![k32(2), k32(3)]));
    h.delete(&k32(1)).unwrap();
    assert_eq!(h.changes(&mut t), Changes::Keys(vec![k32(1)]));
}
