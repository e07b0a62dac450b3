//! Maps shared by several threads, as the kernel's CPUs share them,
//! through the entry points the VM's helpers use: `lookup_addr` (what
//! `bpf_map_lookup_elem` returns), `prog_update` with `BPF_ANY`,
//! `BPF_NOEXIST` and `BPF_EXIST`, `delete`, atomic instructions and
//! `bpf_spin_lock` on the value a lookup points to; and user space's
//! `user_*` calls. Each test checks something a race would break: exact
//! sums, inserts and deletes that succeed exactly once, bounds, values that
//! are never torn nor another key's, elements that never touch their
//! neighbours.
//!
//! `./dev.sh sanitize` runs this file under ThreadSanitizer and Miri.
//! `STRESS_SCALE=N` multiplies every test's iterations (by default the file
//! takes a few seconds in a debug build); Miri runs a hundredth of them.

use std::sync::Barrier;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::thread;

use maps::{Errno, Map, MapSpec, MapType, update};

const THREADS: u32 = 4;

/// A test's iteration count: `normal`, times `STRESS_SCALE` when set, and
/// a hundredth of it (at least 4) under Miri, which is far slower.
fn iters(normal: u32) -> u32 {
    let scale = std::env::var("STRESS_SCALE")
        .ok()
        .and_then(|s| s.parse::<u32>().ok())
        .unwrap_or(1)
        .max(1);
    let n = normal.saturating_mul(scale);
    if cfg!(miri) { (n / 100).max(4) } else { n }
}

fn map(t: MapType, key: u32, value: u32, entries: u32, ncpus: u32) -> Map {
    Map::new(MapSpec::new("m", t, key, value, entries), ncpus).unwrap()
}

fn u64_at(v: &[u8]) -> u64 {
    u64::from_le_bytes(v[..8].try_into().unwrap())
}

fn key_of(k: &[u8]) -> u32 {
    u32::from_le_bytes(k[..4].try_into().unwrap())
}

/// The u64 a program pointer designates, as a host atomic.
///
/// # Safety
/// `addr` must come from `lookup_addr` on a live map with 8-byte values.
unsafe fn atomic_at<'a>(addr: u64) -> &'a AtomicU64 {
    // SAFETY: map values are 8-byte aligned and live as long as the map.
    unsafe { AtomicU64::from_ptr(std::ptr::with_exposed_provenance_mut(addr as usize)) }
}

/// A plain pointer to the u64 at a program address.
fn u64_ptr(addr: u64) -> *mut u64 {
    std::ptr::with_exposed_provenance_mut(addr as usize)
}

/// `bpf_spin_lock` as `crates/runtime/src/helpers/mod.rs` does it: a
/// compare-and-swap (acquire) of the lock word at the start of the value,
/// spinning on relaxed loads while another thread holds it.
fn spin_lock(addr: u64) {
    // SAFETY: a 4-byte aligned word of a live map value, only ever
    // accessed atomically (here and in `spin_unlock`).
    let word = unsafe { AtomicU32::from_ptr(std::ptr::with_exposed_provenance_mut(addr as usize)) };
    while word
        .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        while word.load(Ordering::Relaxed) != 0 {
            std::hint::spin_loop();
        }
    }
}

/// `bpf_spin_unlock`: frees the word (release).
fn spin_unlock(addr: u64) {
    // SAFETY: as in `spin_lock`.
    let word = unsafe { AtomicU32::from_ptr(std::ptr::with_exposed_provenance_mut(addr as usize)) };
    word.store(0, Ordering::Release);
}

/// A program reading the value its lookup pointed to, after other threads'
/// updates may have evicted the element and reused its slot for another
/// key: the kernel's preallocated LRU maps reuse an element at once too, so
/// the program sees zeros or another key's value. The map's write of the
/// reused slot races with this read by design (the one race
/// `tools/tsan-suppressions.txt` allows, by this function's name).
#[inline(never)]
fn read_value_the_map_may_reuse(addr: u64) -> u64 {
    // SAFETY: an 8-byte value of a live map.
    unsafe { atomic_at(addr) }.load(Ordering::Relaxed)
}

