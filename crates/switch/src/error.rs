//! A request the switch refuses: the OpenFlow error (type, code) it
//! answers and a sentence for people, the same type a decode fails with.

pub use openflow::DecodeError as OfError;
