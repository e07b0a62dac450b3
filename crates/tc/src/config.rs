//! A tc configuration as `sluice tc` lines build it and `sluice run --tc`
//! runs it: per device, a clsact qdisc with its ingress and egress blocks,
//! and one table of actions for the whole namespace (as the kernel's, so
//! `tc actions` are shared by index across devices and blocks).

use std::collections::BTreeMap;

use crate::action::Actions;
use crate::block::{Block, Outcome};
use crate::skb::Skb;

/// A device's clsact qdisc.
#[derive(Debug, Default)]
pub struct Clsact {
    pub ingress: Block,
    pub egress: Block,
}

/// Which hook of a clsact qdisc.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Hook {
    Ingress,
    Egress,
}

impl Hook {
    pub fn name(self) -> &'static str {
        match self {
            Hook::Ingress => "ingress",
            Hook::Egress => "egress",
        }
    }
}

/// Every device's qdisc and the action table.
#[derive(Debug, Default)]
pub struct Config {
    devices: BTreeMap<String, Clsact>,
    pub actions: Actions,
}

impl Config {
    /// `tc qdisc add dev DEV clsact`.
    pub fn add_clsact(&mut self, dev: &str) -> Result<(), String> {
        if self.devices.contains_key(dev) {
            return Err(format!(
                "Error: Exclusivity flag on, cannot modify. (dev {dev} has a clsact qdisc)"
            ));
        }
        self.devices.insert(dev.to_string(), Clsact::default());
        Ok(())
    }

    /// `tc qdisc del dev DEV clsact`: the qdisc, its filters and their
    /// actions go.
    pub fn del_clsact(&mut self, dev: &str) -> Result<(), String> {
        let mut q = self.devices.remove(dev).ok_or_else(|| {
            format!("Error: Cannot find specified qdisc on specified device ({dev}).")
        })?;
        for block in [&mut q.ingress, &mut q.egress] {
            block.clear(&mut self.actions);
        }
        Ok(())
    }

    pub fn devices(&self) -> impl Iterator<Item = (&str, &Clsact)> {
        self.devices.iter().map(|(d, q)| (d.as_str(), q))
    }

    pub fn clsact(&self, dev: &str) -> Option<&Clsact> {
        self.devices.get(dev)
    }

    /// The block of `dev`'s `hook`, and the action table beside it.
    pub fn block_mut(
        &mut self,
        dev: &str,
        hook: Hook,
    ) -> Result<(&mut Block, &mut Actions), String> {
        let q = self.devices.get_mut(dev).ok_or_else(|| {
            format!(
                "Error: Cannot find specified qdisc on specified device ({dev}: add clsact first)."
            )
        })?;
        let block = match hook {
            Hook::Ingress => &mut q.ingress,
            Hook::Egress => &mut q.egress,
        };
        Ok((block, &mut self.actions))
    }

    /// Runs `skb` through `dev`'s `hook` (no qdisc or no filters: `Unspec`,
    /// the packet goes on). Actions count the bytes from the network
    /// header at ingress and the whole frame at egress, as the kernel's
    /// `qdisc_pkt_len` does there.
    pub fn classify(&mut self, dev: &str, hook: Hook, skb: &mut Skb) -> Outcome {
        let bytes = match hook {
            Hook::Ingress => skb.len(),
            Hook::Egress => skb.data.len(),
        } as u64;
        match self.devices.get_mut(dev) {
            Some(q) => {
                let block = match hook {
                    Hook::Ingress => &mut q.ingress,
                    Hook::Egress => &mut q.egress,
                };
                block.classify(skb, bytes, &mut self.actions)
            }
            None => Outcome::unmatched(),
        }
    }
}