/// Each thread inserts, reads back and deletes its own keys while the
/// others do the same: nothing is lost, nothing appears twice, and the map
/// never holds more than `max_entries`.
#[test]
fn hash_map_under_concurrent_inserts_lookups_and_deletes() {
    const PER: u32 = 16;
    let rounds = iters(2_000);
    let m = map(MapType::Hash, 4, 8, THREADS * PER, 1);
    thread::scope(|s| {
        for t in 0..THREADS {
            let m = &m;
            s.spawn(move || {
                for round in 0..u64::from(rounds) {
                    for k in t * PER..(t + 1) * PER {
                        let key = k.to_le_bytes();
                        let value = (u64::from(k) << 32 | round).to_le_bytes();
                        m.user_update(&key, &value, update::ANY).unwrap();
                        let addr = m.lookup_addr(&key, 0).expect("just inserted");
                        // SAFETY: an 8-byte value of a live map.
                        let seen = unsafe { atomic_at(addr) }.load(Ordering::Relaxed);
                        assert_eq!(seen >> 32, u64::from(k), "another key's value");
                        assert_eq!(m.user_lookup(&key).unwrap(), value);
                        assert!(m.len() <= (THREADS * PER) as usize);
                        if (k + round as u32).is_multiple_of(3) {
                            m.delete(&key).unwrap();
                            assert_eq!(m.delete(&key), Err(Errno::ENOENT));
                        }
                    }
                }
            });
        }
    });
    // The last round: each key is present unless it was deleted then.
    let last = rounds - 1;
    let mut want: Vec<u32> = (0..THREADS * PER)
        .filter(|k| !(k + last).is_multiple_of(3))
        .collect();
    let mut got: Vec<u32> = m
        .entries()
        .iter()
        .map(|(k, v)| {
            let k = u32::from_le_bytes(k[..4].try_into().unwrap());
            assert_eq!(u64_at(v), u64::from(k) << 32 | u64::from(last));
            k
        })
        .collect();
    want.sort_unstable();
    got.sort_unstable();
    assert_eq!(got, want);
    assert_eq!(m.len(), want.len());
}

/// Threads fighting over the same keys of a full hash map: every answer
/// is one the kernel gives, and the map stays within bounds.
#[test]
fn hash_map_contended_keys_stay_consistent() {
    let n = iters(20_000);
    let m = map(MapType::Hash, 4, 8, 8, 1);
    thread::scope(|s| {
        for t in 0..THREADS {
            let m = &m;
            s.spawn(move || {
                for i in 0..n {
                    let k = (i * 7 + t) % 12;
                    let key = k.to_le_bytes();
                    match i % 4 {
                        0 | 1 => match m.user_update(&key, &u64::from(k).to_le_bytes(), 0) {
                            Ok(()) | Err(Errno::E2BIG) => {}
                            Err(e) => panic!("update: {e:?}"),
                        },
                        2 => match m.delete(&key) {
                            Ok(()) | Err(Errno::ENOENT) => {}
                            Err(e) => panic!("delete: {e:?}"),
                        },
                        _ => {
                            if let Ok(v) = m.user_lookup(&key) {
                                assert_eq!(u64_at(&v), u64::from(k));
                            }
                        }
                    }
                    assert!(m.len() <= 8);
                }
            });
        }
    });
    for (k, v) in m.entries() {
        assert_eq!(
            u64_at(&v),
            u64::from(u32::from_le_bytes(k[..4].try_into().unwrap()))
        );
    }
}

