//! Each map type behaves as the kernel documents, errors included.

use maps::*;

fn k32(i: u32) -> [u8; 4] {
    i.to_le_bytes()
}
fn v64(v: u64) -> [u8; 8] {
    v.to_le_bytes()
}
fn map(t: MapType, k: u32, v: u32, n: u32) -> Map {
    Map::new(MapSpec::new("m", t, k, v, n), 2).unwrap()
}
/// Reads the value a program pointer designates (the arena is host memory).
fn read_at(addr: u64, len: usize) -> Vec<u8> {
    // SAFETY: tests only pass addresses `lookup_addr` returned, of a live map.
    unsafe { std::slice::from_raw_parts(addr as *const u8, len).to_vec() }
}
fn write_at(addr: u64, bytes: &[u8]) {
    // SAFETY: as in `read_at`; the map is program-writable.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), addr as *mut u8, bytes.len()) }
}

#[test]
fn array() {
    let m = map(MapType::Array, 4, 6, 4);
    // Elements always exist and start zeroed.
    assert_eq!(m.user_lookup(&k32(3)).unwrap(), vec![0; 6]);
    assert_eq!(m.user_lookup(&k32(4)), Err(Errno::ENOENT));
    assert!(m.lookup_addr(&k32(4), 0).is_none());
    assert_eq!(
        m.user_update(&k32(1), b"abcdef", update::NOEXIST),
        Err(Errno::EEXIST)
    );
    assert_eq!(
        m.user_update(&k32(4), b"abcdef", update::ANY),
        Err(Errno::E2BIG)
    );
    assert_eq!(m.user_update(&k32(1), b"abcdef", 8), Err(Errno::EINVAL));
    m.user_update(&k32(1), b"abcdef", update::EXIST).unwrap();
    assert_eq!(m.delete(&k32(1)), Err(Errno::EINVAL));
    // A program's pointer sees the value and its writes reach user space;
    // elements are 8 bytes apart (value size rounded up).
    let p1 = m.lookup_addr(&k32(1), 0).unwrap();
    let p2 = m.lookup_addr(&k32(2), 0).unwrap();
    assert_eq!(p2 - p1, 8);
    assert_eq!(read_at(p1, 6), b"abcdef");
    write_at(p1, b"xy");
    assert_eq!(m.user_lookup(&k32(1)).unwrap(), b"xycdef");
    // get_next_key walks 0..max, starting over on an unknown key.
    assert_eq!(m.user_next_key(None).unwrap(), k32(0));
    assert_eq!(m.user_next_key(Some(&k32(2))).unwrap(), k32(3));
    assert_eq!(m.user_next_key(Some(&k32(3))), Err(Errno::ENOENT));
    assert_eq!(m.user_next_key(Some(&k32(99))).unwrap(), k32(0));
    assert_eq!(m.entries().len(), 4);
}

#[test]
fn percpu_array() {
    let m = map(MapType::PercpuArray, 4, 4, 2);
    m.prog_update(&k32(0), &7u32.to_le_bytes(), update::ANY, 1)
        .unwrap();
    // User space sees every CPU's copy, each rounded up to 8 bytes.
    assert_eq!(
        m.user_lookup(&k32(0)).unwrap(),
        [0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0]
    );
    assert_ne!(m.lookup_addr(&k32(0), 0), m.lookup_addr(&k32(0), 1));
    assert_eq!(
        read_at(m.lookup_addr(&k32(0), 1).unwrap(), 4),
        7u32.to_le_bytes()
    );
    let mut all = vec![0u8; 16];
    all[0] = 1;
    all[8] = 2;
    m.user_update(&k32(1), &all, update::ANY).unwrap();
    assert_eq!(read_at(m.lookup_addr(&k32(1), 0).unwrap(), 1), [1]);
    assert_eq!(read_at(m.lookup_addr(&k32(1), 1).unwrap(), 1), [2]);
    assert_eq!(
        m.user_update(&k32(1), &[0; 8], update::ANY),
        Err(Errno::EINVAL),
        "value for one CPU only"
    );
}

