//! OpenFlow 1.3 on the wire: [`Message`]s with their [`Header`], OXM
//! matches ([`Match`], [`Oxm`]), [`Action`]s and [`Instruction`]s, encoded
//! and decoded. A decode that fails says which OpenFlow error (type and
//! code) a switch must answer with ([`DecodeError`], whose
//! [`reply`](DecodeError::reply) builds the ERROR message), so the channel
//! replies and goes on.
//!
//! Decoding never panics and allocates no more than the input holds: every
//! length field is checked against the bytes that are really there.
//!
//! ```
//! use openflow::{Action, Field, FlowMod, FlowModCommand, Instruction, Match, Message, Oxm};
//! let fm = FlowMod {
//!     cookie: 0,
//!     cookie_mask: 0,
//!     table_id: 0,
//!     command: FlowModCommand::Add,
//!     idle_timeout: 0,
//!     hard_timeout: 0,
//!     priority: 100,
//!     buffer_id: openflow::NO_BUFFER,
//!     out_port: openflow::port::ANY,
//!     out_group: openflow::group::ANY,
//!     flags: 0,
//!     matcher: Match { fields: vec![Oxm::exact(Field::EthType, 0x0800)] },
//!     instructions: vec![Instruction::ApplyActions(vec![Action::Output { port: 2, max_len: 0 }])],
//! };
//! let bytes = Message::FlowMod(fm.clone()).encode(7);
//! let (header, msg) = Message::decode(&bytes).unwrap();
//! assert_eq!((header.xid, msg), (7, Message::FlowMod(fm)));
//! ```

mod action;
mod body;
mod decode_error;
mod field;
mod header;
mod instruction;
mod message;
mod multipart;
mod nx;
mod nx_learn;
mod nx_types;
mod ofctl;
mod oxm;
mod prereq;
mod types;
mod wire;

pub use action::action_type;
pub use body::PORT_LEN;
pub use decode_error::DecodeError;
pub use field::{ONF_EXPERIMENTER, OXM_CLASS_BASIC, OXM_CLASS_EXPERIMENTER, OXM_CLASS_NXM1};
pub use header::{HEADER_LEN, Header, frame_len, msg_type, multipart_type};
pub use instruction::instruction_type;
pub use message::type_name;
pub use nx::{
    NX_VENDOR_ID, NXM_OF_IN_PORT, NXM_OF_VLAN_TCI, RESUBMIT_THIS_TABLE, field_of, header_by_name,
    header_name, nx_subtype, oxm_header, preferred_header,
};
pub use nx_types::{
    LEARN_DEFAULT_PRIORITY, LEARN_DEFAULT_TABLE, Learn, LearnSpec, LearnSrc, NxAction, SubField,
    learn_flags,
};
pub use ofctl::*;
pub use oxm::MATCH_TYPE_OXM;
pub use types::*;
