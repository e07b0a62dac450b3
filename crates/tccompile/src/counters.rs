//! The counters a compiled program keeps, read back from its maps (the
//! VM's or the kernel's) by the manifest's slots, and written into a
//! configuration (actions' packets, bytes and drops; matchall's rule
//! hits) so that its `tc -s filter show` prints them.

use crate::manifest::{ACTION_MAP, Manifest, RULE_MAP};

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
pub struct Counters {
    pub rules: Vec<RuleCounters>,
    pub actions: Vec<ActionCounters>,
}

fn u64_at(v: &[u8], i: usize) -> u64 {
    v.get(i * 8..i * 8 + 8)
        .map_or(0, |b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))
}

impl Counters {
    /// Reads the slots with `lookup(map name, slot)` (the value's bytes).
    pub fn read(
        manifest: &Manifest,
        mut lookup: impl FnMut(&str, u32) -> Result<Vec<u8>, String>,
    ) -> Result<Counters, String> {
        let mut c = Counters::default();
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
    pub fn from_vm(manifest: &Manifest, maps: &[maps::Map]) -> Result<Counters, String> {
        Counters::read(manifest, |name, slot| {
            let m = maps
                .iter()
                .find(|m| m.name() == name)
                .ok_or_else(|| format!("no map {name}"))?;
            m.user_lookup(&slot.to_ne_bytes())
                .map_err(|e| format!("map {name} slot {slot}: {e:?}"))
        })
    }

    /// From the kernel's maps of a loaded object.
    pub fn from_kernel(
        manifest: &Manifest,
        object: &kernel::KernelObject,
    ) -> Result<Counters, String> {
        let maps = object.maps().map_err(|e| e.to_string())?;
        Counters::read(manifest, |name, slot| {
            let m = maps
                .iter()
                .find(|m| kernel::same_map(&m.name, name))
                .ok_or_else(|| format!("no map {name} in the kernel"))?;
            m.lookup(&slot.to_ne_bytes())
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("map {name} has no slot {slot}"))
        })
    }

    /// Writes the counters into `config` (the configuration compiled):
    /// each action's packets, bytes and drops, each matchall rule's hits.
    /// Flower and u32 rules have no counters of their own in `tc show`.
    pub fn apply(&self, manifest: &Manifest, config: &mut tc::Config) -> Result<(), String> {
        for (slot, c) in manifest.actions.iter().zip(&self.actions) {
            let a = config.actions.get_mut(&slot.action).ok_or_else(|| {
                format!("no action {} index {}", slot.action.kind, slot.action.index)
            })?;
            a.stats.packets = c.packets;
            a.stats.bytes = c.bytes;
            a.stats.drops = c.drops;
        }
        let (block, _) = config.block_mut(&manifest.dev, manifest.hook)?;
        for (slot, c) in manifest.rules.iter().zip(&self.rules) {
            if slot.kind != "matchall" {
                continue;
            }
            let f = block
                .filter_mut(slot.chain, slot.prio)
                .ok_or_else(|| format!("no filter chain {} pref {}", slot.chain, slot.prio))?;
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
