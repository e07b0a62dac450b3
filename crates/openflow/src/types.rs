//! The messages of OpenFlow 1.3 (version 0x04) as Rust values. Numbers are
//! those of the specification (`ofp_type`, `ofp_port_no`, ...); fields keep
//! the specification's names without the `ofp_` prefix.

/// OpenFlow 1.3's version number.
pub const VERSION: u8 = 0x04;

/// Reserved ports (`ofp_port_no`).
pub mod port {
    pub const MAX: u32 = 0xffff_ff00;
    pub const IN_PORT: u32 = 0xffff_fff8;
    pub const TABLE: u32 = 0xffff_fff9;
    pub const NORMAL: u32 = 0xffff_fffa;
    pub const FLOOD: u32 = 0xffff_fffb;
    pub const ALL: u32 = 0xffff_fffc;
    pub const CONTROLLER: u32 = 0xffff_fffd;
    pub const LOCAL: u32 = 0xffff_fffe;
    pub const ANY: u32 = 0xffff_ffff;
}

/// `OFPG_ANY` / `OFPG_ALL` and the largest group number.
pub mod group {
    pub const MAX: u32 = 0xffff_ff00;
    pub const ALL: u32 = 0xffff_fffc;
    pub const ANY: u32 = 0xffff_ffff;
}

/// `OFP_NO_BUFFER`.
pub const NO_BUFFER: u32 = 0xffff_ffff;
/// `OFPCML_NO_BUFFER`: an output to the controller sends the whole packet.
pub const CML_NO_BUFFER: u16 = 0xffff;
/// `OFPTT_ALL`: every table (flow-mod delete, flow stats).
pub const TABLE_ALL: u8 = 0xff;

/// Declares [`Field`] and [`Field::ALL`] from one list, so the two cannot
/// drift apart.
macro_rules! fields {
    ($($(#[$doc:meta])* $name:ident,)*) => {
        /// An OXM match field of class `OFPXMC_OPENFLOW_BASIC` (its `oxm_field`
        /// number), TCP flags (ONF's experimenter field, as OVS sends it for
        /// OpenFlow 1.3) and Open vSwitch's registers (class `NXM_NX`).
        #[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
        pub enum Field {
            $($(#[$doc])* $name,)*
        }

        impl Field {
            /// Every field, in `oxm_field` order (TCP flags, then the
            /// registers, last).
            pub const ALL: &'static [Field] = &[$(Field::$name,)*];
        }
    };
}

/// Every register, as a pattern.
macro_rules! any_reg {
    () => {
        $crate::types::Field::Reg0
            | $crate::types::Field::Reg1
            | $crate::types::Field::Reg2
            | $crate::types::Field::Reg3
            | $crate::types::Field::Reg4
            | $crate::types::Field::Reg5
            | $crate::types::Field::Reg6
            | $crate::types::Field::Reg7
            | $crate::types::Field::Reg8
            | $crate::types::Field::Reg9
            | $crate::types::Field::Reg10
            | $crate::types::Field::Reg11
            | $crate::types::Field::Reg12
            | $crate::types::Field::Reg13
            | $crate::types::Field::Reg14
            | $crate::types::Field::Reg15
    };
}
pub(crate) use any_reg;

fields! {
    InPort,
    InPhyPort,
    Metadata,
    EthDst,
    EthSrc,
    EthType,
    VlanVid,
    VlanPcp,
    IpDscp,
    IpEcn,
    IpProto,
    Ipv4Src,
    Ipv4Dst,
    TcpSrc,
    TcpDst,
    UdpSrc,
    UdpDst,
    SctpSrc,
    SctpDst,
    Icmpv4Type,
    Icmpv4Code,
    ArpOp,
    ArpSpa,
    ArpTpa,
    ArpSha,
    ArpTha,
    Ipv6Src,
    Ipv6Dst,
    Ipv6Flabel,
    Icmpv6Type,
    Icmpv6Code,
    Ipv6NdTarget,
    Ipv6NdSll,
    Ipv6NdTll,
    MplsLabel,
    MplsTc,
    MplsBos,
    PbbIsid,
    TunnelId,
    Ipv6Exthdr,
    /// `ONFOXM_ET_TCP_FLAGS` (experimenter 0x4f4e4600, field 42), 12 bits
    /// in 2 bytes.
    TcpFlags,
    /// Open vSwitch's registers `NXM_NX_REG0..15` (class 1, fields 0-15,
    /// 32 bits): scratch space of a packet's pipeline, zero when it comes in.
    Reg0,
    Reg1,
    Reg2,
    Reg3,
    Reg4,
    Reg5,
    Reg6,
    Reg7,
    Reg8,
    Reg9,
    Reg10,
    Reg11,
    Reg12,
    Reg13,
    Reg14,
    Reg15,
}

/// `OFPVID_PRESENT`: the bit of `vlan_vid` that says a tag is there.
pub const VID_PRESENT: u16 = 0x1000;

/// One OXM TLV: a field, its value and an optional mask, both
/// right-aligned in a `u128` (only the field's width counts; a mask bit 1
/// means the bit must match).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct Oxm {
    pub field: Field,
    pub value: u128,
    pub mask: Option<u128>,
}

/// An `ofp_match` of type `OFPMT_OXM`: fields in the order given.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct Match {
    pub fields: Vec<Oxm>,
}

/// An action (`ofp_action_*`).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Action {
    Output {
        port: u32,
        max_len: u16,
    },
    CopyTtlOut,
    CopyTtlIn,
    SetMplsTtl(u8),
    DecMplsTtl,
    PushVlan(u16),
    PopVlan,
    PushMpls(u16),
    PopMpls(u16),
    SetQueue(u32),
    Group(u32),
    SetNwTtl(u8),
    DecNwTtl,
    /// One OXM, unmasked.
    SetField(Oxm),
    PushPbb(u16),
    PopPbb,
    /// A Nicira (Open vSwitch) action: an experimenter action of vendor
    /// [`NX_VENDOR_ID`](crate::NX_VENDOR_ID) whose subtype this crate knows.
    Nx(crate::nx_types::NxAction),
    /// Any other experimenter action, its bytes after the id kept.
    Experimenter {
        experimenter: u32,
        data: Vec<u8>,
    },
}

/// An instruction (`ofp_instruction_*`).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Instruction {
    GotoTable(u8),
    WriteMetadata { metadata: u64, mask: u64 },
    WriteActions(Vec<Action>),
    ApplyActions(Vec<Action>),
    ClearActions,
    Meter(u32),
    Experimenter { experimenter: u32, data: Vec<u8> },
}

