//! Datapath actions: what the OpenFlow pipeline's translation of a flow
//! comes to, in order, for the datapath to run on every packet of the
//! flow without asking again (Open vSwitch's ODP actions).

use openflow::Field;

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum DpAction {
    /// The packet as it is now, out of a port.
    Output(u32),
    /// The packet as it is now, to the controller (a PACKET_IN).
    Controller(ToController),
    /// A header field rewritten (its checksums updated).
    Set(Field, u128),
    /// The IP TTL (or IPv6 hop limit) rewritten.
    SetTtl(u8),
    PushVlan {
        tpid: u16,
        tci: u16,
    },
    PopVlan,
    /// Actions on a copy of the packet (a group's bucket).
    Clone(Vec<DpAction>),
}

/// What a PACKET_IN says besides the packet.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct ToController {
    pub reason: u8,
    pub table_id: u8,
    pub cookie: u64,
    pub max_len: u16,
    /// The OpenFlow metadata at the time (packet-ins carry it when not 0).
    pub metadata: u64,
}