#[test]
fn hash() {
    let m = map(MapType::Hash, 4, 8, 2);
    assert_eq!(m.user_lookup(&k32(1)), Err(Errno::ENOENT));
    assert_eq!(
        m.user_update(&k32(1), &v64(10), update::EXIST),
        Err(Errno::ENOENT)
    );
    m.user_update(&k32(1), &v64(10), update::NOEXIST).unwrap();
    assert_eq!(
        m.user_update(&k32(1), &v64(11), update::NOEXIST),
        Err(Errno::EEXIST)
    );
    m.user_update(&k32(1), &v64(11), update::EXIST).unwrap();
    let p = m.lookup_addr(&k32(1), 0).unwrap();
    m.prog_update(&k32(2), &v64(20), update::ANY, 0).unwrap();
    // Full: a third key does not fit, but existing keys still update.
    assert_eq!(
        m.user_update(&k32(3), &v64(30), update::ANY),
        Err(Errno::E2BIG)
    );
    m.user_update(&k32(2), &v64(21), update::ANY).unwrap();
    // Values do not move while their element lives.
    assert_eq!(m.lookup_addr(&k32(1), 0), Some(p));
    assert_eq!(read_at(p, 8), v64(11));
    assert_eq!(m.user_update(&k32(1), &v64(1), 3), Err(Errno::EINVAL));
    assert_eq!(m.user_next_key(None).unwrap(), k32(1));
    assert_eq!(m.user_next_key(Some(&k32(1))).unwrap(), k32(2));
    assert_eq!(m.user_next_key(Some(&k32(2))), Err(Errno::ENOENT));
    m.delete(&k32(1)).unwrap();
    assert_eq!(m.delete(&k32(1)), Err(Errno::ENOENT));
    m.user_update(&k32(3), &v64(30), update::ANY).unwrap();
    assert_eq!(m.len(), 2);
    assert_eq!(
        m.entries(),
        vec![
            (k32(3).to_vec(), v64(30).to_vec()),
            (k32(2).to_vec(), v64(21).to_vec())
        ]
    );
}

#[test]
fn percpu_hash_zeroes_other_cpus_of_a_new_element() {
    let m = map(MapType::PercpuHash, 4, 8, 4);
    m.user_update(&k32(1), &[[1u8; 8], [2u8; 8]].concat(), update::ANY)
        .unwrap();
    m.delete(&k32(1)).unwrap();
    m.prog_update(&k32(1), &v64(5), update::ANY, 1).unwrap();
    assert_eq!(m.user_lookup(&k32(1)).unwrap(), [v64(0), v64(5)].concat());
    // Updating an existing element from a program touches its CPU only.
    m.prog_update(&k32(1), &v64(6), update::ANY, 0).unwrap();
    assert_eq!(m.user_lookup(&k32(1)).unwrap(), [v64(6), v64(5)].concat());
}

#[test]
fn lru_hash_evicts_the_least_recently_used() {
    for t in [MapType::LruHash, MapType::LruPercpuHash] {
        let m = map(t, 4, 8, 3);
        let val = |v| {
            if t == MapType::LruHash {
                v64(v).to_vec()
            } else {
                [v64(v), v64(v)].concat()
            }
        };
        for i in 1..=3 {
            m.user_update(&k32(i), &val(u64::from(i)), update::ANY)
                .unwrap();
        }
        // A program lookup makes 1 recent; 2 is now the oldest.
        assert!(m.lookup_addr(&k32(1), 0).is_some());
        m.user_update(&k32(4), &val(4), update::ANY).unwrap();
        assert_eq!(m.user_lookup(&k32(2)), Err(Errno::ENOENT), "{t}");
        assert!(m.user_lookup(&k32(1)).is_ok());
        assert_eq!(m.len(), 3);
        // NOEXIST on a present key still fails.
        assert_eq!(
            m.user_update(&k32(4), &val(4), update::NOEXIST),
            Err(Errno::EEXIST)
        );
    }
}

fn lpm_key(plen: u32, addr: [u8; 4]) -> Vec<u8> {
    [plen.to_le_bytes(), addr].concat()
}

