//! The 8-byte `ofp_header`, message type numbers and stream framing.

use crate::decode_error::DecodeError;

/// `ofp_header`.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct Header {
    pub version: u8,
    pub msg_type: u8,
    /// The whole message's length, header included.
    pub length: u16,
    pub xid: u32,
}

/// Length of `ofp_header`.
pub const HEADER_LEN: usize = 8;

impl Header {
    /// The header at the start of `buf`, if 8 bytes are there.
    pub fn parse(buf: &[u8]) -> Option<Header> {
        let b = buf.get(..HEADER_LEN)?;
        Some(Header {
            version: b[0],
            msg_type: b[1],
            length: u16::from_be_bytes([b[2], b[3]]),
            xid: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
        })
    }

    /// The header's 8 bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0; HEADER_LEN];
        b[0] = self.version;
        b[1] = self.msg_type;
        b[2..4].copy_from_slice(&self.length.to_be_bytes());
        b[4..8].copy_from_slice(&self.xid.to_be_bytes());
        b
    }
}

/// The length of the message at the start of a stream's `buf`: `None`
/// until its 8 header bytes are there, then the length its header gives
/// (which may be more than `buf` holds yet). A length below 8 cannot frame
/// anything: the stream is broken.
pub fn frame_len(buf: &[u8]) -> Result<Option<usize>, DecodeError> {
    let Some(h) = Header::parse(buf) else {
        return Ok(None);
    };
    if usize::from(h.length) < HEADER_LEN {
        return Err(DecodeError::bad_len(format!(
            "header: length {} is shorter than the 8-byte header",
            h.length
        )));
    }
    Ok(Some(h.length.into()))
}

/// `ofp_type`: the message type numbers of OpenFlow 1.3.
pub mod msg_type {
    pub const HELLO: u8 = 0;
    pub const ERROR: u8 = 1;
    pub const ECHO_REQUEST: u8 = 2;
    pub const ECHO_REPLY: u8 = 3;
    pub const EXPERIMENTER: u8 = 4;
    pub const FEATURES_REQUEST: u8 = 5;
    pub const FEATURES_REPLY: u8 = 6;
    pub const GET_CONFIG_REQUEST: u8 = 7;
    pub const GET_CONFIG_REPLY: u8 = 8;
    pub const SET_CONFIG: u8 = 9;
    pub const PACKET_IN: u8 = 10;
    pub const FLOW_REMOVED: u8 = 11;
    pub const PORT_STATUS: u8 = 12;
    pub const PACKET_OUT: u8 = 13;
    pub const FLOW_MOD: u8 = 14;
    pub const GROUP_MOD: u8 = 15;
    pub const PORT_MOD: u8 = 16;
    pub const TABLE_MOD: u8 = 17;
    pub const MULTIPART_REQUEST: u8 = 18;
    pub const MULTIPART_REPLY: u8 = 19;
    pub const BARRIER_REQUEST: u8 = 20;
    pub const BARRIER_REPLY: u8 = 21;
    pub const QUEUE_GET_CONFIG_REQUEST: u8 = 22;
    pub const QUEUE_GET_CONFIG_REPLY: u8 = 23;
    pub const ROLE_REQUEST: u8 = 24;
    pub const ROLE_REPLY: u8 = 25;
    pub const GET_ASYNC_REQUEST: u8 = 26;
    pub const GET_ASYNC_REPLY: u8 = 27;
    pub const SET_ASYNC: u8 = 28;
    pub const METER_MOD: u8 = 29;
    /// The largest type OpenFlow 1.3 defines.
    pub const MAX: u8 = METER_MOD;
}

/// `ofp_multipart_type`.
pub mod multipart_type {
    pub const DESC: u16 = 0;
    pub const FLOW: u16 = 1;
    pub const AGGREGATE: u16 = 2;
    pub const TABLE: u16 = 3;
    pub const PORT_STATS: u16 = 4;
    pub const QUEUE: u16 = 5;
    pub const GROUP: u16 = 6;
    pub const GROUP_DESC: u16 = 7;
    pub const GROUP_FEATURES: u16 = 8;
    pub const METER: u16 = 9;
    pub const METER_CONFIG: u16 = 10;
    pub const METER_FEATURES: u16 = 11;
    pub const TABLE_FEATURES: u16 = 12;
    pub const PORT_DESC: u16 = 13;
    pub const EXPERIMENTER: u16 = 0xffff;
}
