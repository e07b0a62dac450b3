//! Maps shared by several threads, as the kernel's CPUs share them: the
//! bookkeeping stays consistent, atomic adds on values are exact, per-CPU
//! slots stay apart.

use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;

use maps::{Errno, Map, MapSpec, MapType, update};

const THREADS: u32 = 4;

fn map(t: MapType, key: u32, value: u32, entries: u32, ncpus: u32) -> Map {
    Map::new(MapSpec::new("m", t, key, value, entries), ncpus).unwrap()
}

fn u64_at(v: &[u8]) -> u64 {
    u64::from_le_bytes(v[..8].try_into().unwrap())
}

/// The u64 a program pointer designates, as a host atomic.
///
/// # Safety
/// `addr` must come from `lookup_addr` on a live map with 8-byte values.
unsafe fn atomic_at<'a>(addr: u64) -> &'a AtomicU64 {
    // SAFETY: map values are 8-byte aligned and live as long as the map.
    unsafe { AtomicU64::from_ptr(std::ptr::with_exposed_provenance_mut(addr as usize)) }
}

/// Each thread inserts, reads back and deletes its own keys while the
/// others do the same: nothing is lost, nothing appears twice, and the map
/// never holds more than `max_entries`.
#[test]
fn hash_map_under_concurrent_inserts_lookups_and_deletes() {
    const PER: u32 = 16;
    let m = map(MapType::Hash, 4, 8, THREADS * PER, 1);
    thread::scope(|s| {
        for t in 0..THREADS {
            let m = &m;
            s.spawn(move || {
                for round in 0..2_000u64 {
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
    let last = 1_999u32;
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
    let m = map(MapType::Hash, 4, 8, 8, 1);
    thread::scope(|s| {
        for t in 0..THREADS {
            let m = &m;
            s.spawn(move || {
                for i in 0..20_000u32 {
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
    for t in [MapType::LruHash, MapType::LruPercpuHash] {
        let ncpus = THREADS;
        let m = map(t, 4, 8, 32, ncpus);
        thread::scope(|s| {
            for cpu in 0..THREADS {
                let m = &m;
                s.spawn(move || {
                    for i in 0..5_000u32 {
                        let k = cpu * 100_000 + i;
                        let key = k.to_le_bytes();
                        m.prog_update(&key, &(u64::from(k) * 3).to_le_bytes(), update::ANY, cpu)
                            .unwrap();
                        if let Some(addr) = m.lookup_addr(&key, cpu) {
                            // SAFETY: an 8-byte value of a live map.
                            let v = unsafe { atomic_at(addr) }.load(Ordering::Relaxed);
                            // Evicted and reused meanwhile: zero or another key's.
                            assert!(v == u64::from(k) * 3 || v % 3 == 0);
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
    const ADDS: u64 = 100_000;
    let m = map(MapType::Array, 4, 8, 4, 1);
    thread::scope(|s| {
        for t in 0..THREADS {
            let m = &m;
            s.spawn(move || {
                for i in 0..ADDS {
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
        assert_eq!(v, u64::from(THREADS) * ADDS / 4 * (1 + u64::from(k)));
    }
}

/// Each thread counts in its CPU's copy of a per-CPU array with plain
/// (non-atomic) increments: the copies stay apart and sum to the total.
#[test]
fn percpu_array_slots_per_cpu_sum_to_the_total() {
    const RUNS: u64 = 50_000;
    let m = map(MapType::PercpuArray, 4, 8, 2, THREADS);
    thread::scope(|s| {
        for cpu in 0..THREADS {
            let m = &m;
            s.spawn(move || {
                for i in 0..RUNS * u64::from(cpu + 1) {
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
        let want: Vec<u64> = (1..=u64::from(THREADS)).map(|c| RUNS * c / 2).collect();
        assert_eq!(copies, want, "key {k}: one copy per CPU");
        total += copies.iter().sum::<u64>();
    }
    assert_eq!(total, RUNS * (1..=u64::from(THREADS)).sum::<u64>());
}

/// Queues, ring buffers and perf records from several threads: every item
/// arrives once.
#[test]
fn queues_rings_and_perf_records_lose_nothing() {
    const N: u32 = 2_000;
    let q = map(MapType::Queue, 0, 4, THREADS * N, 1);
    let rb = map(MapType::Ringbuf, 0, 0, 1 << 20, 1);
    let perf = map(MapType::PerfEventArray, 4, 4, THREADS, THREADS);
    thread::scope(|s| {
        for t in 0..THREADS {
            let (q, rb, perf) = (&q, &rb, &perf);
            s.spawn(move || {
                for i in 0..N {
                    let v = (t * N + i).to_le_bytes();
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
            .all(|(cpu, v)| u32::from_le_bytes(v[..].try_into().unwrap()) / N == *cpu)
    );
    let mut perf: Vec<u32> = drained
        .into_iter()
        .map(|(_, v)| u32::from_le_bytes(v.try_into().unwrap()))
        .collect();
    let all: Vec<u32> = (0..THREADS * N).collect();
    for got in [&mut popped, &mut ring, &mut perf] {
        got.sort_unstable();
        assert_eq!(*got, all);
    }
}
