//! The counters a compiled program keeps, read back from its maps (the
//! VM's or the kernel's) by the manifest's slots, and written into a
//! configuration (actions' packets, bytes and drops; matchall's rule
//! hits) so that its `tc -s filter show` prints them.

use crate::manifest::{ACTION_MAP, Manifest, RULE_MAP};

/// Why counters cannot be read back or written into a configuration.
#[derive(Debug, thiserror::Error)]
pub enum CounterError {
    /// The VM has no map of that name.
    #[error("no map {0}")]
    NoMap(String),
    /// A VM map refused the slot's lookup.
    #[error("map {name} slot {slot}: {errno:?}")]
    Slot {
        name: String,
        slot: u32,
        errno: maps::Errno,
    },
    #[error("no map {0} in the kernel")]
    NoKernelMap(String),
    #[error("map {name} has no slot {slot}")]
    NoSlot { name: String, slot: u32 },
    /// The kernel refused to list the maps or look a slot up.
    #[error(transparent)]
    Kernel(#[from] kernel::Error),
    /// A lookup given to [`CompiledCounters::read`] failed.
    #[error("{0}")]
    Lookup(String),
    /// The configuration has no action the manifest names.
    #[error("no action {kind} index {index}")]
    NoAction { kind: &'static str, index: u32 },
    /// The configuration has no hook the manifest names.
    #[error("{0}")]
    NoHook(String),
    #[error("no filter chain {chain} pref {prio}")]
    NoFilter { chain: u32, prio: u16 },
}

impl From<String> for CounterError {
    fn from(e: String) -> CounterError {
        CounterError::Lookup(e)
    }
}

/// A rule's hits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuleCounters {
    pub packets: u64,
    pub bytes: u64,
}

/// An action's runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ActionCounters {
    pub packets: u64,
    pub bytes: u64,
    pub drops: u64,
}

/// Every slot's counters, in the manifest's order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompiledCounters {
    pub rules: Vec<RuleCounters>,
    pub actions: Vec<ActionCounters>,
}

fn u64_at(v: &[u8], i: usize) -> u64 {
    v.get(i * 8..i * 8 + 8)
        .map_or(0, |b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))
}

impl CompiledCounters {
    /// Reads the slots with `lookup(map name, slot)` (the value's bytes);
    /// its errors can be text (`?` on a `String` gives [`CounterError::Lookup`]).
    pub fn read(
        manifest: &Manifest,
        mut lookup: impl FnMut(&str, u32) -> Result<Vec<u8>, CounterError>,
    ) -> Result<CompiledCounters, CounterError> {
        let mut c = CompiledCounters::default();
        for i in 0..manifest.rules.len() {
            let v = lookup(RULE_MAP, i as u32)?;
            c.rules.push(RuleCounters {
                packets: u64_at(&v, 0),
                bytes: u64_at(&v, 1),
            });
        }
        for i in 0..manifest.actions.len() {
            let v = lookup(ACTION_MAP, i as u32)?;
            c.actions.push(ActionCounters {
                packets: u64_at(&v, 0),
                bytes: u64_at(&v, 1),
                drops: u64_at(&v, 2),
            });
        }
        Ok(c)
    }

    /// From the VM's maps (`runtime::Hook::maps`).
    pub fn from_vm(
        manifest: &Manifest,
        maps: &[maps::Map],
    ) -> Result<CompiledCounters, CounterError> {
        CompiledCounters::read(manifest, |name, slot| {
            let m = maps
                .iter()
                .find(|m| m.name() == name)
                .ok_or_else(|| CounterError::NoMap(name.to_string()))?;
            m.user_lookup(&slot.to_ne_bytes())
                .map_err(|errno| CounterError::Slot {
                    name: name.to_string(),
                    slot,
                    errno,
                })
        })
    }

    /// From the kernel's maps of a loaded object.
    pub fn from_kernel(
        manifest: &Manifest,
        object: &kernel::KernelObject,
    ) -> Result<CompiledCounters, CounterError> {
        let maps = object.maps()?;
        CompiledCounters::read(manifest, |name, slot| {
            let m = maps
                .iter()
                .find(|m| kernel::same_map(&m.name, name))
                .ok_or_else(|| CounterError::NoKernelMap(name.to_string()))?;
            m.lookup(&slot.to_ne_bytes())?
                .ok_or_else(|| CounterError::NoSlot {
                    name: name.to_string(),
                    slot,
                })
        })
    }

    /// Writes the counters into `config` (the configuration compiled):
    /// each action's packets, bytes and drops, each matchall rule's hits.
    /// Flower and u32 rules have no counters of their own in `tc show`.
    pub fn apply(&self, manifest: &Manifest, config: &mut tc::Config) -> Result<(), CounterError> {
        for (slot, c) in manifest.actions.iter().zip(&self.actions) {
            let a = config
                .actions
                .get_mut(&slot.action)
                .ok_or(CounterError::NoAction {
                    kind: slot.action.kind,
                    index: slot.action.index,
                })?;
            a.stats.packets = c.packets;
            a.stats.bytes = c.bytes;
            a.stats.drops = c.drops;
        }
        let (block, _) = config
            .block_mut(&manifest.dev, manifest.hook)
            .map_err(|e| CounterError::NoHook(e.to_string()))?;
        for (slot, c) in manifest.rules.iter().zip(&self.rules) {
            if slot.kind != "matchall" {
                continue;
            }
            let f = block
                .filter_mut(slot.chain, slot.prio)
                .ok_or(CounterError::NoFilter {
                    chain: slot.chain,
                    prio: slot.prio,
                })?;
            if let Some(m) = f
                .classifier
                .as_any_mut()
                .and_then(|a| a.downcast_mut::<tc::Matchall>())
            {
                m.set_hits(c.packets);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_map_is_named() {
        let manifest = Manifest {
            dev: "v0".into(),
            hook: tc::ClsactHook::Ingress,
            rules: vec![crate::RuleSlot {
                chain: 0,
                prio: 1,
                kind: "matchall",
                handle: 1,
                text: "matchall".into(),
            }],
            actions: Vec::new(),
        };
        let e = CompiledCounters::from_vm(&manifest, &[]).unwrap_err();
        assert!(
            matches!(&e, CounterError::NoMap(m) if m == RULE_MAP),
            "{e:?}"
        );
        assert_eq!(e.to_string(), format!("no map {RULE_MAP}"));
        let e =
            CompiledCounters::read(&manifest, |_, _| Err("gone".to_string().into())).unwrap_err();
        assert!(
            matches!(&e, CounterError::Lookup(m) if m == "gone"),
            "{e:?}"
        );
    }
}
