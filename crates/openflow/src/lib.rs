//! OpenFlow 1.3 on the wire: [`Message`]s with their header, OXM matches
//! ([`Match`], [`Oxm`]), [`Action`]s and [`Instruction`]s, encoded and
//! decoded. A decode that fails says which OpenFlow error (type and code) a
//! switch must answer with ([`DecodeError`]), so the channel replies and
//! goes on.

mod ofctl;
mod types;

pub use ofctl::*;
pub use types::*;