/// `ofp_flow_mod_command`.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum FlowModCommand {
    Add,
    Modify,
    ModifyStrict,
    Delete,
    DeleteStrict,
}

/// `ofp_flow_mod_flags`.
pub mod flow_flags {
    pub const SEND_FLOW_REM: u16 = 1 << 0;
    pub const CHECK_OVERLAP: u16 = 1 << 1;
    pub const RESET_COUNTS: u16 = 1 << 2;
    pub const NO_PKT_COUNTS: u16 = 1 << 3;
    pub const NO_BYT_COUNTS: u16 = 1 << 4;
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct FlowMod {
    pub cookie: u64,
    pub cookie_mask: u64,
    pub table_id: u8,
    pub command: FlowModCommand,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub priority: u16,
    pub buffer_id: u32,
    pub out_port: u32,
    pub out_group: u32,
    pub flags: u16,
    pub matcher: Match,
    pub instructions: Vec<Instruction>,
}

/// `ofp_group_mod_command`.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum GroupModCommand {
    Add,
    Modify,
    Delete,
}

/// `ofp_group_type`.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum GroupType {
    All,
    Select,
    Indirect,
    FastFailover,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Bucket {
    pub weight: u16,
    pub watch_port: u32,
    pub watch_group: u32,
    pub actions: Vec<Action>,
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct GroupMod {
    pub command: GroupModCommand,
    pub group_type: GroupType,
    pub group_id: u32,
    pub buckets: Vec<Bucket>,
}

/// `ofp_packet_in_reason`.
pub mod packet_in_reason {
    pub const NO_MATCH: u8 = 0;
    pub const ACTION: u8 = 1;
    pub const INVALID_TTL: u8 = 2;
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct PacketIn {
    pub buffer_id: u32,
    pub total_len: u16,
    pub reason: u8,
    pub table_id: u8,
    pub cookie: u64,
    pub matcher: Match,
    pub data: Vec<u8>,
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct PacketOut {
    pub buffer_id: u32,
    pub in_port: u32,
    pub actions: Vec<Action>,
    /// The frame (empty when `buffer_id` names a buffered one).
    pub data: Vec<u8>,
}

/// `ofp_flow_removed_reason`.
pub mod flow_removed_reason {
    pub const IDLE_TIMEOUT: u8 = 0;
    pub const HARD_TIMEOUT: u8 = 1;
    pub const DELETE: u8 = 2;
    pub const GROUP_DELETE: u8 = 3;
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct FlowRemoved {
    pub cookie: u64,
    pub priority: u16,
    pub reason: u8,
    pub table_id: u8,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub packet_count: u64,
    pub byte_count: u64,
    pub matcher: Match,
}

/// `ofp_port` (64 bytes on the wire; `name` at most 15 bytes).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Port {
    pub port_no: u32,
    pub hw_addr: [u8; 6],
    pub name: String,
    pub config: u32,
    pub state: u32,
    pub curr: u32,
    pub advertised: u32,
    pub supported: u32,
    pub peer: u32,
    pub curr_speed: u32,
    pub max_speed: u32,
}

/// `ofp_port_config` and `ofp_port_state` bits used here.
pub mod port_bits {
    pub const CONFIG_PORT_DOWN: u32 = 1 << 0;
    pub const CONFIG_NO_RECV: u32 = 1 << 2;
    pub const CONFIG_NO_FWD: u32 = 1 << 5;
    pub const CONFIG_NO_PACKET_IN: u32 = 1 << 6;
    pub const STATE_LINK_DOWN: u32 = 1 << 0;
    pub const STATE_LIVE: u32 = 1 << 2;
}

/// `ofp_port_reason`.
pub mod port_reason {
    pub const ADD: u8 = 0;
    pub const DELETE: u8 = 1;
    pub const MODIFY: u8 = 2;
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct PortStatus {
    pub reason: u8,
    pub desc: Port,
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct PortMod {
    pub port_no: u32,
    pub hw_addr: [u8; 6],
    pub config: u32,
    pub mask: u32,
    pub advertise: u32,
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Features {
    pub datapath_id: u64,
    pub n_buffers: u32,
    pub n_tables: u8,
    pub auxiliary_id: u8,
    pub capabilities: u32,
}

/// `ofp_capabilities`.
pub mod capabilities {
    pub const FLOW_STATS: u32 = 1 << 0;
    pub const TABLE_STATS: u32 = 1 << 1;
    pub const PORT_STATS: u32 = 1 << 2;
    pub const GROUP_STATS: u32 = 1 << 3;
}

/// `ofp_switch_config`.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct SwitchConfig {
    pub flags: u16,
    pub miss_send_len: u16,
}

/// `ofp_controller_role` with the generation id of a ROLE_REQUEST/REPLY.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Role {
    pub role: u32,
    pub generation_id: u64,
}

pub mod role {
    pub const NOCHANGE: u32 = 0;
    pub const EQUAL: u32 = 1;
    pub const MASTER: u32 = 2;
    pub const SLAVE: u32 = 3;
}

/// The body of a flow or aggregate stats request.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct FlowStatsRequest {
    pub table_id: u8,
    pub out_port: u32,
    pub out_group: u32,
    pub cookie: u64,
    pub cookie_mask: u64,
    pub matcher: Match,
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct FlowStats {
    pub table_id: u8,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    pub priority: u16,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub flags: u16,
    pub cookie: u64,
    pub packet_count: u64,
    pub byte_count: u64,
    pub matcher: Match,
    pub instructions: Vec<Instruction>,
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct TableStats {
    pub table_id: u8,
    pub active_count: u32,
    pub lookup_count: u64,
    pub matched_count: u64,
}

#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct PortStats {
    pub port_no: u32,
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_dropped: u64,
    pub tx_dropped: u64,
    pub rx_errors: u64,
    pub tx_errors: u64,
    pub rx_frame_err: u64,
    pub rx_over_err: u64,
    pub rx_crc_err: u64,
    pub collisions: u64,
    pub duration_sec: u32,
    pub duration_nsec: u32,
}

/// `ofp_desc` (strings of at most 255 bytes, serial number 31).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Desc {
    pub mfr_desc: String,
    pub hw_desc: String,
    pub sw_desc: String,
    pub serial_num: String,
    pub dp_desc: String,
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct GroupDesc {
    pub group_type: GroupType,
    pub group_id: u32,
    pub buckets: Vec<Bucket>,
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct GroupStats {
    pub group_id: u32,
    pub ref_count: u32,
    pub packet_count: u64,
    pub byte_count: u64,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    /// (packets, bytes) per bucket.
    pub buckets: Vec<(u64, u64)>,
}

/// `OFPMPF_REQ_MORE` / `OFPMPF_REPLY_MORE`.
pub const MULTIPART_MORE: u16 = 1;

#[derive(Clone, PartialEq, Eq, Debug)]
pub enum MultipartRequest {
    Desc,
    Flow(FlowStatsRequest),
    Aggregate(FlowStatsRequest),
    Table,
    PortStats {
        port_no: u32,
    },
    Group {
        group_id: u32,
    },
    GroupDesc,
    PortDesc,
    /// `OFPMP_TABLE_FEATURES` with its body (the switch may refuse it).
    TableFeatures(Vec<u8>),
    GroupFeatures,
    /// `OFPMP_QUEUE`: the queues of a port (`port::ANY`: all), one queue
    /// or all (`0xffffffff`).
    QueueStats {
        port_no: u32,
        queue_id: u32,
    },
    /// Any other multipart type, kept for the error reply.
    Other {
        mp_type: u16,
        body: Vec<u8>,
    },
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub enum MultipartReply {
    Desc(Desc),
    Flow(Vec<FlowStats>),
    Aggregate {
        packet_count: u64,
        byte_count: u64,
        flow_count: u32,
    },
    Table(Vec<TableStats>),
    PortStats(Vec<PortStats>),
    Group(Vec<GroupStats>),
    GroupDesc(Vec<GroupDesc>),
    PortDesc(Vec<Port>),
    GroupFeatures(GroupFeatures),
    QueueStats(Vec<QueueStats>),
}

/// `ofp_group_features`: the group types and capabilities a switch has,
/// its most groups and the actions a bucket may hold, per type (all,
/// select, indirect, fast failover), as bitmaps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupFeatures {
    /// Bit n: group type n.
    pub types: u32,
    /// `OFPGFC_*`: select weight 1, select liveness 2, chaining 4,
    /// chaining checks 8.
    pub capabilities: u32,
    pub max_groups: [u32; 4],
    /// Bit n: action type n.
    pub actions: [u32; 4],
}

/// `ofp_queue_stats`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    pub port_no: u32,
    pub queue_id: u32,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_errors: u64,
    pub duration_sec: u32,
    pub duration_nsec: u32,
}

/// A message without its header.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Message {
    /// HELLO; `versions` is the version bitmap element (bit n = version n)
    /// when the peer sent one.
    Hello {
        versions: Option<u32>,
    },
    Error(ErrorMsg),
    EchoRequest(Vec<u8>),
    EchoReply(Vec<u8>),
    Experimenter {
        experimenter: u32,
        exp_type: u32,
        data: Vec<u8>,
    },
    FeaturesRequest,
    FeaturesReply(Features),
    GetConfigRequest,
    GetConfigReply(SwitchConfig),
    SetConfig(SwitchConfig),
    PacketIn(PacketIn),
    FlowRemoved(FlowRemoved),
    PortStatus(PortStatus),
    PacketOut(PacketOut),
    FlowMod(FlowMod),
    GroupMod(GroupMod),
    PortMod(PortMod),
    /// TABLE_MOD: (table_id, config).
    TableMod {
        table_id: u8,
        config: u32,
    },
    MultipartRequest {
        flags: u16,
        body: MultipartRequest,
    },
    MultipartReply {
        flags: u16,
        body: MultipartReply,
    },
    BarrierRequest,
    BarrierReply,
    RoleRequest(Role),
    RoleReply(Role),
    GetAsyncRequest,
    /// Masks: packet-in, port-status, flow-removed, each (master, slave).
    GetAsyncReply([u32; 6]),
    SetAsync([u32; 6]),
    /// QUEUE_GET_CONFIG_REQUEST, METER_MOD and other messages a switch may
    /// refuse: the type and the body.
    Unsupported {
        msg_type: u8,
        body: Vec<u8>,
    },
}

/// An ERROR message (`ofp_error_msg`): `data` holds (at least 64 bytes
/// of) the offending request.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ErrorMsg {
    pub err_type: u16,
    pub code: u16,
    pub data: Vec<u8>,
}

/// `ofp_error_type` and the codes a switch answers with.
pub mod error {
    pub const HELLO_FAILED: u16 = 0;
    pub const HELLO_FAILED_INCOMPATIBLE: u16 = 0;

    pub const BAD_REQUEST: u16 = 1;
    pub const BAD_REQUEST_BAD_VERSION: u16 = 0;
    pub const BAD_REQUEST_BAD_TYPE: u16 = 1;
    pub const BAD_REQUEST_BAD_MULTIPART: u16 = 2;
    pub const BAD_REQUEST_BAD_EXPERIMENTER: u16 = 3;
    pub const BAD_REQUEST_BAD_EXP_TYPE: u16 = 4;
    pub const BAD_REQUEST_EPERM: u16 = 5;
    pub const BAD_REQUEST_BAD_LEN: u16 = 6;
    pub const BAD_REQUEST_BUFFER_EMPTY: u16 = 7;
    pub const BAD_REQUEST_BUFFER_UNKNOWN: u16 = 8;
    pub const BAD_REQUEST_BAD_TABLE_ID: u16 = 9;
    pub const BAD_REQUEST_IS_SLAVE: u16 = 10;
    pub const BAD_REQUEST_BAD_PORT: u16 = 11;
    pub const BAD_REQUEST_BAD_PACKET: u16 = 12;
    pub const BAD_REQUEST_MULTIPART_BUFFER_OVERFLOW: u16 = 13;

    pub const BAD_ACTION: u16 = 2;
    pub const BAD_ACTION_BAD_TYPE: u16 = 0;
    pub const BAD_ACTION_BAD_LEN: u16 = 1;
    pub const BAD_ACTION_BAD_EXPERIMENTER: u16 = 2;
    pub const BAD_ACTION_BAD_EXP_TYPE: u16 = 3;
    pub const BAD_ACTION_BAD_OUT_PORT: u16 = 4;
    pub const BAD_ACTION_BAD_ARGUMENT: u16 = 5;
    pub const BAD_ACTION_EPERM: u16 = 6;
    pub const BAD_ACTION_TOO_MANY: u16 = 7;
    pub const BAD_ACTION_BAD_QUEUE: u16 = 8;
    pub const BAD_ACTION_BAD_OUT_GROUP: u16 = 9;
    pub const BAD_ACTION_MATCH_INCONSISTENT: u16 = 10;
    pub const BAD_ACTION_UNSUPPORTED_ORDER: u16 = 11;
    pub const BAD_ACTION_BAD_TAG: u16 = 12;
    pub const BAD_ACTION_BAD_SET_TYPE: u16 = 13;
    pub const BAD_ACTION_BAD_SET_LEN: u16 = 14;
    pub const BAD_ACTION_BAD_SET_ARGUMENT: u16 = 15;

    pub const BAD_INSTRUCTION: u16 = 3;
    pub const BAD_INSTRUCTION_UNKNOWN_INST: u16 = 0;
    pub const BAD_INSTRUCTION_UNSUP_INST: u16 = 1;
    pub const BAD_INSTRUCTION_BAD_TABLE_ID: u16 = 2;
    pub const BAD_INSTRUCTION_UNSUP_METADATA: u16 = 3;
    pub const BAD_INSTRUCTION_UNSUP_METADATA_MASK: u16 = 4;
    pub const BAD_INSTRUCTION_BAD_EXPERIMENTER: u16 = 5;
    pub const BAD_INSTRUCTION_BAD_EXP_TYPE: u16 = 6;
    pub const BAD_INSTRUCTION_BAD_LEN: u16 = 7;
    pub const BAD_INSTRUCTION_EPERM: u16 = 8;

    pub const BAD_MATCH: u16 = 4;
    pub const BAD_MATCH_BAD_TYPE: u16 = 0;
    pub const BAD_MATCH_BAD_LEN: u16 = 1;
    pub const BAD_MATCH_BAD_TAG: u16 = 2;
    pub const BAD_MATCH_BAD_DL_ADDR_MASK: u16 = 3;
    pub const BAD_MATCH_BAD_NW_ADDR_MASK: u16 = 4;
    pub const BAD_MATCH_BAD_WILDCARDS: u16 = 5;
    pub const BAD_MATCH_BAD_FIELD: u16 = 6;
    pub const BAD_MATCH_BAD_VALUE: u16 = 7;
    pub const BAD_MATCH_BAD_MASK: u16 = 8;
    pub const BAD_MATCH_BAD_PREREQ: u16 = 9;
    pub const BAD_MATCH_DUP_FIELD: u16 = 10;
    pub const BAD_MATCH_EPERM: u16 = 11;

    pub const FLOW_MOD_FAILED: u16 = 5;
    pub const FLOW_MOD_FAILED_UNKNOWN: u16 = 0;
    pub const FLOW_MOD_FAILED_TABLE_FULL: u16 = 1;
    pub const FLOW_MOD_FAILED_BAD_TABLE_ID: u16 = 2;
    pub const FLOW_MOD_FAILED_OVERLAP: u16 = 3;
    pub const FLOW_MOD_FAILED_EPERM: u16 = 4;
    pub const FLOW_MOD_FAILED_BAD_TIMEOUT: u16 = 5;
    pub const FLOW_MOD_FAILED_BAD_COMMAND: u16 = 6;
    pub const FLOW_MOD_FAILED_BAD_FLAGS: u16 = 7;

    /// `OFPET_QUEUE_OP_FAILED`.
    pub const QUEUE_OP_FAILED: u16 = 9;
    pub const QUEUE_OP_FAILED_BAD_PORT: u16 = 0;
    pub const QUEUE_OP_FAILED_BAD_QUEUE: u16 = 1;

    pub const GROUP_MOD_FAILED: u16 = 6;
    pub const GROUP_MOD_FAILED_GROUP_EXISTS: u16 = 0;
    pub const GROUP_MOD_FAILED_INVALID_GROUP: u16 = 1;
    pub const GROUP_MOD_FAILED_OUT_OF_GROUPS: u16 = 3;
    pub const GROUP_MOD_FAILED_OUT_OF_BUCKETS: u16 = 4;
    pub const GROUP_MOD_FAILED_CHAINING_UNSUPPORTED: u16 = 5;
    pub const GROUP_MOD_FAILED_WATCH_UNSUPPORTED: u16 = 6;
    pub const GROUP_MOD_FAILED_LOOP: u16 = 7;
    pub const GROUP_MOD_FAILED_UNKNOWN_GROUP: u16 = 8;
    pub const GROUP_MOD_FAILED_BAD_TYPE: u16 = 10;
    pub const GROUP_MOD_FAILED_BAD_COMMAND: u16 = 11;
    pub const GROUP_MOD_FAILED_BAD_BUCKET: u16 = 12;

    pub const PORT_MOD_FAILED: u16 = 7;
    pub const PORT_MOD_FAILED_BAD_PORT: u16 = 0;
    pub const PORT_MOD_FAILED_BAD_HW_ADDR: u16 = 1;

    pub const TABLE_MOD_FAILED: u16 = 8;
    pub const TABLE_MOD_FAILED_BAD_TABLE: u16 = 0;

    pub const SWITCH_CONFIG_FAILED: u16 = 10;
    pub const SWITCH_CONFIG_FAILED_BAD_FLAGS: u16 = 0;
    pub const SWITCH_CONFIG_FAILED_BAD_LEN: u16 = 1;

    pub const ROLE_REQUEST_FAILED: u16 = 11;
    pub const ROLE_REQUEST_FAILED_STALE: u16 = 0;
    pub const ROLE_REQUEST_FAILED_UNSUP: u16 = 1;
    pub const ROLE_REQUEST_FAILED_BAD_ROLE: u16 = 2;

    pub const METER_MOD_FAILED: u16 = 12;
    pub const TABLE_FEATURES_FAILED: u16 = 13;
    pub const TABLE_FEATURES_FAILED_EPERM: u16 = 5;
}
