//! The OpenFlow side of the switch (Open vSwitch's ofproto): flow tables,
//! groups, ports and the switch configuration, changed by flow-mods and
//! group-mods, and the translation of flows into datapath actions
//! ([`Ofproto::translate`]). Every change bumps [`Ofproto::version`], which
//! tells the datapath its cached flows need revalidating.

mod action_set;
mod normal;
mod table;
mod validate;
mod xlate;
mod xlate_nx;

use std::collections::BTreeMap;

use openflow::{
    Bucket, FlowMod, FlowModCommand, GroupMod, GroupModCommand, GroupType, Port, SwitchConfig,
    TABLE_ALL, error, flow_flags, port_bits,
};

pub use normal::{MacLearn, MacTable, PortVlan};
pub use table::{FlowEntry, RemovedReason, Selector, Table};
pub use validate::actions as validate_actions;
pub use xlate::{Learned, Touch, Translation};

use crate::OfError;

/// Tables of this switch (OpenFlow allows 0..=254).
pub const N_TABLES: u8 = 64;

/// A port as OpenFlow sees it (its counters are the datapath's).
#[derive(Clone, Debug, Default)]
pub struct PortInfo {
    pub desc: Port,
    /// Its VLANs for the NORMAL port (`ovs-vsctl`'s `tag` and `trunks`).
    pub vlan: PortVlan,
}

impl PortInfo {
    pub fn no_forward(&self) -> bool {
        self.desc.config & (port_bits::CONFIG_NO_FWD | port_bits::CONFIG_PORT_DOWN) != 0
    }

    /// OpenFlow 1.3 has no per-port flood flag: every port floods.
    pub fn no_flood(&self) -> bool {
        false
    }
}

/// A group and its counters.
#[derive(Clone, Debug)]
pub struct Group {
    pub group_type: GroupType,
    pub buckets: Vec<Bucket>,
    pub installed_ns: u64,
    pub packets: u64,
    pub bytes: u64,
    /// (packets, bytes) per bucket.
    pub bucket_counts: Vec<(u64, u64)>,
}

/// An entry that left a table, for a FLOW_REMOVED when it asked.
#[derive(Clone, Debug)]
pub struct Removed {
    pub table_id: u8,
    pub entry: FlowEntry,
    pub reason: RemovedReason,
}

impl Removed {
    pub fn wants_message(&self) -> bool {
        self.entry.flags & flow_flags::SEND_FLOW_REM != 0
    }
}

pub struct Ofproto {
    pub tables: Vec<Table>,
    pub groups: BTreeMap<u32, Group>,
    pub ports: BTreeMap<u32, PortInfo>,
    pub config: SwitchConfig,
    /// Bumped by every change that may change a translation.
    pub version: u64,
    /// What the NORMAL port learned.
    pub macs: MacTable,
    /// Ports' VLANs by port number, also for ports not added yet.
    vlans: BTreeMap<u32, PortVlan>,
}

impl Default for Ofproto {
    fn default() -> Ofproto {
        Ofproto::new()
    }
}

impl Ofproto {
    pub fn new() -> Ofproto {
        Ofproto {
            tables: (0..N_TABLES).map(|_| Table::default()).collect(),
            groups: BTreeMap::new(),
            ports: BTreeMap::new(),
            config: SwitchConfig {
                flags: 0,
                miss_send_len: 128,
            },
            version: 0,
            macs: MacTable::default(),
            vlans: BTreeMap::new(),
        }
    }

