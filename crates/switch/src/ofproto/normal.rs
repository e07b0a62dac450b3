//! The NORMAL port: Open vSwitch's L2 learning bridge (`xlate_normal`).
//! Frames to reserved multicast addresses (STP, LLDP, ...) are dropped.
//! A frame's VLAN comes from its input port (an access port's `tag`, or a
//! trunk's 802.1Q tag, 0 when untagged, refused when the port does not
//! carry it); its source MAC is learned on that VLAN and port; it goes to
//! the port its destination was learned on, or floods to every other port
//! that carries its VLAN; each output gets the tag its port wants (none on
//! an access port or for VLAN 0, the VLAN's on a trunk). Learning is a
//! side effect the caller applies when the packet passes ([`Learned`]); a
//! new or moved MAC changes the tables' version, so megaflows that flooded
//! are revalidated.

use std::collections::HashMap;

use openflow::{Action, Field, Oxm};

use super::xlate::{Branch, Ctx, Xlate};
use crate::flow::slot;

/// A port's VLANs, as `ovs-vsctl` sets them: `tag` makes it an access port
/// of that VLAN; otherwise it is a trunk of `trunks` (every VLAN when
/// empty).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortVlan {
    pub tag: Option<u16>,
    pub trunks: Vec<u16>,
}

impl PortVlan {
    /// Whether the port carries VLAN `vlan` (0: untagged frames).
    pub fn carries(&self, vlan: u16) -> bool {
        match self.tag {
            Some(t) => t == vlan,
            None => self.trunks.is_empty() || self.trunks.contains(&vlan),
        }
    }
}

/// A learned MAC: on VLAN `vlan`, address `mac` was seen on `port`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct MacLearn {
    pub vlan: u16,
    pub mac: u64,
    pub port: u32,
}

/// Seconds a learned MAC stays without a frame from it (OVS's
/// `mac-aging-time` default).
const MAC_AGING_NS: u64 = 300 * 1_000_000_000;
/// Entries at most (OVS's `mac-table-size` default); the oldest goes.
const MAC_TABLE_SIZE: usize = 2048;

/// The bridge's MAC learning table.
#[derive(Clone, Debug, Default)]
pub struct MacTable {
    /// (VLAN, MAC) -> (port, last seen ns).
    entries: HashMap<(u16, u64), (u32, u64)>,
}

