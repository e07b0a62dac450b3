//! Open vSwitch's Nicira actions as values (their codec is `nx.rs` and
//! `nx_learn.rs`, their text `ofctl/nx_text.rs`): `resubmit`, `load`,
//! `move`, `note`, `learn`, and the subfields they name.

/// A Nicira action.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum NxAction {
    /// Looks the packet up again, as if it came in on `in_port`
    /// ([`port::IN_PORT`](crate::port::IN_PORT): its own), in `table`
    /// (`None`: the current one).
    Resubmit { in_port: u32, table: Option<u8> },
    /// Writes `value` into the bits of `dst`.
    RegLoad { dst: SubField, value: u64 },
    /// Copies the bits of `src` into those of `dst` (as wide).
    RegMove { src: SubField, dst: SubField },
    /// Bytes that do nothing (a comment the controller reads back).
    Note(Vec<u8>),
    /// Adds (or refreshes) a flow made from the packet's fields.
    Learn(Box<Learn>),
}

/// Bits `ofs..ofs + n_bits` of the field an NXM or OXM header names.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct SubField {
    pub header: u32,
    pub ofs: u16,
    pub n_bits: u16,
}

/// `NX_LEARN_F_*` flags.
pub mod learn_flags {
    pub const SEND_FLOW_REM: u16 = 1;
    pub const DELETE_LEARNED: u16 = 2;
}

/// The learned flow's priority when the action does not say.
pub const LEARN_DEFAULT_PRIORITY: u16 = 0x8000;
/// The learned flow's table when the action does not say.
pub const LEARN_DEFAULT_TABLE: u8 = 1;

/// A `learn` action.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Learn {
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub priority: u16,
    pub cookie: u64,
    pub flags: u16,
    pub table_id: u8,
    pub fin_idle_timeout: u16,
    pub fin_hard_timeout: u16,
    pub specs: Vec<LearnSpec>,
}

impl Default for Learn {
    fn default() -> Learn {
        Learn {
            idle_timeout: 0,
            hard_timeout: 0,
            priority: LEARN_DEFAULT_PRIORITY,
            cookie: 0,
            flags: 0,
            table_id: LEARN_DEFAULT_TABLE,
            fin_idle_timeout: 0,
            fin_hard_timeout: 0,
            specs: Vec::new(),
        }
    }
}

/// Where a spec's bits come from: the packet's field, or a constant.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum LearnSrc {
    Field(SubField),
    Value(u128),
}

/// One part of the learned flow.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum LearnSpec {
    /// The learned flow matches `dst` equal to `src` (as many bits).
    Match { dst: SubField, src: LearnSrc },
    /// The learned flow's actions load `src` into `dst`.
    Load { dst: SubField, src: LearnSrc },
    /// The learned flow's actions output to the port in `src`.
    Output { src: SubField },
}
