//! The information elements sluice exports (IANA's IPFIX registry, RFC 7012)
//! and its two templates.

/// Information element ids (IANA "IPFIX Information Elements").
pub mod id {
    /// unsigned64: octets since the previous report of the flow.
    pub const OCTET_DELTA_COUNT: u16 = 1;
    /// unsigned64: packets since the previous report of the flow.
    pub const PACKET_DELTA_COUNT: u16 = 2;
    /// unsigned8.
    pub const PROTOCOL_IDENTIFIER: u16 = 4;
    /// unsigned16 (RFC 7125 widened it from RFC 5102's unsigned8).
    pub const TCP_CONTROL_BITS: u16 = 6;
    /// unsigned16.
    pub const SOURCE_TRANSPORT_PORT: u16 = 7;
    /// ipv4Address.
    pub const SOURCE_IPV4_ADDRESS: u16 = 8;
    /// unsigned16.
    pub const DESTINATION_TRANSPORT_PORT: u16 = 11;
    /// ipv4Address.
    pub const DESTINATION_IPV4_ADDRESS: u16 = 12;
    /// ipv6Address.
    pub const SOURCE_IPV6_ADDRESS: u16 = 27;
    /// ipv6Address.
    pub const DESTINATION_IPV6_ADDRESS: u16 = 28;
    /// unsigned16: type * 256 + code.
    pub const ICMP_TYPE_CODE_IPV4: u16 = 32;
    /// unsigned64 (read by the decoder, not exported).
    pub const OCTET_TOTAL_COUNT: u16 = 85;
    /// unsigned64 (read by the decoder, not exported).
    pub const PACKET_TOTAL_COUNT: u16 = 86;
    /// unsigned8.
    pub const FLOW_END_REASON: u16 = 136;
    /// unsigned16: type * 256 + code.
    pub const ICMP_TYPE_CODE_IPV6: u16 = 139;
    /// dateTimeMilliseconds: milliseconds since the UNIX epoch.
    pub const FLOW_START_MILLISECONDS: u16 = 152;
    /// dateTimeMilliseconds.
    pub const FLOW_END_MILLISECONDS: u16 = 153;
}

/// The template id of IPv4 flow records.
pub const TEMPLATE_IPV4: u16 = 256;
/// The template id of IPv6 flow records.
pub const TEMPLATE_IPV6: u16 = 257;

/// Set id of template sets.
pub(crate) const SET_TEMPLATE: u16 = 2;
/// Set id of options template sets.
pub(crate) const SET_OPTIONS_TEMPLATE: u16 = 3;
/// The IPFIX version number.
pub(crate) const VERSION: u16 = 10;
/// Message header length.
pub(crate) const MESSAGE_HEADER: usize = 16;
/// Set header length.
pub(crate) const SET_HEADER: usize = 4;

/// One field of a template: an information element and its length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub id: u16,
    pub len: u16,
}

const fn f(id: u16, len: u16) -> Field {
    Field { id, len }
}

/// The fields of the IPv4 template, in record order.
pub const IPV4_FIELDS: [Field; 12] = [
    f(id::SOURCE_IPV4_ADDRESS, 4),
    f(id::DESTINATION_IPV4_ADDRESS, 4),
    f(id::SOURCE_TRANSPORT_PORT, 2),
    f(id::DESTINATION_TRANSPORT_PORT, 2),
    f(id::PROTOCOL_IDENTIFIER, 1),
    f(id::ICMP_TYPE_CODE_IPV4, 2),
    f(id::PACKET_DELTA_COUNT, 8),
    f(id::OCTET_DELTA_COUNT, 8),
    f(id::FLOW_START_MILLISECONDS, 8),
    f(id::FLOW_END_MILLISECONDS, 8),
    f(id::TCP_CONTROL_BITS, 2),
    f(id::FLOW_END_REASON, 1),
];

/// The fields of the IPv6 template, in record order.
pub const IPV6_FIELDS: [Field; 12] = [
    f(id::SOURCE_IPV6_ADDRESS, 16),
    f(id::DESTINATION_IPV6_ADDRESS, 16),
    f(id::SOURCE_TRANSPORT_PORT, 2),
    f(id::DESTINATION_TRANSPORT_PORT, 2),
    f(id::PROTOCOL_IDENTIFIER, 1),
    f(id::ICMP_TYPE_CODE_IPV6, 2),
    f(id::PACKET_DELTA_COUNT, 8),
    f(id::OCTET_DELTA_COUNT, 8),
    f(id::FLOW_START_MILLISECONDS, 8),
    f(id::FLOW_END_MILLISECONDS, 8),
    f(id::TCP_CONTROL_BITS, 2),
    f(id::FLOW_END_REASON, 1),
];

/// The length of one data record of a template.
pub(crate) const fn record_len(fields: &[Field]) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < fields.len() {
        n += fields[i].len as usize;
        i += 1;
    }
    n
}

/// IPv4 data record length (50 bytes).
pub(crate) const IPV4_RECORD: usize = record_len(&IPV4_FIELDS);
/// IPv6 data record length (74 bytes).
pub(crate) const IPV6_RECORD: usize = record_len(&IPV6_FIELDS);

/// The template set announcing both templates.
pub(crate) fn template_set() -> Vec<u8> {
    let mut out = Vec::with_capacity(TEMPLATE_SET_LEN);
    out.extend_from_slice(&SET_TEMPLATE.to_be_bytes());
    out.extend_from_slice(&(TEMPLATE_SET_LEN as u16).to_be_bytes());
    for (tid, fields) in [(TEMPLATE_IPV4, &IPV4_FIELDS), (TEMPLATE_IPV6, &IPV6_FIELDS)] {
        out.extend_from_slice(&tid.to_be_bytes());
        out.extend_from_slice(&(fields.len() as u16).to_be_bytes());
        for fl in fields {
            out.extend_from_slice(&fl.id.to_be_bytes());
            out.extend_from_slice(&fl.len.to_be_bytes());
        }
    }
    debug_assert_eq!(out.len(), TEMPLATE_SET_LEN);
    out
}

/// Length of [`template_set`]: a set header, then per template a 4-byte
/// header and 4 bytes per field (a multiple of 4: no padding).
pub(crate) const TEMPLATE_SET_LEN: usize =
    SET_HEADER + 2 * 4 + 4 * (IPV4_FIELDS.len() + IPV6_FIELDS.len());