#[test]
fn lpm_trie() {
    let e = Map::new(MapSpec::new("t", MapType::LpmTrie, 8, 4, 4), 1)
        .err()
        .unwrap();
    assert!(e.reason.contains("BPF_F_NO_PREALLOC"), "{e}");
    let mut m = Map::new(
        MapSpec::new("t", MapType::LpmTrie, 8, 4, 3).with_flags(flags::NO_PREALLOC),
        1,
    )
    .unwrap();
    m.user_update(&lpm_key(8, [10, 0, 0, 0]), &1u32.to_le_bytes(), update::ANY)
        .unwrap();
    m.user_update(
        &lpm_key(24, [10, 1, 2, 99]),
        &2u32.to_le_bytes(),
        update::ANY,
    )
    .unwrap();
    m.user_update(&lpm_key(0, [0; 4]), &3u32.to_le_bytes(), update::ANY)
        .unwrap();
    let lookup = |m: &mut Map, a| m.lookup_addr(&lpm_key(32, a), 0).map(|p| read_at(p, 4)[0]);
    assert_eq!(lookup(&mut m, [10, 1, 2, 3]), Some(2));
    assert_eq!(lookup(&mut m, [10, 1, 3, 3]), Some(1));
    assert_eq!(lookup(&mut m, [11, 1, 2, 3]), Some(3));
    // The lookup key's own prefix length caps the match.
    assert_eq!(
        m.lookup_addr(&lpm_key(16, [10, 1, 2, 3]), 0)
            .map(|p| read_at(p, 4)[0]),
        Some(1)
    );
    assert_eq!(
        m.user_update(&lpm_key(33, [0; 4]), &[0; 4], update::ANY),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        m.user_update(&lpm_key(16, [10, 1, 0, 0]), &[0; 4], update::ANY),
        Err(Errno::ENOSPC)
    );
    assert_eq!(
        m.user_update(&lpm_key(8, [10, 9, 9, 9]), &[9; 4], update::NOEXIST),
        Err(Errno::EEXIST)
    );
    assert_eq!(
        m.user_update(&lpm_key(16, [10, 1, 0, 0]), &[0; 4], update::EXIST),
        Err(Errno::ENOENT)
    );
    assert_eq!(m.delete(&lpm_key(16, [10, 0, 0, 0])), Err(Errno::ENOENT));
    m.delete(&lpm_key(24, [10, 1, 2, 0])).unwrap();
    assert_eq!(lookup(&mut m, [10, 1, 2, 3]), Some(1));
    assert_eq!(m.entries().len(), 2);
}

#[test]
fn prog_and_map_arrays() {
    let m = map(MapType::ProgArray, 4, 4, 4);
    assert_eq!(
        m.user_update(&k32(0), &k32(7), update::NOEXIST),
        Err(Errno::EINVAL),
        "fd arrays take BPF_ANY only"
    );
    assert_eq!(
        m.user_update(&k32(4), &k32(7), update::ANY),
        Err(Errno::E2BIG)
    );
    m.user_update(&k32(2), &k32(7), update::ANY).unwrap();
    assert_eq!(m.ref_at(&k32(2)), Some(7));
    assert_eq!(m.ref_at(&k32(1)), None);
    assert_eq!(
        m.user_next_key(None).unwrap(),
        k32(2),
        "empty slots are skipped"
    );
    assert_eq!(m.delete(&k32(1)), Err(Errno::ENOENT));
    m.delete(&k32(2)).unwrap();
    assert_eq!(m.ref_at(&k32(2)), None);

    let outer = map(MapType::HashOfMaps, 4, 4, 2);
    outer.user_update(&k32(100), &k32(3), update::ANY).unwrap();
    assert_eq!(outer.ref_at(&k32(100)), Some(3));
    assert_eq!(outer.ref_at(&k32(101)), None);
}

#[test]
fn device_cpu_and_socket_maps() {
    let dev = map(MapType::Devmap, 4, 4, 8);
    assert_eq!(
        dev.user_update(&k32(1), &k32(0), update::ANY),
        Err(Errno::EINVAL),
        "no interface 0"
    );
    assert_eq!(
        dev.user_update(&k32(1), &k32(5), update::NOEXIST),
        Err(Errno::EEXIST)
    );
    assert_eq!(
        dev.user_update(&k32(8), &k32(5), update::ANY),
        Err(Errno::E2BIG)
    );
    dev.user_update(&k32(1), &k32(5), update::ANY).unwrap();
    assert_eq!(dev.ref_at(&k32(1)), Some(5));
    assert_eq!(read_at(dev.lookup_addr(&k32(1), 0).unwrap(), 4), k32(5));
    assert!(
        !dev.program_writable(),
        "devmap values are read-only to programs"
    );
    assert_eq!(
        dev.delete(&k32(3)),
        Ok(()),
        "deleting an empty devmap slot succeeds"
    );
    assert_eq!(dev.delete(&k32(9)), Err(Errno::EINVAL));

    let devh = map(MapType::DevmapHash, 4, 8, 2);
    devh.user_update(&k32(1000), &[6, 0, 0, 0, 0, 0, 0, 0], update::ANY)
        .unwrap();
    assert_eq!(devh.ref_at(&k32(1000)), Some(6));

    let cpu = map(MapType::Cpumap, 4, 4, 4);
    cpu.user_update(&k32(1), &k32(192), update::ANY).unwrap();
    assert_eq!(cpu.ref_at(&k32(1)), Some(192));
    cpu.user_update(&k32(1), &k32(0), update::ANY).unwrap();
    assert_eq!(cpu.ref_at(&k32(1)), None, "queue size 0 removes the CPU");

    let xsk = map(MapType::Xskmap, 4, 4, 4);
    xsk.user_update(&k32(0), &k32(42), update::ANY).unwrap();
    assert!(xsk.lookup_addr(&k32(0), 0).is_some());
    assert!(xsk.lookup_addr(&k32(1), 0).is_none());
}