/// An LRU hash evicts under pressure from several threads: it never grows
/// past `max_entries`, and every entry keeps its own value.
#[test]
fn lru_hash_under_concurrent_pressure() {
    let n = iters(5_000);
    for t in [MapType::LruHash, MapType::LruPercpuHash] {
        let ncpus = THREADS;
        let m = map(t, 4, 8, 32, ncpus);
        thread::scope(|s| {
            for cpu in 0..THREADS {
                let m = &m;
                s.spawn(move || {
                    for i in 0..n {
                        let k = cpu * 100_000 + i;
                        let key = k.to_le_bytes();
                        m.prog_update(&key, &(u64::from(k) * 3).to_le_bytes(), update::ANY, cpu)
                            .unwrap();
                        // Miri has no suppressions: it would rightly call
                        // this read racy whenever an eviction meets it.
                        if !cfg!(miri)
                            && let Some(addr) = m.lookup_addr(&key, cpu)
                        {
                            let v = read_value_the_map_may_reuse(addr);
                            // Evicted and reused meanwhile: zero or another key's.
                            assert!(v == u64::from(k) * 3 || v.is_multiple_of(3));
                        }
                        if i % 5 == 4 {
                            let _ = m.delete(&(k - 1).to_le_bytes());
                        }
                        assert!(m.len() <= 32);
                    }
                });
            }
        });
        let entries = m.entries();
        assert!(!entries.is_empty() && entries.len() <= 32);
        for (k, v) in entries {
            let k = u64::from(u32::from_le_bytes(k[..4].try_into().unwrap()));
            // Per-CPU maps: the writer's copy holds it, the others are zero.
            let copies: Vec<u64> = v.chunks(8).map(u64_at).collect();
            assert!(copies.contains(&(k * 3)), "{t}: key {k} has {copies:?}");
            assert!(copies.iter().all(|&c| c == 0 || c == k * 3));
        }
    }
}

/// Programs add to array values with atomic instructions: the sums are
/// exact (array lookups take no lock, the adds are the host's atomics).
#[test]
fn array_atomic_adds_from_threads_sum_exactly() {
    let adds = u64::from(iters(100_000));
    let m = map(MapType::Array, 4, 8, 4, 1);
    thread::scope(|s| {
        for t in 0..THREADS {
            let m = &m;
            s.spawn(move || {
                for i in 0..adds {
                    let k = (i % 4) as u32;
                    let addr = m.lookup_addr(&k.to_le_bytes(), t).unwrap();
                    // SAFETY: an 8-byte value of a live map.
                    unsafe { atomic_at(addr) }.fetch_add(1 + u64::from(k), Ordering::Relaxed);
                }
            });
        }
    });
    for k in 0..4u32 {
        let v = u64_at(&m.user_lookup(&k.to_le_bytes()).unwrap());
        let per_thread = (0..adds).filter(|i| i % 4 == u64::from(k)).count() as u64;
        assert_eq!(v, u64::from(THREADS) * per_thread * (1 + u64::from(k)));
    }
}

/// Each thread counts in its CPU's copy of a per-CPU array with plain
/// (non-atomic) increments: the copies stay apart and sum to the total.
#[test]
fn percpu_array_slots_per_cpu_sum_to_the_total() {
    let runs = u64::from(iters(50_000)) / 2 * 2;
    let m = map(MapType::PercpuArray, 4, 8, 2, THREADS);
    thread::scope(|s| {
        for cpu in 0..THREADS {
            let m = &m;
            s.spawn(move || {
                for i in 0..runs * u64::from(cpu + 1) {
                    let k = (i % 2) as u32;
                    let addr = m.lookup_addr(&k.to_le_bytes(), cpu).unwrap();
                    let p = std::ptr::with_exposed_provenance_mut::<u64>(addr as usize);
                    // SAFETY: this CPU's copy: no other thread touches it.
                    unsafe { p.write(p.read() + 1) };
                }
            });
        }
    });
    let mut total = 0;
    for k in 0..2u32 {
        let v = m.user_lookup(&k.to_le_bytes()).unwrap();
        let copies: Vec<u64> = v.chunks(8).map(u64_at).collect();
        let want: Vec<u64> = (1..=u64::from(THREADS)).map(|c| runs * c / 2).collect();
        assert_eq!(copies, want, "key {k}: one copy per CPU");
        total += copies.iter().sum::<u64>();
    }
    assert_eq!(total, runs * (1..=u64::from(THREADS)).sum::<u64>());
}

