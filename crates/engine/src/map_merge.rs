//! The maps of runs over byte ranges merged into one hook's maps, each by
//! its [`MapPolicy`]: the one given, else the default its type and BTF
//! give (arrays, per-CPU arrays and per-CPU hashes: sum; hashes whose
//! values are all integers: sum; other hashes and LPM tries: union; maps
//! of kernel objects, ring buffers, queues: last, their contents the
//! specification's). Sums add what each range added to the value the
//! hook started from, so a map the program only reads keeps its value.

use std::collections::{BTreeMap, HashMap};

use maps::{Map, MapType};
use runtime::Hook;

use crate::mapfmt::{self, MapDump};
use crate::merge_policy::{MapPolicies, MapPolicy, MergeError};
use crate::shard_run::{Bytes, ShardRun, contents_of, holds_values};

/// What merging the maps did: every map's policy, and the dumps of the
/// maps kept per range.
pub(crate) struct MapsMerged {
    pub policies: BTreeMap<String, MapPolicy>,
    pub kept: BTreeMap<String, Vec<MapDump>>,
}

/// Entries in order: keys and values as the map holds them.
type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// How a map's values are added.
struct Layout {
    array: bool,
    /// Bytes of one CPU's value, and its stride in the user layout.
    value_size: usize,
    stride: usize,
    /// The user layout's length (every CPU's copy).
    len: usize,
    /// The integers of one value: (offset, size).
    words: Vec<(usize, usize)>,
}

/// The default policy of `map` (`counters`: BTF shows its values are made
/// of integers).
fn default_policy(map: &Map, counters: bool) -> MapPolicy {
    use MapType::*;
    match map.map_type() {
        Array | PercpuArray | PercpuHash | LruPercpuHash => MapPolicy::Sum,
        Hash | LruHash if counters => MapPolicy::Sum,
        Hash | LruHash | LpmTrie => MapPolicy::Union,
        _ => MapPolicy::Last,
    }
}

/// Whole words of the largest size (8, 4, 2, 1) that divides `size`.
fn words(size: usize) -> Vec<(usize, usize)> {
    let w = [8, 4, 2, 1]
        .into_iter()
        .find(|w| size.is_multiple_of(*w))
        .unwrap_or(1);
    (0..size / w).map(|i| (i * w, w)).collect()
}

/// Merges every run's maps into `hook`'s (which hold what every range
/// started from), as `policies` say or by default.
pub(crate) fn merge(
    hook: &Hook,
    runs: &[&ShardRun],
    policies: &MapPolicies,
    map_entries: usize,
) -> Result<MapsMerged, MergeError> {
    let names: Vec<String> = hook.maps().iter().map(|m| m.name().to_string()).collect();
    if let Some(name) = policies.keys().find(|n| !names.contains(n)) {
        return Err(MergeError::NoSuchMap {
            name: name.clone(),
            maps: names,
        });
    }
    let object = hook.object();
    let btf = object.btf.as_ref();
    let mut out = MapsMerged {
        policies: BTreeMap::new(),
        kept: BTreeMap::new(),
    };
    for (i, map) in hook.maps().iter().enumerate() {
        let name = map.name().to_string();
        let def = object.maps.get(i);
        let fields = mapfmt::integer_members(btf, def.and_then(|d| d.value_type));
        // A map the program does not write holds the specification's
        // contents, whatever the policy asked.
        if !holds_values(map) {
            out.policies.insert(name.clone(), MapPolicy::Last);
            continue;
        }
        let policy = match policies.get(&name) {
            Some(p) => *p,
            None => default_policy(map, fields.is_some()),
        };
        out.policies.insert(name.clone(), policy);
        let value_size = map.spec().value_size as usize;
        let layout = Layout {
            array: matches!(map.map_type(), MapType::Array | MapType::PercpuArray),
            value_size,
            stride: if map.map_type().is_percpu() {
                value_size.div_ceil(8) * 8
            } else {
                value_size
            },
            len: map.user_value_len(),
            words: fields.unwrap_or_else(|| words(value_size)),
        };
        let base = normalized(&layout, &contents_of(map));
        let views: Vec<Entries> = runs
            .iter()
            .map(|r| {
                let entries = r.maps.iter().find(|m| m.name == name);
                view(&layout, &base, entries.map_or(&[][..], |m| &m.entries))
            })
            .collect();
        let fail = |errno| MergeError::Write {
            map: name.clone(),
            errno,
        };
        match policy {
            MapPolicy::Sum => replace(map, &layout, &sum(&layout, &base, &views)).map_err(fail)?,
            MapPolicy::Union => replace(map, &layout, &union(&base, &views)).map_err(fail)?,
            MapPolicy::Last => {
                let last = views.last().cloned().unwrap_or_else(|| base.clone());
                replace(map, &layout, &last).map_err(fail)?
            }
            MapPolicy::Keep => {
                let mut dumps = Vec::with_capacity(views.len());
                for v in &views {
                    replace(map, &layout, v).map_err(fail)?;
                    dumps.push(mapfmt::dump(map, def, btf, map_entries));
                }
                replace(map, &layout, &base).map_err(fail)?;
                out.kept.insert(name.clone(), dumps);
            }
        }
    }
    Ok(out)
}

