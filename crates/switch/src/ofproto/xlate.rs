//! Translation (Open vSwitch's ofproto-dpif-xlate): a flow key run through
//! the OpenFlow tables gives the datapath actions for every packet of that
//! flow, and the key bits the run looked at. Those bits are the megaflow's
//! mask: any packet equal to this one under them takes the same path, so
//! the datapath may cache (mask, key & mask) -> actions.
//!
//! The rule for soundness: whatever decides the result (a table lookup, a
//! test of a field in an action) adds the bits it read to the mask first.
//! Registers (Open vSwitch's `reg0..15`) are part of the key the tables
//! look up ([`PipelineKey`]) but not of the megaflow: they start at zero
//! and only actions write them, from constants or from fields whose bits
//! the write adds to the mask, so the packet's bits under the mask decide
//! them.

use openflow::{Action, Field, GroupType, Instruction, packet_in_reason, port};
use tss::RuleId;

use super::Ofproto;
use super::action_set::ActionSet;
use crate::flow::{
    ETH_TYPE_ARP, ETH_TYPE_IPV4, ETH_TYPE_IPV6, FRAG_LATER, FieldSlot, IPPROTO_ICMP,
    IPPROTO_ICMPV6, IPPROTO_SCTP, IPPROTO_TCP, IPPROTO_UDP, PIPELINE_WORDS, PackedKey, PipelineKey,
    datapath_part, pipeline_key, slot, slot_of,
};
use crate::odp::{DpAction, ToController};

/// A table, flow entry or group bucket a translation went through: the
/// packets of its megaflow count there.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Touch {
    /// A lookup in a table, and the entry it found.
    Lookup {
        table: u8,
        rule: Option<RuleId>,
    },
    Bucket {
        group: u32,
        bucket: usize,
    },
}

/// The result of translating one flow.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Translation {
    pub actions: Vec<DpAction>,
    /// The key bits the translation depended on.
    pub mask: PackedKey,
    pub touched: Vec<Touch>,
    /// What the translation learned, for the caller to apply
    /// ([`Ofproto::learn`]) when the packet really passes.
    pub learned: Learned,
}

/// What a translation learned: flows `learn` actions made, MACs the NORMAL
/// port saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Learned {
    pub flows: Vec<openflow::FlowMod>,
    pub macs: Vec<super::MacLearn>,
}

impl Learned {
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty() && self.macs.is_empty()
    }
}

/// How deep groups and `output:TABLE` may nest.
const MAX_DEPTH: u32 = 16;

/// `OFPC_INVALID_TTL_TO_CONTROLLER` in the switch config's flags.
pub const INVALID_TTL_TO_CONTROLLER: u16 = 1 << 2;

pub(super) struct Xlate<'a> {
    pub(super) of: &'a Ofproto,
    /// The port the packet came in on, as outputs see it (a `resubmit`
    /// with a port changes it for its lookup and actions).
    pub(super) in_port: u32,
    pub(super) mask: PipelineKey,
    pub(super) touched: Vec<Touch>,
    /// The action set of the pipeline running (a `resubmit` writes to it).
    pub(super) set: ActionSet,
    /// Resubmits so far, against endless loops.
    pub(super) resubmits: u32,
    /// The translation went too deep: the packet is dropped, as Open
    /// vSwitch drops it ("recursion too deep").
    pub(super) too_deep: bool,
    /// Flows made by `learn` actions, MACs seen by NORMAL.
    pub(super) learned: Learned,
}

/// One branch of a translation: the flow as the actions so far changed
/// it, and where its actions go.
pub(super) struct Branch {
    pub(super) flow: PipelineKey,
    pub(super) actions: Vec<DpAction>,
    /// A failed TTL decrement ends the packet's processing.
    pub(super) halted: bool,
}

impl Ofproto {
    /// Translates `key` (the flow of a packet that arrived on the key's
    /// in_port) through the tables from table 0.
    pub fn translate(&self, key: &PackedKey) -> Translation {
        self.translate_actions(key, None)
    }

    /// Translates `key` through a packet-out's `actions` (where
    /// `output:TABLE` runs the tables), or through the tables when `None`.
    pub fn translate_actions(&self, key: &PackedKey, actions: Option<&[Action]>) -> Translation {
        let mut x = Xlate {
            of: self,
            in_port: slot::IN_PORT.get(key) as u32,
            mask: [0; PIPELINE_WORDS],
            touched: Vec::new(),
            set: ActionSet::default(),
            resubmits: 0,
            too_deep: false,
            learned: Learned::default(),
        };
        // Datapath flows always match the port a packet came in on.
        slot::IN_PORT.or_all(&mut x.mask);
        let mut b = Branch {
            flow: pipeline_key(key),
            actions: Vec::new(),
            halted: false,
        };
        match actions {
            None => x.pipeline(&mut b, 0, 0),
            Some(list) => {
                for a in list {
                    x.action(&mut b, a, 0, true);
                }
            }
        }
        if x.too_deep {
            b.actions.clear();
        }
        Translation {
            actions: b.actions,
            mask: datapath_part(&x.mask),
            touched: x.touched,
            learned: x.learned,
        }
    }
}