/// Queues, ring buffers and perf records from several threads: every item
/// arrives once.
#[test]
fn queues_rings_and_perf_records_lose_nothing() {
    let n = iters(2_000);
    let q = map(MapType::Queue, 0, 4, THREADS * n, 1);
    // 16 bytes a record (8-byte header, 4 bytes of data rounded up to 8).
    let ring = (THREADS * n * 16).next_power_of_two().max(4096);
    let rb = map(MapType::Ringbuf, 0, 0, ring, 1);
    let perf = map(MapType::PerfEventArray, 4, 4, THREADS, THREADS);
    thread::scope(|s| {
        for t in 0..THREADS {
            let (q, rb, perf) = (&q, &rb, &perf);
            s.spawn(move || {
                for i in 0..n {
                    let v = (t * n + i).to_le_bytes();
                    q.push(&v, 0).unwrap();
                    rb.ringbuf().unwrap().output(&v).unwrap();
                    perf.perf_output(t, v.to_vec()).unwrap();
                }
            });
        }
    });
    let mut popped: Vec<u32> = std::iter::from_fn(|| q.pop(true).ok())
        .map(|v| u32::from_le_bytes(v.try_into().unwrap()))
        .collect();
    let mut ring: Vec<u32> = rb
        .ringbuf()
        .unwrap()
        .consume()
        .into_iter()
        .map(|v| u32::from_le_bytes(v.try_into().unwrap()))
        .collect();
    let drained = perf.perf_drain();
    assert!(
        drained
            .iter()
            .all(|(cpu, v)| u32::from_le_bytes(v[..].try_into().unwrap()) / n == *cpu)
    );
    let mut perf: Vec<u32> = drained
        .into_iter()
        .map(|(_, v)| u32::from_le_bytes(v.try_into().unwrap()))
        .collect();
    let all: Vec<u32> = (0..THREADS * n).collect();
    for got in [&mut popped, &mut ring, &mut perf] {
        got.sort_unstable();
        assert_eq!(*got, all);
    }
}

/// `bpf_spin_lock` on values of a hash map and of an array, as programs
/// take it: plain (non-atomic) read-modify-writes of two counters under the
/// lock add up exactly on every thread, while the same threads update and
/// delete other elements of the same map (which must never touch a locked
/// value's bytes).
#[test]
fn spin_locked_counters_sum_exactly() {
    // struct { struct bpf_spin_lock lock; u32 pad; u64 a; u64 b; }
    const LOCKED: u32 = 4;
    let n = iters(20_000);
    for t in [MapType::Hash, MapType::Array] {
        let m = map(t, 4, 24, 16, 1);
        for k in 0..LOCKED {
            m.user_update(&k.to_le_bytes(), &[0; 24], update::ANY)
                .unwrap();
        }
        thread::scope(|s| {
            for cpu in 0..THREADS {
                let m = &m;
                s.spawn(move || {
                    for i in 0..n {
                        let k = i % LOCKED;
                        let addr = m.lookup_addr(&k.to_le_bytes(), cpu).expect("present");
                        spin_lock(addr);
                        let (a, b) = (u64_ptr(addr + 8), u64_ptr(addr + 16));
                        // SAFETY: fields of a live value, accessed only under its lock.
                        unsafe {
                            a.write(a.read() + 1);
                            b.write(b.read() + u64::from(cpu) + 1);
                        }
                        spin_unlock(addr);
                        // Other elements: shared keys of the hash map (its
                        // lock orders them), each thread's own array index.
                        let other = match t {
                            MapType::Hash => LOCKED + (i * 7 + cpu) % 8,
                            _ => LOCKED + cpu,
                        };
                        let key = other.to_le_bytes();
                        let value = [other as u8; 24];
                        match (t, i % 3) {
                            (MapType::Hash, 0) => {
                                match m.prog_update(&key, &value, update::NOEXIST, cpu) {
                                    Ok(()) | Err(Errno::EEXIST) => {}
                                    Err(e) => panic!("NOEXIST update: {e:?}"),
                                }
                            }
                            (MapType::Hash, 2) => match m.delete(&key) {
                                Ok(()) | Err(Errno::ENOENT) => {}
                                Err(e) => panic!("delete: {e:?}"),
                            },
                            _ => m.prog_update(&key, &value, update::ANY, cpu).unwrap(),
                        }
                    }
                });
            }
        });
        let cpus: u64 = (1..=u64::from(THREADS)).sum();
        for k in 0..LOCKED {
            let v = m.user_lookup(&k.to_le_bytes()).unwrap();
            let times = u64::from((0..n).filter(|i| i % LOCKED == k).count() as u32);
            assert_eq!(&v[..8], &[0; 8], "{t}: key {k}: lock word and padding");
            assert_eq!(
                u64_at(&v[8..]),
                times * u64::from(THREADS),
                "{t}: key {k}: a"
            );
            assert_eq!(u64_at(&v[16..]), times * cpus, "{t}: key {k}: b");
        }
        let churned = match t {
            MapType::Hash => LOCKED..LOCKED + 8,
            _ => LOCKED..LOCKED + THREADS,
        };
        for (k, v) in m.entries() {
            let k = key_of(&k);
            if churned.contains(&k) {
                assert_eq!(v, [k as u8; 24], "{t}: key {k}");
            }
        }
    }
}

