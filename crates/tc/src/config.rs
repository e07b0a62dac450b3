//! A tc configuration as `sluice tc` lines build it and `sluice run --tc`
//! runs it: per device, a clsact qdisc with its ingress and egress blocks,
//! and one table of actions for the whole namespace (as the kernel's, so
//! `tc actions` are shared by index across devices and blocks).

use std::collections::BTreeMap;

use crate::action::Actions;
use crate::block::{Block, Classification};
use crate::devices::Devices;
use crate::error::TcError;
use crate::skb::Skb;

/// A device's clsact qdisc.
#[derive(Debug, Default)]
pub struct Clsact {
    pub ingress: Block,
    pub egress: Block,
    /// The table ids both hooks' u32 filters share.
    pub u32: crate::u32::Common,
}

/// Which hook of a clsact qdisc.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ClsactHook {
    Ingress,
    Egress,
}

impl ClsactHook {
    pub fn name(self) -> &'static str {
        match self {
            ClsactHook::Ingress => "ingress",
            ClsactHook::Egress => "egress",
        }
    }
}

/// Every device's qdisc and the action table.
#[derive(Debug, Default)]
pub struct Config {
    qdiscs: BTreeMap<String, Clsact>,
    pub actions: Actions,
    /// Device names and indexes (every device with a qdisc has one).
    pub devices: Devices,
    /// The fast path is off in every block ([`Config::set_fast`]).
    linear: bool,
}

impl Config {
    /// `tc qdisc add dev DEV clsact`.
    pub fn add_clsact(&mut self, dev: &str) -> Result<(), TcError> {
        if self.qdiscs.contains_key(dev) {
            return Err(TcError::QdiscExists(dev.to_string()));
        }
        let mut q = Clsact::default();
        q.ingress.set_fast(!self.linear);
        q.egress.set_fast(!self.linear);
        self.qdiscs.insert(dev.to_string(), q);
        self.devices.index(dev);
        Ok(())
    }

    /// `tc qdisc del dev DEV clsact`: the qdisc, its filters and their
    /// actions go.
    pub fn del_clsact(&mut self, dev: &str) -> Result<(), TcError> {
        let mut q = (self.qdiscs.remove(dev)).ok_or_else(|| TcError::NoQdisc(dev.to_string()))?;
        for block in [&mut q.ingress, &mut q.egress] {
            block.clear(&mut self.actions);
        }
        Ok(())
    }

    /// Whether the blocks, those there and those to come, take the fast
    /// path (on by default; off, every packet takes the reference walk).
    pub fn set_fast(&mut self, on: bool) {
        self.linear = !on;
        for q in self.qdiscs.values_mut() {
            q.ingress.set_fast(on);
            q.egress.set_fast(on);
        }
    }

    /// The devices with a qdisc, by name.
    pub fn qdiscs(&self) -> impl Iterator<Item = (&str, &Clsact)> {
        self.qdiscs.iter().map(|(d, q)| (d.as_str(), q))
    }

    pub fn clsact(&self, dev: &str) -> Option<&Clsact> {
        self.qdiscs.get(dev)
    }

    /// The block of `dev`'s `hook`, and the action table beside it.
    pub fn block_mut(
        &mut self,
        dev: &str,
        hook: ClsactHook,
    ) -> Result<(&mut Block, &mut Actions), TcError> {
        let q =
            (self.qdiscs.get_mut(dev)).ok_or_else(|| TcError::NoQdiscForFilter(dev.to_string()))?;
        let block = match hook {
            ClsactHook::Ingress => &mut q.ingress,
            ClsactHook::Egress => &mut q.egress,
        };
        Ok((block, &mut self.actions))
    }

    /// Runs `skb` through `dev`'s `hook` (no qdisc or no filters: `Unspec`,
    /// the packet goes on); what actions sent elsewhere has both the
    /// device's name and index. Actions count the bytes from the network
    /// header at ingress and the whole frame at egress, as the kernel's
    /// `qdisc_pkt_len` does there.
    pub fn classify(&mut self, dev: &str, hook: ClsactHook, skb: &mut Skb) -> Classification {
        let bytes = match hook {
            ClsactHook::Ingress => skb.len(),
            ClsactHook::Egress => skb.frame_len(),
        } as u64;
        let mut out = match self.qdiscs.get_mut(dev) {
            Some(q) => {
                let block = match hook {
                    ClsactHook::Ingress => &mut q.ingress,
                    ClsactHook::Egress => &mut q.egress,
                };
                block.classify(skb, bytes, &mut self.actions)
            }
            None => Classification::unmatched(),
        };
        // Mirred names devices, programs give indexes: each gets the other.
        for e in &mut out.emitted {
            if e.dev.is_empty() {
                e.dev = self.devices.name(e.ifindex);
            } else if e.ifindex == 0 {
                e.ifindex = self.devices.index(&e.dev);
            }
        }
        out
    }
}