impl MacTable {
    /// The port `mac` was learned on in `vlan`.
    pub fn port(&self, vlan: u16, mac: u64) -> Option<u32> {
        self.entries.get(&(vlan, mac)).map(|e| e.0)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Learns `l` at `now`; whether the table changed (a new MAC, or one
    /// that moved), not only refreshed.
    pub fn learn(&mut self, l: &MacLearn, now: u64) -> bool {
        let key = (l.vlan, l.mac);
        if let Some(e) = self.entries.get_mut(&key) {
            let moved = e.0 != l.port;
            *e = (l.port, now.max(e.1));
            return moved;
        }
        if self.entries.len() >= MAC_TABLE_SIZE
            && let Some(oldest) = self.entries.iter().min_by_key(|e| e.1.1).map(|e| *e.0)
        {
            self.entries.remove(&oldest);
        }
        self.entries.insert(key, (l.port, now));
        true
    }

    /// Forgets the MACs not seen for the aging time; whether any went.
    pub fn expire(&mut self, now: u64) -> bool {
        let before = self.entries.len();
        self.entries
            .retain(|_, e| now.saturating_sub(e.1) < MAC_AGING_NS);
        self.entries.len() != before
    }

    /// Forgets what was learned on `port` (gone or changed).
    pub fn forget_port(&mut self, port: u32) {
        self.entries.retain(|_, e| e.0 != port);
    }
}

/// Destinations a bridge does not forward (OVS's `eth_addr_is_reserved`,
/// with `forward-bpdu` off): IEEE 802.1's 01:80:c2:00:00:00-0f (STP, pause,
/// LLDP, ...), Extreme's EDP and EAPS, Cisco's ISL, CDP/VTP/DTP/PAgP/UDLD,
/// PVST+, STP uplink fast and CFM.
fn reserved(mac: u64) -> bool {
    const CISCO_CFM: u64 = 0x0100_0ccc_ccc0;
    (mac & !0xf) == 0x0180_c200_0000
        || (mac & !0x7) == CISCO_CFM
        || matches!(
            mac,
            0x00e0_2b00_0000
                | 0x00e0_2b00_0004
                | 0x00e0_2b00_0006
                | 0x0100_0c00_0000
                | 0x0100_0ccc_cccc
                | 0x0100_0ccc_cccd
                | 0x0100_0ccd_cdcd
        )
}

/// A multicast (or broadcast) Ethernet address: its first octet's low bit.
fn multicast(mac: u64) -> bool {
    (mac >> 40) & 1 == 1
}

impl Xlate<'_> {
    /// `output:NORMAL`.
    pub(super) fn normal(&mut self, b: &mut Branch, depth: u32) {
        let in_port = self.in_port;
        let Some(input) = self.of.ports.get(&in_port).map(|p| p.vlan.clone()) else {
            return;
        };
        let tci = self.look(b, slot::VLAN_TCI) as u16;
        let tagged_vid = (tci & 0x1000 != 0).then_some(tci & 0x0fff);
        let vlan = match (input.tag, tagged_vid) {
            // An access port takes untagged (and priority-tagged) frames.
            (Some(tag), None | Some(0)) => tag,
            (Some(_), Some(_)) => return,
            (None, vid) => vid.unwrap_or(0),
        };
        if !input.carries(vlan) {
            return;
        }
        let src = self.look(b, slot::ETH_SRC) as u64;
        let dst = self.look(b, slot::ETH_DST) as u64;
        if reserved(dst) {
            return;
        }
        if !multicast(src) {
            self.learned.macs.push(MacLearn {
                vlan,
                mac: src,
                port: in_port,
            });
        }
        // What this translation just learned counts already (a frame to
        // its own source goes nowhere), as in OVS.
        let known = (!multicast(dst))
            .then(|| {
                let mut just = self.learned.macs.iter().rev();
                just.find(|m| m.vlan == vlan && m.mac == dst)
                    .map(|m| m.port)
                    .or_else(|| self.of.macs.port(vlan, dst))
            })
            .flatten();
        let outs: Vec<u32> = match known {
            Some(p) if p == in_port => Vec::new(),
            Some(p) => vec![p],
            None => self
                .of
                .ports
                .iter()
                .filter(|(n, info)| {
                    **n != in_port
                        && !info.no_forward()
                        && !info.no_flood()
                        && info.vlan.carries(vlan)
                })
                .map(|(n, _)| *n)
                .collect(),
        };
        let ctx = Ctx {
            table: 0xff,
            cookie: u64::MAX,
            miss: false,
        };
        for p in outs {
            let Some(out) = self.of.ports.get(&p).map(|i| i.vlan.clone()) else {
                continue;
            };
            self.tag_for(b, &out, vlan, depth, ctx);
            let output = Action::Output {
                port: p,
                max_len: 0,
            };
            self.action_in(b, &output, depth, false, ctx);
        }
    }

    /// Gives the frame the tag port `out` wants for `vlan`: none on an
    /// access port or for VLAN 0, `vlan` on a trunk.
    fn tag_for(&mut self, b: &mut Branch, out: &PortVlan, vlan: u16, depth: u32, ctx: Ctx) {
        let want = (out.tag.is_none() && vlan != 0).then_some(vlan);
        let tci = slot::VLAN_TCI.get(&b.flow) as u16;
        let have = (tci & 0x1000 != 0).then_some(tci & 0x0fff);
        if want == have {
            return;
        }
        let actions = match (have, want) {
            (Some(_), None) => vec![Action::PopVlan],
            (None, Some(v)) => vec![
                Action::PushVlan(0x8100),
                Action::SetField(Oxm::exact(Field::VlanVid, u128::from(0x1000 | v))),
            ],
            (_, Some(v)) => vec![Action::SetField(Oxm::exact(
                Field::VlanVid,
                u128::from(0x1000 | v),
            ))],
            (None, None) => Vec::new(),
        };
        // (A pushed tag's priority is 0, as OVS's NORMAL pushes it.)
        for a in &actions {
            self.action_in(b, a, depth, false, ctx);
        }
    }
}