/// Every thread inserts the same keys with `BPF_NOEXIST`, round after
/// round: one insert of each key succeeds (the others get `EEXIST`) and the
/// value is the winner's; `BPF_EXIST` updates of present keys all succeed;
/// one delete of each key succeeds (the others get `ENOENT`); then
/// `BPF_EXIST` updates get `ENOENT` and lookups find nothing.
#[test]
fn noexist_inserts_and_deletes_succeed_exactly_once() {
    const KEYS: u32 = 8;
    let rounds = iters(300);
    for t in [
        MapType::Hash,
        MapType::PercpuHash,
        MapType::LruHash,
        MapType::LruPercpuHash,
    ] {
        let m = map(t, 4, 8, KEYS, THREADS);
        let barrier = Barrier::new(THREADS as usize);
        let inserts: Vec<AtomicU32> = (0..KEYS).map(|_| AtomicU32::new(0)).collect();
        let deletes: Vec<AtomicU32> = (0..KEYS).map(|_| AtomicU32::new(0)).collect();
        thread::scope(|s| {
            for cpu in 0..THREADS {
                let (m, barrier, inserts, deletes) = (&m, &barrier, &inserts, &deletes);
                s.spawn(move || {
                    for r in 0..rounds {
                        let mut won = [false; KEYS as usize];
                        for k in 0..KEYS {
                            let v = (u64::from(cpu + 1) << 32 | u64::from(r)).to_le_bytes();
                            match m.prog_update(&k.to_le_bytes(), &v, update::NOEXIST, cpu) {
                                Ok(()) => {
                                    won[k as usize] = true;
                                    inserts[k as usize].fetch_add(1, Ordering::Relaxed);
                                }
                                Err(Errno::EEXIST) => {}
                                Err(e) => panic!("{t}: NOEXIST insert: {e:?}"),
                            }
                        }
                        barrier.wait();
                        for k in 0..KEYS {
                            assert_eq!(inserts[k as usize].load(Ordering::Relaxed), r + 1);
                            // The value is the winner's: in its CPU's copy for
                            // per-CPU maps, the other copies zeroed.
                            let v = m.user_lookup(&k.to_le_bytes()).unwrap();
                            let copies: Vec<u64> = v.chunks(8).map(u64_at).collect();
                            let set: Vec<usize> =
                                (0..copies.len()).filter(|&c| copies[c] != 0).collect();
                            assert_eq!(set.len(), 1, "{t}: key {k}: {copies:?}");
                            let winner = (copies[set[0]] >> 32) as u32 - 1;
                            assert_eq!(copies[set[0]] as u32, r, "{t}: key {k}");
                            if copies.len() > 1 {
                                assert_eq!(
                                    set[0] as u32, winner,
                                    "{t}: key {k}: the winner's copy"
                                );
                            }
                            assert_eq!(won[k as usize], winner == cpu, "{t}: key {k}");
                        }
                        barrier.wait();
                        for k in 0..KEYS {
                            let v = u64::MAX.to_le_bytes();
                            m.prog_update(&k.to_le_bytes(), &v, update::EXIST, cpu)
                                .unwrap();
                        }
                        barrier.wait();
                        for k in 0..KEYS {
                            match m.delete(&k.to_le_bytes()) {
                                Ok(()) => {
                                    deletes[k as usize].fetch_add(1, Ordering::Relaxed);
                                }
                                Err(Errno::ENOENT) => {}
                                Err(e) => panic!("{t}: delete: {e:?}"),
                            }
                        }
                        barrier.wait();
                        for k in 0..KEYS {
                            assert_eq!(deletes[k as usize].load(Ordering::Relaxed), r + 1);
                            let key = k.to_le_bytes();
                            let v = 1u64.to_le_bytes();
                            assert_eq!(
                                m.prog_update(&key, &v, update::EXIST, cpu),
                                Err(Errno::ENOENT)
                            );
                            assert_eq!(m.lookup_addr(&key, cpu), None);
                        }
                        assert_eq!(m.len(), 0);
                        barrier.wait();
                    }
                });
            }
        });
    }
}

