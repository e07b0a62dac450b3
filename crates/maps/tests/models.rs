//! Random operation sequences against small reference models of the
//! kernel's documented behaviour.

use std::collections::{HashMap, VecDeque};

use maps::*;
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Update(u32, u64, u64),
    Delete(u32),
    Lookup(u32),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let key = 0u32..12;
    let op = prop_oneof![
        (
            key.clone(),
            any::<u64>(),
            prop::sample::select(vec![0u64, 1, 2, 3, 4])
        )
            .prop_map(|(k, v, f)| Op::Update(k, v, f)),
        key.clone().prop_map(Op::Delete),
        key.prop_map(Op::Lookup),
    ];
    prop::collection::vec(op, 1..200)
}

/// The hash map model; `lru` keeps keys most-recent first.
struct Model {
    cap: usize,
    values: HashMap<u32, u64>,
    lru: Option<VecDeque<u32>>,
}

impl Model {
    fn touch(&mut self, k: u32) {
        if let Some(order) = &mut self.lru {
            order.retain(|&x| x != k);
            order.push_front(k);
        }
    }

    fn update(&mut self, k: u32, v: u64, flags: u64) -> Result<(), Errno> {
        // The values have no spin lock: `BPF_F_LOCK` is refused too.
        if flags > update::EXIST {
            return Err(Errno::EINVAL);
        }
        let exists = self.values.contains_key(&k);
        match flags {
            update::NOEXIST if exists => return Err(Errno::EEXIST),
            update::EXIST if !exists => return Err(Errno::ENOENT),
            _ => {}
        }
        if !exists && self.values.len() == self.cap {
            match &mut self.lru {
                Some(order) => {
                    let old = order.pop_back().unwrap();
                    self.values.remove(&old);
                }
                None => return Err(Errno::E2BIG),
            }
        }
        self.values.insert(k, v);
        self.touch(k);
        Ok(())
    }

    fn delete(&mut self, k: u32) -> Result<(), Errno> {
        if let Some(order) = &mut self.lru {
            order.retain(|&x| x != k);
        }
        self.values.remove(&k).map(|_| ()).ok_or(Errno::ENOENT)
    }

    fn lookup(&mut self, k: u32) -> Option<u64> {
        let v = self.values.get(&k).copied();
        if v.is_some() {
            self.touch(k);
        }
        v
    }
}

fn check_hash(t: MapType, ops: &[Op]) -> Result<(), TestCaseError> {
    let cap = 5;
    let m = Map::new(MapSpec::new("h", t, 4, 8, cap), 1).unwrap();
    let mut model = Model {
        cap: cap as usize,
        values: HashMap::new(),
        lru: (t == MapType::LruHash).then(VecDeque::new),
    };
    for op in ops {
        match *op {
            Op::Update(k, v, f) => {
                prop_assert_eq!(
                    m.prog_update(&k.to_le_bytes(), &v.to_le_bytes(), f, 0),
                    model.update(k, v, f),
                    "{:?}",
                    op
                )
            }
            Op::Delete(k) => {
                prop_assert_eq!(m.delete(&k.to_le_bytes()), model.delete(k), "{:?}", op)
            }
            Op::Lookup(k) => {
                let got = m.lookup_addr(&k.to_le_bytes(), 0).map(|p| {
                    // SAFETY: a live value of this map.
                    unsafe { std::ptr::read_unaligned(p as *const u64) }
                });
                prop_assert_eq!(got, model.lookup(k), "{:?}", op);
            }
        }
        prop_assert_eq!(m.len(), model.values.len());
    }
    let mut dumped: Vec<(u32, u64)> = m
        .entries()
        .into_iter()
        .map(|(k, v)| {
            (
                u32::from_le_bytes(k.try_into().unwrap()),
                u64::from_le_bytes(v.try_into().unwrap()),
            )
        })
        .collect();
    dumped.sort();
    let mut expected: Vec<(u32, u64)> = model.values.into_iter().collect();
    expected.sort();
    prop_assert_eq!(dumped, expected);
    Ok(())
}

proptest! {
    // Under Miri (`./dev.sh sanitize`), a few cases and no regression file
    // (Miri keeps programs off the file system).
    #![proptest_config(if cfg!(miri) {
        ProptestConfig { cases: 4, failure_persistence: None, ..ProptestConfig::default() }
    } else {
        ProptestConfig::with_cases(2_000)
    })]

    #[test]
    fn hash_matches_the_model(ops in ops()) {
        check_hash(MapType::Hash, &ops)?;
    }

    #[test]
    fn lru_hash_matches_the_model(ops in ops()) {
        check_hash(MapType::LruHash, &ops)?;
    }

    #[test]
    fn lpm_trie_matches_a_naive_search(
        entries in prop::collection::vec((0u32..=32, any::<u32>(), any::<u32>()), 0..20),
        probes in prop::collection::vec((0u32..=32, any::<u32>()), 1..50),
    ) {
        let m = Map::new(MapSpec::new("t", MapType::LpmTrie, 8, 4, 64).with_flags(flags::NO_PREALLOC), 1).unwrap();
        let mask = |plen: u32| if plen == 0 { 0 } else { u32::MAX << (32 - plen) };
        let mut model: Vec<(u32, u32, u32)> = Vec::new();
        for &(plen, addr, value) in &entries {
            let key = [plen.to_le_bytes(), addr.to_be_bytes()].concat();
            m.user_update(&key, &value.to_le_bytes(), update::ANY).unwrap();
            model.retain(|&(p, a, _)| !(p == plen && a == addr & mask(plen)));
            model.push((plen, addr & mask(plen), value));
        }
        for (plen, addr) in probes {
            let key = [plen.to_le_bytes(), addr.to_be_bytes()].concat();
            let want = model
                .iter()
                .filter(|&&(p, a, _)| p <= plen && addr & mask(p) == a)
                .max_by_key(|&&(p, _, _)| p)
                .map(|&(_, _, v)| v);
            let got = m.user_lookup(&key).ok().map(|v| u32::from_le_bytes(v.try_into().unwrap()));
            prop_assert_eq!(got, want);
        }
        prop_assert_eq!(m.entries().len(), model.len());
    }
}