    /// Carries out a flow-mod at time `now`; the entries it removed.
    pub fn flow_mod(&mut self, fm: &FlowMod, now: u64) -> Result<Vec<Removed>, OfError> {
        let deleting = matches!(
            fm.command,
            FlowModCommand::Delete | FlowModCommand::DeleteStrict
        );
        if fm.table_id >= N_TABLES && !(deleting && fm.table_id == TABLE_ALL) {
            return Err(OfError::new(
                error::FLOW_MOD_FAILED,
                error::FLOW_MOD_FAILED_BAD_TABLE_ID,
                format!(
                    "table {} does not exist (this switch has {N_TABLES})",
                    fm.table_id
                ),
            ));
        }
        if !deleting {
            validate::instructions(self, fm.table_id, &fm.instructions)?;
        }
        let km = crate::flow::key_match(&fm.matcher)?;
        let strict = matches!(
            fm.command,
            FlowModCommand::ModifyStrict | FlowModCommand::DeleteStrict
        );
        let sel = Selector {
            key_match: km,
            strict: strict.then_some(fm.priority),
            cookie: fm.cookie,
            cookie_mask: fm.cookie_mask,
            out_port: if deleting {
                fm.out_port
            } else {
                openflow::port::ANY
            },
            out_group: if deleting {
                fm.out_group
            } else {
                openflow::group::ANY
            },
        };
        self.version += 1;
        let mut removed = Vec::new();
        match fm.command {
            FlowModCommand::Add => self.tables[usize::from(fm.table_id)].add(fm, now)?,
            FlowModCommand::Modify | FlowModCommand::ModifyStrict => {
                self.tables[usize::from(fm.table_id)].modify(&sel, fm);
            }
            FlowModCommand::Delete | FlowModCommand::DeleteStrict => {
                for t in self.table_ids(fm.table_id) {
                    for entry in self.tables[usize::from(t)].delete(&sel) {
                        removed.push(Removed {
                            table_id: t,
                            entry,
                            reason: openflow::flow_removed_reason::DELETE,
                        });
                    }
                }
            }
        }
        Ok(removed)
    }

    /// `table` or, for `OFPTT_ALL`, every table.
    /// Applies what a translation learned, at `now`: the flows `learn`
    /// actions made (one already there with the same actions is only
    /// refreshed: its idle and hard timeouts start again, the tables'
    /// version stays, so the caches are not revalidated, as Open vSwitch
    /// does; a flow the tables refuse, for prerequisites or room, is
    /// dropped as OVS drops it), and the MACs the NORMAL port saw (a new or
    /// moved one changes the version: megaflows that flooded to it are
    /// revalidated).
    pub fn learn(&mut self, learned: &Learned, now: u64) {
        for fm in &learned.flows {
            let Some(table) = self.tables.get_mut(usize::from(fm.table_id)) else {
                continue;
            };
            if let Some(e) = table.same_entry(fm) {
                e.installed_ns = now;
                e.used_ns = e.used_ns.max(now);
                continue;
            }
            if fm.matcher.check_prerequisites().is_ok() {
                let _ = self.flow_mod(fm, now);
            }
        }
        for m in &learned.macs {
            if self.macs.learn(m, now) {
                self.version += 1;
            }
        }
    }

    /// Sets port `port_no`'s VLANs for the NORMAL port, now or when it is
    /// added (what it learned there is forgotten).
    pub fn set_port_vlan(&mut self, port_no: u32, vlan: PortVlan) {
        if let Some(p) = self.ports.get_mut(&port_no) {
            p.vlan = vlan.clone();
            self.macs.forget_port(port_no);
            self.version += 1;
        }
        self.vlans.insert(port_no, vlan);
    }

    pub fn table_ids(&self, table: u8) -> std::ops::Range<u8> {
        if table == TABLE_ALL {
            0..N_TABLES
        } else {
            table..table.saturating_add(1)
        }
    }

    /// Carries out a group-mod; deleting a group deletes the flow entries
    /// that use it (returned).
    pub fn group_mod(&mut self, gm: &GroupMod, now: u64) -> Result<Vec<Removed>, OfError> {
        let fail = |code, why: String| Err(OfError::new(error::GROUP_MOD_FAILED, code, why));
        if gm.command != GroupModCommand::Delete {
            if gm.group_id > openflow::group::MAX {
                return fail(
                    error::GROUP_MOD_FAILED_INVALID_GROUP,
                    format!("group {:#x} is reserved", gm.group_id),
                );
            }
            validate::buckets(self, gm)?;
        }
        self.version += 1;
        let group = || Group {
            group_type: gm.group_type,
            buckets: gm.buckets.clone(),
            installed_ns: now,
            packets: 0,
            bytes: 0,
            bucket_counts: vec![(0, 0); gm.buckets.len()],
        };
        match gm.command {
            GroupModCommand::Add => {
                if self.groups.contains_key(&gm.group_id) {
                    return fail(
                        error::GROUP_MOD_FAILED_GROUP_EXISTS,
                        format!("group {} exists", gm.group_id),
                    );
                }
                self.groups.insert(gm.group_id, group());
            }
            GroupModCommand::Modify => {
                let Some(g) = self.groups.get_mut(&gm.group_id) else {
                    return fail(
                        error::GROUP_MOD_FAILED_UNKNOWN_GROUP,
                        format!("no group {}", gm.group_id),
                    );
                };
                *g = Group {
                    installed_ns: g.installed_ns,
                    ..group()
                };
            }
            GroupModCommand::Delete => {
                let ids: Vec<u32> = if gm.group_id == openflow::group::ALL {
                    self.groups.keys().copied().collect()
                } else {
                    vec![gm.group_id]
                };
                let mut removed = Vec::new();
                for id in ids {
                    if self.groups.remove(&id).is_some() {
                        removed.extend(self.delete_users_of(id));
                    }
                }
                return Ok(removed);
            }
        }
        Ok(Vec::new())
    }