impl Xlate<'_> {
    /// The value of a field of `b`'s flow, marking it as looked at.
    pub(super) fn look(&mut self, b: &Branch, s: FieldSlot) -> u128 {
        s.or_all(&mut self.mask);
        s.get(&b.flow)
    }

    /// Runs the tables from `table` on `b`, then its action set (a
    /// pipeline of its own: an enclosing one's set is kept aside).
    fn pipeline(&mut self, b: &mut Branch, table: u8, depth: u32) {
        let outer = std::mem::take(&mut self.set);
        let last = self.tables(b, table, depth);
        let set = std::mem::replace(&mut self.set, outer);
        // A miss drops the packet, action set and all (OpenFlow 1.3).
        let Some(ctx) = last.filter(|_| !b.halted) else {
            return;
        };
        for a in set.in_order() {
            self.action_in(b, &a, depth, false, ctx);
            if b.halted {
                return;
            }
        }
    }

    /// Runs the tables from `table` on `b`: each entry's instructions,
    /// its actions applied and written into the action set, until one
    /// entry has no `goto_table`: that entry's context, or `None` when a
    /// lookup missed (or an action halted the packet).
    pub(super) fn tables(&mut self, b: &mut Branch, table: u8, depth: u32) -> Option<Ctx> {
        let mut t = table;
        while let Some(tab) = self.of.tables.get(usize::from(t)) {
            let found = tab.lookup(&b.flow, &mut self.mask);
            self.touched.push(Touch::Lookup {
                table: t,
                rule: found.map(|(id, _)| id),
            });
            // A miss with no table-miss entry drops (OpenFlow 1.3).
            let (_, entry) = found?;
            let miss = entry.is_table_miss();
            let cookie = entry.cookie;
            let mut next = None;
            // The instructions' order is fixed whatever their order in the
            // entry: apply, clear, write, metadata, goto.
            for i in ordered(&entry.instructions) {
                match i {
                    Instruction::ApplyActions(list) => {
                        for a in list {
                            let ctx = Ctx {
                                table: t,
                                cookie,
                                miss,
                            };
                            self.action_in(b, a, depth, false, ctx);
                        }
                    }
                    Instruction::ClearActions => self.set = ActionSet::default(),
                    Instruction::WriteActions(list) => self.set.write(list),
                    Instruction::WriteMetadata { metadata, mask } => {
                        let m = slot::METADATA.get(&b.flow) as u64;
                        let v = (m & !mask) | (metadata & mask);
                        slot::METADATA.set(&mut b.flow, u128::from(v));
                    }
                    Instruction::GotoTable(n) => next = Some(*n),
                    Instruction::Meter(_) | Instruction::Experimenter { .. } => {}
                }
                if b.halted {
                    return None;
                }
            }
            match next {
                Some(n) if n > t => t = n,
                _ => {
                    return Some(Ctx {
                        table: t,
                        cookie,
                        miss,
                    });
                }
            }
        }
        // A goto to a table that is not there.
        None
    }

    fn action(&mut self, b: &mut Branch, a: &Action, depth: u32, packet_out: bool) {
        let ctx = Ctx {
            table: 0xff,
            cookie: u64::MAX,
            miss: false,
        };
        self.action_in(b, a, depth, packet_out, ctx);
    }

    pub(super) fn action_in(
        &mut self,
        b: &mut Branch,
        a: &Action,
        depth: u32,
        packet_out: bool,
        ctx: Ctx,
    ) {
        if b.halted {
            return;
        }
        match a {
            Action::Output { port: p, max_len } => {
                self.output(b, *p, *max_len, depth, packet_out, ctx)
            }
            Action::Nx(nx) => self.nx(b, nx, depth, ctx),
            Action::SetField(oxm) => {
                if let Some(n) = oxm.field.register() {
                    slot::reg(n).set(&mut b.flow, oxm.value);
                    return;
                }
                if oxm.field == Field::Metadata {
                    slot::METADATA.set(&mut b.flow, oxm.value);
                    return;
                }
                let Some(s) = slot_of(oxm.field) else { return };
                if self.applies(b, oxm.field) {
                    let mut v = oxm.value;
                    if oxm.field == Field::VlanVid {
                        // The present bit stays; the VID changes.
                        v = (v & 0x0fff) | 0x1000;
                    }
                    s.set(&mut b.flow, v);
                    b.actions.push(DpAction::Set(oxm.field, v));
                }
            }
            Action::PushVlan(tpid) => {
                let tci = self.look(b, slot::VLAN_TCI) as u16;
                // A new outer tag copies the old one's VID and PCP, or is 0.
                let tci = if tci & 0x1000 != 0 { tci & !0x1000 } else { 0 };
                slot::VLAN_TCI.set(&mut b.flow, u128::from(tci | 0x1000));
                b.actions.push(DpAction::PushVlan { tpid: *tpid, tci });
            }
            Action::PopVlan if self.look(b, slot::VLAN_TCI) & 0x1000 != 0 => {
                slot::VLAN_TCI.set(&mut b.flow, 0);
                b.actions.push(DpAction::PopVlan);
            }
            Action::DecNwTtl => {
                if !self.is_ip(b) {
                    return;
                }
                let ttl = self.look(b, slot::NW_TTL) as u8;
                if ttl <= 1 {
                    if self.of.config.flags & INVALID_TTL_TO_CONTROLLER != 0 {
                        b.actions.push(DpAction::Controller(ToController {
                            reason: packet_in_reason::INVALID_TTL,
                            table_id: ctx.table,
                            cookie: ctx.cookie,
                            max_len: self.of.config.miss_send_len,
                            metadata: slot::METADATA.get(&b.flow) as u64,
                        }));
                    }
                    b.halted = true;
                } else {
                    slot::NW_TTL.set(&mut b.flow, u128::from(ttl - 1));
                    b.actions.push(DpAction::SetTtl(ttl - 1));
                }
            }
            Action::SetNwTtl(ttl) if self.is_ip(b) => {
                slot::NW_TTL.set(&mut b.flow, u128::from(*ttl));
                b.actions.push(DpAction::SetTtl(*ttl));
            }
            Action::Group(g) => self.group(b, *g, depth, packet_out),
            // No queues here: set_queue changes nothing.
            Action::SetQueue(_) => {}
            // Refused when the flow was added (MPLS, PBB, TTL copies).
            _ => {}
        }
    }

    fn output(
        &mut self,
        b: &mut Branch,
        p: u32,
        max_len: u16,
        depth: u32,
        packet_out: bool,
        ctx: Ctx,
    ) {
        match p {
            port::CONTROLLER => {
                let reason = if ctx.miss {
                    packet_in_reason::NO_MATCH
                } else {
                    packet_in_reason::ACTION
                };
                b.actions.push(DpAction::Controller(ToController {
                    reason,
                    table_id: ctx.table,
                    cookie: ctx.cookie,
                    max_len,
                    metadata: slot::METADATA.get(&b.flow) as u64,
                }));
            }
            port::IN_PORT => b.actions.push(DpAction::Output(self.in_port)),
            port::NORMAL => self.normal(b, depth),
            port::ALL | port::FLOOD => {
                let flood = p == port::FLOOD;
                for (&n, info) in &self.of.ports {
                    if n != self.in_port && !(flood && info.no_flood()) && !info.no_forward() {
                        b.actions.push(DpAction::Output(n));
                    }
                }
            }
            port::TABLE if packet_out && depth < MAX_DEPTH => self.pipeline(b, 0, depth + 1),
            // Out of the port it came in by only through IN_PORT.
            n if n == self.in_port => {}
            port::LOCAL if self.of.ports.get(&p).is_some_and(|i| !i.no_forward()) => {
                b.actions.push(DpAction::Output(p));
            }
            n if n < port::MAX && self.of.ports.get(&n).is_none_or(|i| !i.no_forward()) => {
                b.actions.push(DpAction::Output(n));
            }
            _ => {}
        }
    }

    fn group(&mut self, b: &mut Branch, id: u32, depth: u32, packet_out: bool) {
        if depth >= MAX_DEPTH {
            return;
        }
        let Some(g) = self.of.groups.get(&id) else {
            return;
        };
        let chosen: Vec<usize> = match g.group_type {
            GroupType::All => (0..g.buckets.len()).collect(),
            GroupType::Select => self.select_bucket(b, &g.buckets).into_iter().collect(),
            // One bucket (indirect); the first live one (fast failover:
            // every port is live here).
            GroupType::Indirect | GroupType::FastFailover => {
                (!g.buckets.is_empty()).then_some(0).into_iter().collect()
            }
        };
        for i in chosen {
            self.touched.push(Touch::Bucket {
                group: id,
                bucket: i,
            });
            let mut copy = Branch {
                flow: b.flow,
                actions: Vec::new(),
                halted: false,
            };
            for a in &g.buckets[i].actions {
                self.action(&mut copy, a, depth + 1, packet_out);
            }
            if !copy.actions.is_empty() {
                b.actions.push(DpAction::Clone(copy.actions));
            }
        }
    }

    /// A select group's bucket by a hash of the flow's addresses and
    /// ports, weighted.
    fn select_bucket(&mut self, b: &Branch, buckets: &[openflow::Bucket]) -> Option<usize> {
        let total: u64 = buckets.iter().map(|k| u64::from(k.weight)).sum();
        if total == 0 {
            return None;
        }
        let h = foldhash::fast::FixedState::with_seed(0x5eed);
        let mut hash = 0u64;
        for s in [
            slot::ETH_SRC,
            slot::ETH_DST,
            slot::ETH_TYPE,
            slot::VLAN_VID,
            slot::NW_PROTO,
            slot::NW_SRC,
            slot::NW_DST,
            slot::IPV6_SRC,
            slot::IPV6_DST,
            slot::TP_SRC,
            slot::TP_DST,
        ] {
            let v = self.look(b, s);
            hash = std::hash::BuildHasher::hash_one(&h, (hash, v));
        }
        let mut pick = hash % total;
        for (i, k) in buckets.iter().enumerate() {
            let w = u64::from(k.weight);
            if pick < w {
                return Some(i);
            }
            pick -= w;
        }
        None
    }

    fn eth_type(&mut self, b: &Branch) -> u16 {
        self.look(b, slot::ETH_TYPE) as u16
    }

    fn is_ip(&mut self, b: &Branch) -> bool {
        matches!(self.eth_type(b), ETH_TYPE_IPV4 | ETH_TYPE_IPV6)
    }

    /// Whether a set-field of `field` applies to the packet: its header is
    /// there (the fields that say so are looked at).
    pub(super) fn applies(&mut self, b: &Branch, field: Field) -> bool {
        use Field::*;
        let proto = |x: &mut Self| x.look(b, slot::NW_PROTO) as u8;
        match field {
            EthDst | EthSrc | EthType => true,
            VlanVid | VlanPcp => self.look(b, slot::VLAN_TCI) & 0x1000 != 0,
            Ipv4Src | Ipv4Dst => self.eth_type(b) == ETH_TYPE_IPV4,
            Ipv6Src | Ipv6Dst | Ipv6Flabel => self.eth_type(b) == ETH_TYPE_IPV6,
            IpDscp | IpEcn => self.is_ip(b),
            ArpOp | ArpSpa | ArpTpa | ArpSha | ArpTha => self.eth_type(b) == ETH_TYPE_ARP,
            TcpSrc | TcpDst | UdpSrc | UdpDst | SctpSrc | SctpDst => {
                let want = match field {
                    TcpSrc | TcpDst => IPPROTO_TCP,
                    UdpSrc | UdpDst => IPPROTO_UDP,
                    _ => IPPROTO_SCTP,
                };
                self.is_ip(b)
                    && proto(self) == want
                    && self.look(b, slot::NW_FRAG) as u64 & FRAG_LATER == 0
            }
            Icmpv4Type | Icmpv4Code => {
                self.eth_type(b) == ETH_TYPE_IPV4
                    && proto(self) == IPPROTO_ICMP
                    && self.look(b, slot::NW_FRAG) as u64 & FRAG_LATER == 0
            }
            Icmpv6Type | Icmpv6Code => {
                self.eth_type(b) == ETH_TYPE_IPV6
                    && proto(self) == IPPROTO_ICMPV6
                    && self.look(b, slot::NW_FRAG) as u64 & FRAG_LATER == 0
            }
            _ => false,
        }
    }
}

/// Where an action runs: its table, its entry's cookie, whether the
/// entry is the table-miss entry (its packet-ins say `no_match`).
#[derive(Copy, Clone)]
pub(super) struct Ctx {
    pub(super) table: u8,
    pub(super) cookie: u64,
    pub(super) miss: bool,
}

/// An entry's instructions in the order OpenFlow runs them.
fn ordered(list: &[Instruction]) -> impl Iterator<Item = &Instruction> {
    let rank = |i: &Instruction| match i {
        Instruction::Meter(_) => 0,
        Instruction::ApplyActions(_) => 1,
        Instruction::ClearActions => 2,
        Instruction::WriteActions(_) => 3,
        Instruction::WriteMetadata { .. } => 4,
        Instruction::GotoTable(_) => 5,
        Instruction::Experimenter { .. } => 6,
    };
    (0..7).flat_map(move |r| list.iter().filter(move |i| rank(i) == r))
}
