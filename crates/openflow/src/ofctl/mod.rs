//! The text syntax of `ovs-ofctl` for OpenFlow 1.3: flows as written to
//! `add-flow`, `mod-flows`, `del-flows` and `add-flows FILE`, groups as
//! written to `add-group`, and the `dump-flows` way of printing them back.
//!
//! Parsing follows the `ovs-fields(7)`, `ovs-actions(7)` and `ovs-ofctl(8)`
//! manuals: OVS field names and their OXM names, the protocol shorthands
//! (`tcp`, `udp6`, `arp`, ...) and their prerequisites. Where `ovs-ofctl`
//! quietly drops a field whose prerequisites are missing, or reads
//! `10.0.0.300` as an address, this parser says what is wrong instead.
//! Printing follows `ovs-ofctl`'s canonical text (field order, names and
//! shorthands), so `format_match(parse(x))` is what `ovs-ofctl parse-flow x`
//! prints, and parsing the printed text gives back the same value.
//!
//! Where this differs from `ovs-ofctl`: `rarp` is refused (OXM has no RARP
//! fields; `dl_type=0x8035` prints as such); `vlan_tci` values that OXM's
//! `vlan_vid`/`vlan_pcp` cannot say are refused; masked `set_field` is
//! refused rather than turned into an NXM `load`; port numbers
//! 0xff00-0xffff are OpenFlow 1.0's reserved ports, as in OVS, so those
//! 32-bit port numbers cannot be written.

mod actions;
mod fields;
mod flow;
mod format;
mod learn_text;
mod lexer;
mod nx_text;
mod subfield;

pub use actions::{parse_group, parse_group_with_ports};
pub use flow::{parse_flow, parse_flow_with_ports, parse_flows_file};
pub use format::{format_actions, format_flow, format_flow_stats, format_group, format_match};

/// A port as `ovs-ofctl` names it: reserved ports by name (`NORMAL`,
/// `LOCAL`, `TABLE`, ...), others by number.
pub fn port_name(port: u32) -> String {
    fields::port_text(port)
}

/// What is wrong with a flow or group text; the messages read like
/// `ovs-ofctl`'s.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OfctlError {
    /// A value of the wrong shape: `nw_dst: 10.0.0.300 is not an IPv4
    /// address`.
    #[error("{field}: {value} is not {expected}")]
    BadValue {
        field: String,
        value: String,
        expected: String,
    },
    #[error("unknown keyword {0}")]
    UnknownField(String),
    /// A field whose prerequisites the match does not meet (`tp_dst`
    /// without `tcp`, `udp` or `sctp`).
    #[error("{field}: prerequisites not met: needs {needs}")]
    Prerequisite { field: String, needs: String },
    #[error("unknown action {0}")]
    UnknownAction(String),
    /// Anything else: syntax, ordering, what OpenFlow 1.3 cannot say.
    #[error("{0}")]
    Syntax(String),
    /// An error on one line of a flows file (lines count from 1).
    #[error("line {line}: {source}")]
    Line {
        line: usize,
        source: Box<OfctlError>,
    },
}