#[test]
fn queue_and_stack() {
    for (t, first) in [(MapType::Queue, 1u8), (MapType::Stack, 3u8)] {
        let m = map(t, 0, 1, 3);
        assert_eq!(m.pop(true), Err(Errno::ENOENT));
        for i in 1..=3u8 {
            m.push(&[i], update::ANY).unwrap();
        }
        assert_eq!(m.push(&[4], update::ANY), Err(Errno::E2BIG));
        assert_eq!(m.push(&[4], update::NOEXIST), Err(Errno::EINVAL));
        assert_eq!(m.pop(false).unwrap(), vec![first], "{t} peek");
        assert_eq!(m.user_lookup(&[]).unwrap(), vec![first]);
        assert_eq!(m.pop(true).unwrap(), vec![first], "{t} pop");
        assert_eq!(m.len(), 2);
    }
    // BPF_EXIST overwrites the oldest element when full.
    let q = map(MapType::Queue, 0, 1, 2);
    q.push(&[1], 0).unwrap();
    q.push(&[2], 0).unwrap();
    q.push(&[3], update::EXIST).unwrap();
    assert_eq!(q.pop(true).unwrap(), vec![2]);
    let s = map(MapType::Stack, 0, 1, 2);
    s.push(&[1], 0).unwrap();
    s.push(&[2], 0).unwrap();
    s.push(&[3], update::EXIST).unwrap();
    assert_eq!(s.pop(true).unwrap(), vec![3]);
    assert_eq!(s.pop(true).unwrap(), vec![2]);
    assert_eq!(s.pop(true), Err(Errno::ENOENT));
}

#[test]
fn ringbuf() {
    assert!(Map::new(MapSpec::new("r", MapType::Ringbuf, 0, 0, 1000), 1).is_err());
    assert!(Map::new(MapSpec::new("r", MapType::Ringbuf, 4, 0, 4096), 1).is_err());
    let m = map(MapType::Ringbuf, 0, 0, 4096);
    let mut rb = m.ringbuf().unwrap();
    let a = rb.reserve(5).unwrap();
    let b = rb.reserve(3).unwrap();
    rb.arena.write(b, b"bbb");
    rb.finish(b, false).unwrap();
    // `a` is still reserved: nothing can be consumed past it.
    assert!(rb.consume().is_empty());
    rb.arena.write(a, b"aaaaa");
    rb.finish(a, false).unwrap();
    assert_eq!(rb.consume(), vec![b"aaaaa".to_vec(), b"bbb".to_vec()]);
    assert_eq!(rb.finish(a, false), Err(Errno::EINVAL), "submitting twice");
    let c = rb.reserve(4).unwrap();
    rb.finish(c, true).unwrap();
    rb.output(b"out").unwrap();
    assert_eq!(
        rb.consume(),
        vec![b"out".to_vec()],
        "discarded records are skipped"
    );
    // Too big, then full until consumed, across the wrap.
    assert!(rb.reserve(4096).is_none());
    let mut n = 0;
    while rb.output(&[n as u8; 100]).is_ok() {
        n += 1;
    }
    assert_eq!(rb.output(&[0; 100]), Err(Errno::EAGAIN));
    assert_eq!(rb.consume().len(), n);
    rb.output(&[9; 100]).unwrap();
    assert_eq!(rb.consume(), vec![vec![9; 100]]);
    assert!(rb.dropped >= 2);
}