/// Values brought to the map's user layout: a run with fewer CPUs than
/// the merged hook held nothing on the others.
fn normalized(layout: &Layout, entries: &[(Bytes, Bytes)]) -> Entries {
    entries
        .iter()
        .map(|(k, v)| {
            let mut v = v.0.clone();
            v.resize(layout.len, 0);
            (k.0.clone(), v)
        })
        .collect()
}

/// A run's entries as the map would hold them: for an array, the indexes
/// the run does not list (zeros) among those the base holds.
fn view(layout: &Layout, base: &Entries, entries: &[(Bytes, Bytes)]) -> Entries {
    let mut out = normalized(layout, entries);
    if layout.array {
        let listed: std::collections::HashSet<Vec<u8>> = out.iter().map(|e| e.0.clone()).collect();
        for (k, _) in base {
            if !listed.contains(k) {
                out.push((k.clone(), vec![0; layout.len]));
            }
        }
    }
    out
}

/// Entries in order of first appearance, each key once.
struct Ordered {
    entries: Entries,
    at: HashMap<Vec<u8>, usize>,
}

impl Ordered {
    fn new(base: &Entries) -> Ordered {
        let at = base
            .iter()
            .enumerate()
            .map(|(i, e)| (e.0.clone(), i))
            .collect();
        Ordered {
            entries: base.clone(),
            at,
        }
    }

    /// The value at `key`, added with `fresh` when new.
    fn slot(&mut self, key: &[u8], fresh: &[u8]) -> &mut Vec<u8> {
        let i = *self.at.entry(key.to_vec()).or_insert_with(|| {
            self.entries.push((key.to_vec(), fresh.to_vec()));
            self.entries.len() - 1
        });
        &mut self.entries[i].1
    }
}

/// The base plus what each run added to it, integer by integer
/// (wrapping, as counters do), each CPU's copy.
fn sum(layout: &Layout, base: &Entries, views: &[Entries]) -> Entries {
    let zeros = vec![0u8; layout.len];
    let before: HashMap<&[u8], &[u8]> = base.iter().map(|(k, v)| (&k[..], &v[..])).collect();
    let mut out = Ordered::new(base);
    for view in views {
        for (k, v) in view {
            let b = before.get(&k[..]).copied().unwrap_or(&zeros);
            let acc = out.slot(k, b);
            add_delta(layout, acc, v, b);
        }
    }
    out.entries
}

/// `acc += v - b`, integer by integer of each CPU's copy.
fn add_delta(layout: &Layout, acc: &mut [u8], v: &[u8], b: &[u8]) {
    let read = |bytes: &[u8], at: usize, size: usize| {
        let mut w = [0u8; 8];
        w[..size].copy_from_slice(&bytes[at..at + size]);
        u64::from_le_bytes(w)
    };
    let copies = layout.len / layout.stride.max(1);
    for c in 0..copies {
        for &(off, size) in &layout.words {
            let at = c * layout.stride + off;
            if off + size > layout.value_size || at + size > acc.len() {
                continue;
            }
            let x = read(acc, at, size)
                .wrapping_add(read(v, at, size))
                .wrapping_sub(read(b, at, size));
            acc[at..at + size].copy_from_slice(&x.to_le_bytes()[..size]);
        }
    }
}

/// Every key of the base and the runs; each key's value from the last
/// run that holds it (an array's index: that changed it from the base).
fn union(base: &Entries, views: &[Entries]) -> Entries {
    let before: HashMap<&[u8], &[u8]> = base.iter().map(|(k, v)| (&k[..], &v[..])).collect();
    let mut out = Ordered::new(base);
    for view in views {
        for (k, v) in view {
            if before.get(&k[..]) == Some(&&v[..]) {
                continue;
            }
            *out.slot(k, v) = v.clone();
        }
    }
    out.entries
}

/// Makes `map` hold exactly `target`: keys it holds beyond them deleted
/// (an array's: zeroed), the others written where they differ.
fn replace(map: &Map, layout: &Layout, target: &Entries) -> Result<(), maps::Errno> {
    let now = normalized(layout, &contents_of(map));
    let wanted: HashMap<&[u8], &[u8]> = target.iter().map(|(k, v)| (&k[..], &v[..])).collect();
    let held: HashMap<&[u8], &[u8]> = now.iter().map(|(k, v)| (&k[..], &v[..])).collect();
    for (k, _) in &now {
        if wanted.contains_key(&k[..]) {
            continue;
        }
        if layout.array {
            map.user_update(k, &vec![0; layout.len], maps::update::ANY)?;
        } else {
            map.delete(k)?;
        }
    }
    for (k, v) in target {
        if held.get(&k[..]) != Some(&&v[..]) {
            map.user_update(k, v, maps::update::ANY)?;
        }
    }
    Ok(())
}