    fn delete_users_of(&mut self, group: u32) -> Vec<Removed> {
        let sel = Selector {
            key_match: (
                [0; crate::flow::PIPELINE_WORDS],
                [0; crate::flow::PIPELINE_WORDS],
            ),
            strict: None,
            cookie: 0,
            cookie_mask: 0,
            out_port: openflow::port::ANY,
            out_group: group,
        };
        let mut removed = Vec::new();
        for t in 0..N_TABLES {
            for entry in self.tables[usize::from(t)].delete(&sel) {
                removed.push(Removed {
                    table_id: t,
                    entry,
                    reason: openflow::flow_removed_reason::GROUP_DELETE,
                });
            }
        }
        removed
    }

    /// Removes the entries whose timeouts passed at `now`.
    pub fn expire(&mut self, now: u64) -> Vec<Removed> {
        let mut removed = Vec::new();
        for t in 0..N_TABLES {
            for (entry, reason) in self.tables[usize::from(t)].expire(now) {
                removed.push(Removed {
                    table_id: t,
                    entry,
                    reason,
                });
            }
        }
        if self.macs.expire(now) {
            self.version += 1;
        }
        if !removed.is_empty() {
            self.version += 1;
        }
        removed
    }

    /// Counts `packets` (of `bytes`, the last at `used_ns`) at every table,
    /// entry and bucket a translation touched.
    pub fn credit(&mut self, touched: &[Touch], packets: u64, bytes: u64, used_ns: u64) {
        for t in touched {
            match *t {
                Touch::Lookup { table, rule } => {
                    let tab = &mut self.tables[usize::from(table)];
                    tab.lookups += packets;
                    if rule.is_some() {
                        tab.matched += packets;
                    }
                    if let Some(e) = rule.and_then(|id| tab.get_mut(id)) {
                        e.packets += packets;
                        e.bytes += bytes;
                        e.used_ns = e.used_ns.max(used_ns);
                    }
                }
                Touch::Bucket { group, bucket } => {
                    if let Some(g) = self.groups.get_mut(&group) {
                        if let Some(c) = g.bucket_counts.get_mut(bucket) {
                            c.0 += packets;
                            c.1 += bytes;
                        }
                        // A group counts a packet once, at its first bucket.
                        if touched
                            .iter()
                            .find(|x| matches!(x, Touch::Bucket { group: g2, .. } if *g2 == group))
                            == Some(t)
                        {
                            g.packets += packets;
                            g.bytes += bytes;
                        }
                    }
                }
            }
        }
    }

    /// Per group, the flow entries whose actions use it (an entry counted
    /// once per group), as Open vSwitch counts a group's `ref_count`.
    pub fn group_refs(&self) -> BTreeMap<u32, u32> {
        let mut refs = BTreeMap::new();
        for (_, e) in self.tables.iter().flat_map(|t| t.entries()) {
            let mut used: Vec<u32> = e.groups().collect();
            used.sort_unstable();
            used.dedup();
            for id in used {
                *refs.entry(id).or_insert(0) += 1;
            }
        }
        refs
    }

    /// Adds or replaces a port; translations that flood change.
    /// Adds a port or changes its description (its VLANs are the ones
    /// set for its number).
    pub fn set_port(&mut self, desc: Port) {
        self.version += 1;
        let vlan = self.vlans.get(&desc.port_no).cloned().unwrap_or_default();
        self.ports.insert(desc.port_no, PortInfo { desc, vlan });
    }

    pub fn remove_port(&mut self, port_no: u32) -> Option<PortInfo> {
        self.version += 1;
        self.macs.forget_port(port_no);
        self.ports.remove(&port_no)
    }
}