/// Threads insert (`BPF_NOEXIST`) and delete keys of a hash map smaller
/// than the key space: every answer is one the kernel gives (`EEXIST`, or
/// `E2BIG` when full; `ENOENT`), the map never holds more than
/// `max_entries`, and it ends up holding exactly the successful inserts
/// minus the successful deletes, each key with its own value.
#[test]
fn full_hash_map_counts_every_insert_and_delete() {
    const MAX: u32 = 16;
    let n = iters(20_000);
    for t in [MapType::Hash, MapType::PercpuHash] {
        let m = map(t, 4, 8, MAX, THREADS);
        let balance: i64 = thread::scope(|s| {
            let workers: Vec<_> = (0..THREADS)
                .map(|cpu| {
                    let m = &m;
                    s.spawn(move || {
                        let (mut added, mut full) = (0i64, 0u32);
                        let mut x = 0x9e37_79b9u32.wrapping_mul(cpu + 1);
                        for _ in 0..n {
                            x ^= x << 13;
                            x ^= x >> 17;
                            x ^= x << 5;
                            let k = x % (3 * MAX);
                            let key = k.to_le_bytes();
                            if x & (1 << 20) == 0 {
                                let v = u64::from(k + 1).wrapping_mul(0x0101_0101_0101_0101);
                                match m.prog_update(&key, &v.to_le_bytes(), update::NOEXIST, cpu) {
                                    Ok(()) => added += 1,
                                    Err(Errno::EEXIST) => {}
                                    Err(Errno::E2BIG) => full += 1,
                                    Err(e) => panic!("{t}: insert: {e:?}"),
                                }
                            } else {
                                match m.delete(&key) {
                                    Ok(()) => added -= 1,
                                    Err(Errno::ENOENT) => {}
                                    Err(e) => panic!("{t}: delete: {e:?}"),
                                }
                            }
                            assert!(m.len() <= MAX as usize, "{t}: over max_entries");
                        }
                        assert!(full > 0 || cfg!(miri), "{t}: the map never filled up");
                        added
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).sum()
        });
        let entries = m.entries();
        assert_eq!(entries.len() as i64, balance, "{t}: inserts minus deletes");
        assert_eq!(m.len() as i64, balance, "{t}");
        for (k, v) in entries {
            let want = u64::from(key_of(&k) + 1).wrapping_mul(0x0101_0101_0101_0101);
            // Per-CPU maps: the inserting CPU's copy holds it, the others are zero.
            let copies: Vec<u64> = v.chunks(8).map(u64_at).collect();
            assert_eq!(
                copies.iter().filter(|&&c| c == want).count(),
                1,
                "{t}: {copies:?}"
            );
            assert!(
                copies.iter().all(|&c| c == want || c == 0),
                "{t}: {copies:?}"
            );
        }
    }
}

/// A 24-byte value made of its key's 4 bytes, repeated.
fn lru_value(k: u32) -> [u8; 24] {
    let mut v = [0; 24];
    for c in v.chunks_mut(4) {
        c.copy_from_slice(&k.to_le_bytes());
    }
    v
}

/// Churn through an LRU hash far larger than it: it ends up holding
/// exactly `max_entries` elements, and no lookup ever returns another key's
/// value (or a mix of two), while threads read each other's recent keys.
#[test]
fn lru_hash_churn_keeps_max_entries_and_own_values() {
    const MAX: u32 = 32;
    let n = iters(10_000);
    let m = map(MapType::LruHash, 4, 24, MAX, THREADS);
    thread::scope(|s| {
        for cpu in 0..THREADS {
            let m = &m;
            s.spawn(move || {
                for i in 0..n {
                    let k = cpu << 24 | i;
                    m.prog_update(&k.to_le_bytes(), &lru_value(k), update::ANY, cpu)
                        .unwrap();
                    // A recent key of the next thread, and one of ours.
                    for k in [(((cpu + 1) % THREADS) << 24) | i, (cpu << 24) | (i / 2)] {
                        if let Ok(v) = m.user_lookup(&k.to_le_bytes()) {
                            assert_eq!(v, lru_value(k), "key {k:#x}");
                        }
                    }
                    assert!(m.len() <= MAX as usize);
                }
            });
        }
    });
    assert_eq!(m.len(), MAX as usize);
    let entries = m.entries();
    assert_eq!(entries.len(), MAX as usize);
    for (k, v) in entries {
        assert_eq!(v, lru_value(key_of(&k)));
    }
}

/// Whether every byte of `v` is the same.
fn uniform(v: &[u8]) -> bool {
    v.iter().all(|&b| b == v[0])
}

/// Updates of 64-byte values, from programs and user space, against user
/// lookups on other threads: a lookup sees a whole value, never parts of
/// two (the value is written and read under the map's lock).
#[test]
fn hash_values_are_never_torn() {
    let n = iters(10_000);
    for t in [MapType::Hash, MapType::LruHash, MapType::PercpuHash] {
        let m = map(t, 4, 64, 8, THREADS);
        thread::scope(|s| {
            for cpu in 0..THREADS {
                let m = &m;
                s.spawn(move || {
                    let user_len = m.user_value_len();
                    for i in 0..n {
                        let key = (i % 4).to_le_bytes();
                        let b = (i * THREADS + cpu) as u8;
                        match i % 5 {
                            0 => m.prog_update(&key, &[b; 64], update::ANY, cpu).unwrap(),
                            1 => m
                                .user_update(&key, &vec![b; user_len], update::ANY)
                                .unwrap(),
                            2 if i % 15 == 2 => {
                                let _ = m.delete(&key);
                            }
                            _ => {
                                if let Ok(v) = m.user_lookup(&key) {
                                    for copy in v.chunks(64) {
                                        assert!(uniform(copy), "{t}: torn value {copy:?}");
                                    }
                                }
                            }
                        }
                    }
                });
            }
        });
    }
}

/// Each thread owns some elements of an array (20-byte values, 24 bytes
/// apart) and keeps rewriting them through programs' and user space's
/// updates, reading them back through lookups: neighbours never see each
/// other's bytes, the 4 padding bytes of each element stay zero, and
/// `BPF_NOEXIST` and out-of-range indices get the kernel's errors.
/// Per-CPU arrays: each thread writes its own CPU's copy of every element.
#[test]
fn array_elements_and_cpu_copies_stay_apart() {
    const ENTRIES: u32 = 16;
    let n = iters(10_000);
    for t in [MapType::Array, MapType::PercpuArray] {
        let m = map(t, 4, 20, ENTRIES, THREADS);
        thread::scope(|s| {
            for cpu in 0..THREADS {
                let m = &m;
                s.spawn(move || {
                    for i in 0..n {
                        let index = match t {
                            MapType::Array => (i * THREADS + cpu) % ENTRIES,
                            _ => i % ENTRIES,
                        };
                        let key = index.to_le_bytes();
                        let b = ((cpu << 6) | (i % 64)) as u8;
                        if t == MapType::Array && i % 2 == 1 {
                            m.user_update(&key, &[b; 20], update::EXIST).unwrap();
                        } else {
                            m.prog_update(&key, &[b; 20], update::ANY, cpu).unwrap();
                        }
                        let addr = m.lookup_addr(&key, cpu).unwrap();
                        let mut seen = [0u8; 24];
                        // SAFETY: this thread's element (or CPU copy) of a live
                        // map: 24 bytes with the padding, no other thread writes it.
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                std::ptr::with_exposed_provenance::<u8>(addr as usize),
                                seen.as_mut_ptr(),
                                24,
                            )
                        };
                        assert_eq!(seen[..20], [b; 20], "{t}: index {index}");
                        assert_eq!(seen[20..], [0; 4], "{t}: index {index}: padding");
                        if t == MapType::Array {
                            assert_eq!(m.user_lookup(&key).unwrap(), [b; 20]);
                        }
                        let past = (ENTRIES + i).to_le_bytes();
                        assert_eq!(
                            m.prog_update(&past, &[b; 20], update::ANY, cpu),
                            Err(Errno::E2BIG)
                        );
                        assert_eq!(
                            m.prog_update(&key, &[b; 20], update::NOEXIST, cpu),
                            Err(Errno::EEXIST)
                        );
                    }
                });
            }
        });
        // The last byte each owner wrote, in each element (each CPU's copy).
        for index in 0..ENTRIES {
            let v = m.user_lookup(&index.to_le_bytes()).unwrap();
            match t {
                MapType::Array => {
                    let owner = index % THREADS;
                    let last = (0..n)
                        .rev()
                        .find(|i| (i * THREADS + owner) % ENTRIES == index);
                    let b = ((owner << 6) | (last.unwrap() % 64)) as u8;
                    assert_eq!(v, [b; 20], "index {index}");
                }
                _ => {
                    let last = (0..n).rev().find(|i| i % ENTRIES == index).unwrap();
                    for (cpu, copy) in v.chunks(24).enumerate() {
                        let b = (((cpu as u32) << 6) | (last % 64)) as u8;
                        assert_eq!(copy[..20], [b; 20], "index {index}, CPU {cpu}");
                        assert_eq!(copy[20..], [0; 4], "index {index}, CPU {cpu}: padding");
                    }
                }
            }
        }
    }
}

/// Each thread counts in its CPU's copy of one per-CPU hash element with
/// plain increments through the lookup's pointer, after inserting it
/// (`BPF_NOEXIST`, one thread wins and zeroes the other copies; the others
/// get `EEXIST`): the copies end up with each thread's own count.
#[test]
fn percpu_hash_copies_count_apart() {
    let n = iters(50_000);
    let m = map(MapType::PercpuHash, 4, 8, 4, THREADS);
    let key = 7u32.to_le_bytes();
    thread::scope(|s| {
        for cpu in 0..THREADS {
            let m = &m;
            s.spawn(move || {
                match m.prog_update(&key, &0u64.to_le_bytes(), update::NOEXIST, cpu) {
                    Ok(()) | Err(Errno::EEXIST) => {}
                    Err(e) => panic!("insert: {e:?}"),
                }
                for _ in 0..n * (cpu + 1) {
                    let p = u64_ptr(m.lookup_addr(&key, cpu).unwrap());
                    // SAFETY: this CPU's copy: no other thread touches it
                    // (the insert that zeroed it happened before the lookup).
                    unsafe { p.write(p.read() + 1) };
                }
            });
        }
    });
    let copies: Vec<u64> = m.user_lookup(&key).unwrap().chunks(8).map(u64_at).collect();
    let want: Vec<u64> = (1..=THREADS).map(|c| u64::from(n * c)).collect();
    assert_eq!(copies, want);
}