#[test]
fn perf_event_array() {
    let m = map(MapType::PerfEventArray, 4, 4, 0);
    m.perf_output(1, b"one".to_vec()).unwrap();
    m.perf_output(0, b"zero".to_vec()).unwrap();
    assert_eq!(m.perf_output(5, b"x".to_vec()), Err(Errno::E2BIG));
    assert_eq!(
        m.perf_drain(),
        vec![(0, b"zero".to_vec()), (1, b"one".to_vec())]
    );
    assert!(m.perf_drain().is_empty());
}

#[test]
fn creation_errors_name_the_problem() {
    let cases = [
        (
            MapSpec::new("a", MapType::Array, 8, 4, 1),
            "key_size must be 4",
        ),
        (
            MapSpec::new("a", MapType::Array, 4, 0, 1),
            "value_size must not be 0",
        ),
        (
            MapSpec::new("a", MapType::Array, 4, 4, 0),
            "max_entries must not be 0",
        ),
        (
            MapSpec::new("h", MapType::Hash, 0, 4, 1),
            "key_size must not be 0",
        ),
        (
            MapSpec::new("q", MapType::Queue, 4, 4, 1),
            "key_size must be 0",
        ),
        (
            MapSpec::new("d", MapType::Devmap, 4, 5, 1),
            "value_size must be 4 or 8",
        ),
        (
            MapSpec::new("p", MapType::ProgArray, 4, 8, 1),
            "value_size must be 4",
        ),
        (
            MapSpec::new("big", MapType::Array, 4, 1 << 20, 1 << 20),
            "more than sluice allocates",
        ),
    ];
    for (spec, needle) in cases {
        let e = Map::new(spec, 1).err().unwrap();
        assert!(e.to_string().contains(needle), "{e}");
    }
    assert!(
        MapType::from_id(15)
            .unwrap_err()
            .to_string()
            .contains("sockmap")
    );
    // Maps of kernel objects: the kernel's checks, then always empty.
    for (spec, needle) in [
        (
            MapSpec::new("s", MapType::SkStorage, 4, 8, 16).with_flags(maps::flags::NO_PREALLOC),
            "max_entries must be 0",
        ),
        (
            MapSpec::new("s", MapType::SkStorage, 4, 8, 0),
            "BPF_F_NO_PREALLOC",
        ),
        (
            MapSpec::new("t", MapType::StackTrace, 4, 12, 16),
            "multiple of 8",
        ),
        (
            MapSpec::new("c", MapType::CgroupArray, 4, 8, 16),
            "value_size must be 4",
        ),
    ] {
        let e = Map::new(spec, 1).err().unwrap();
        assert!(e.to_string().contains(needle), "{e}");
    }
    let s = Map::new(
        MapSpec::new("s", MapType::SkStorage, 4, 8, 0).with_flags(maps::flags::NO_PREALLOC),
        1,
    )
    .unwrap();
    assert!(s.is_empty());
    assert_eq!(
        s.user_update(&3u32.to_le_bytes(), &[0; 8], 0),
        Err(maps::Errno::EOPNOTSUPP)
    );
    assert_eq!(
        MapType::from_name("BPF_MAP_TYPE_LRU_HASH"),
        Some(MapType::LruHash)
    );
}

#[test]
fn frozen_maps_refuse_user_writes() {
    let m = map(MapType::Array, 4, 4, 1);
    m.freeze();
    assert_eq!(
        m.user_update(&k32(0), &k32(1), update::ANY),
        Err(Errno::EPERM)
    );
    // Programs may still write unless the map is read-only to them.
    m.prog_update(&k32(0), &k32(1), update::ANY, 0).unwrap();
}

#[test]
fn array_values_come_out_in_the_user_layout() {
    for (ty, value_size, cpus) in [
        (MapType::Array, 5u32, 1u32),
        (MapType::Array, 8, 1),
        (MapType::PercpuArray, 5, 3),
    ] {
        let m = Map::new(MapSpec::new("a", ty, 4, value_size, 4), cpus).unwrap();
        let user = m.user_value_len();
        let value: Vec<u8> = (0..user as u8).map(|b| b + 1).collect();
        m.user_update(&2u32.to_le_bytes(), &value, 0).unwrap();
        let flat: Vec<u8> = m.entries().into_iter().flat_map(|(_, v)| v).collect();
        assert_eq!(
            m.array_user_values().unwrap(),
            flat,
            "{ty:?} {value_size} x {cpus}"
        );
        assert_eq!(flat.len(), 4 * user);
    }
    let h = Map::new(MapSpec::new("h", MapType::Hash, 4, 4, 4), 1).unwrap();
    assert!(h.array_user_values().is_none());
}
