//! Whole messages: the header, then the body of each `ofp_type`.

use crate::decode_error::DecodeError;
use crate::header::{HEADER_LEN, Header, msg_type as t};
use crate::types::*;
use crate::wire::{Put, Reader};

/// `OFPHET_VERSIONBITMAP`, the HELLO element that lists versions.
const HELLO_ELEM_VERSIONBITMAP: u16 = 1;

impl Message {
    /// The `ofp_type` number.
    pub fn msg_type(&self) -> u8 {
        match self {
            Message::Hello { .. } => t::HELLO,
            Message::Error(_) => t::ERROR,
            Message::EchoRequest(_) => t::ECHO_REQUEST,
            Message::EchoReply(_) => t::ECHO_REPLY,
            Message::Experimenter { .. } => t::EXPERIMENTER,
            Message::FeaturesRequest => t::FEATURES_REQUEST,
            Message::FeaturesReply(_) => t::FEATURES_REPLY,
            Message::GetConfigRequest => t::GET_CONFIG_REQUEST,
            Message::GetConfigReply(_) => t::GET_CONFIG_REPLY,
            Message::SetConfig(_) => t::SET_CONFIG,
            Message::PacketIn(_) => t::PACKET_IN,
            Message::FlowRemoved(_) => t::FLOW_REMOVED,
            Message::PortStatus(_) => t::PORT_STATUS,
            Message::PacketOut(_) => t::PACKET_OUT,
            Message::FlowMod(_) => t::FLOW_MOD,
            Message::GroupMod(_) => t::GROUP_MOD,
            Message::PortMod(_) => t::PORT_MOD,
            Message::TableMod { .. } => t::TABLE_MOD,
            Message::MultipartRequest { .. } => t::MULTIPART_REQUEST,
            Message::MultipartReply { .. } => t::MULTIPART_REPLY,
            Message::BarrierRequest => t::BARRIER_REQUEST,
            Message::BarrierReply => t::BARRIER_REPLY,
            Message::RoleRequest(_) => t::ROLE_REQUEST,
            Message::RoleReply(_) => t::ROLE_REPLY,
            Message::GetAsyncRequest => t::GET_ASYNC_REQUEST,
            Message::GetAsyncReply(_) => t::GET_ASYNC_REPLY,
            Message::SetAsync(_) => t::SET_ASYNC,
            Message::Unsupported { msg_type, .. } => *msg_type,
        }
    }

    /// The message with an OpenFlow 1.3 header carrying `xid`. A message
    /// longer than 65535 bytes cannot be framed: its length field then
    /// says 65535.
    pub fn encode(&self, xid: u32) -> Vec<u8> {
        let mut out = Header {
            version: VERSION,
            msg_type: self.msg_type(),
            length: 0,
            xid,
        }
        .to_bytes()
        .to_vec();
        self.encode_body(&mut out);
        let len = out.len();
        out.patch_u16(2, len);
        out
    }

    fn encode_body(&self, out: &mut Vec<u8>) {
        match self {
            Message::Hello { versions } => {
                if let Some(v) = versions {
                    out.u16(HELLO_ELEM_VERSIONBITMAP);
                    out.u16(8);
                    out.u32(*v);
                }
            }
            Message::Error(e) => {
                out.u16(e.err_type);
                out.u16(e.code);
                out.extend_from_slice(&e.data);
            }
            Message::EchoRequest(d) | Message::EchoReply(d) => out.extend_from_slice(d),
            Message::Experimenter {
                experimenter,
                exp_type,
                data,
            } => {
                out.u32(*experimenter);
                out.u32(*exp_type);
                out.extend_from_slice(data);
            }
            Message::FeaturesRequest
            | Message::GetConfigRequest
            | Message::BarrierRequest
            | Message::BarrierReply
            | Message::GetAsyncRequest => {}
            Message::FeaturesReply(f) => f.encode(out),
            Message::GetConfigReply(c) | Message::SetConfig(c) => {
                out.u16(c.flags);
                out.u16(c.miss_send_len);
            }
            Message::PacketIn(p) => p.encode(out),
            Message::FlowRemoved(f) => f.encode(out),
            Message::PortStatus(p) => {
                out.u8(p.reason);
                out.zeros(7);
                p.desc.encode(out);
            }
            Message::PacketOut(p) => p.encode(out),
            Message::FlowMod(f) => f.encode(out),
            Message::GroupMod(g) => g.encode(out),
            Message::PortMod(p) => p.encode(out),
            Message::TableMod { table_id, config } => {
                out.u8(*table_id);
                out.zeros(3);
                out.u32(*config);
            }
            Message::MultipartRequest { flags, body } => {
                out.u16(body.mp_type());
                out.u16(*flags);
                out.zeros(4);
                body.encode(out);
            }
            Message::MultipartReply { flags, body } => {
                out.u16(body.mp_type());
                out.u16(*flags);
                out.zeros(4);
                body.encode(out);
            }
            Message::RoleRequest(r) | Message::RoleReply(r) => {
                out.u32(r.role);
                out.zeros(4);
                out.u64(r.generation_id);
            }
            Message::GetAsyncReply(m) | Message::SetAsync(m) => m.iter().for_each(|v| out.u32(*v)),
            Message::Unsupported { body, .. } => out.extend_from_slice(body),
        }
    }

    /// Decodes one whole message (`frame` holds exactly the length its
    /// header gives; see [`crate::frame_len`]). HELLO is read in any
    /// version, everything else only in 1.3.
    pub fn decode(frame: &[u8]) -> Result<(Header, Message), DecodeError> {
        let Some(h) = Header::parse(frame) else {
            return Err(DecodeError::bad_len(format!(
                "header: {} bytes, a message needs at least 8",
                frame.len()
            )));
        };
        if usize::from(h.length) != frame.len() {
            return Err(DecodeError::bad_len(format!(
                "header: length {} but the frame has {} bytes",
                h.length,
                frame.len()
            )));
        }
        if h.msg_type != t::HELLO && h.version != VERSION {
            return Err(DecodeError::new(
                error::BAD_REQUEST,
                error::BAD_REQUEST_BAD_VERSION,
                format!(
                    "header: version {:#04x}, only 0x04 (OpenFlow 1.3) is spoken",
                    h.version
                ),
            ));
        }
        if h.msg_type > t::MAX {
            return Err(DecodeError::new(
                error::BAD_REQUEST,
                error::BAD_REQUEST_BAD_TYPE,
                format!(
                    "header: message type {} is not one of OpenFlow 1.3",
                    h.msg_type
                ),
            ));
        }
        let mut r = Reader::new(frame, (error::BAD_REQUEST, error::BAD_REQUEST_BAD_LEN));
        r.skip(HEADER_LEN, "header")?;
        let m = decode_body(h.msg_type, &mut r).map_err(|e| e.within(type_name(h.msg_type)))?;
        if !r.is_empty() {
            return Err(DecodeError::bad_len(format!(
                "{}: {} bytes left over at byte {}",
                type_name(h.msg_type),
                r.remaining(),
                r.pos()
            )));
        }
        Ok((h, m))
    }
}

fn decode_body(msg_type: u8, r: &mut Reader) -> Result<Message, DecodeError> {
    let m = match msg_type {
        t::HELLO => decode_hello(r)?,
        t::ERROR => Message::Error(ErrorMsg {
            err_type: r.u16("error type")?,
            code: r.u16("error code")?,
            data: r.rest().to_vec(),
        }),
        t::ECHO_REQUEST => Message::EchoRequest(r.rest().to_vec()),
        t::ECHO_REPLY => Message::EchoReply(r.rest().to_vec()),
        t::EXPERIMENTER => Message::Experimenter {
            experimenter: r.u32("experimenter id")?,
            exp_type: r.u32("exp_type")?,
            data: r.rest().to_vec(),
        },
        t::FEATURES_REQUEST => Message::FeaturesRequest,
        t::FEATURES_REPLY => Message::FeaturesReply(Features::decode(r)?),
        t::GET_CONFIG_REQUEST => Message::GetConfigRequest,
        t::GET_CONFIG_REPLY | t::SET_CONFIG => {
            let c = SwitchConfig {
                flags: r.u16("flags")?,
                miss_send_len: r.u16("miss_send_len")?,
            };
            if msg_type == t::SET_CONFIG {
                Message::SetConfig(c)
            } else {
                Message::GetConfigReply(c)
            }
        }
        t::PACKET_IN => Message::PacketIn(PacketIn::decode(r)?),
        t::FLOW_REMOVED => Message::FlowRemoved(FlowRemoved::decode(r)?),
        t::PORT_STATUS => {
            let reason = r.u8("reason")?;
            r.skip(7, "pad")?;
            Message::PortStatus(PortStatus {
                reason,
                desc: Port::decode(r)?,
            })
        }
        t::PACKET_OUT => Message::PacketOut(PacketOut::decode(r)?),
        t::FLOW_MOD => Message::FlowMod(FlowMod::decode(r)?),
        t::GROUP_MOD => Message::GroupMod(GroupMod::decode(r)?),
        t::PORT_MOD => Message::PortMod(PortMod::decode(r)?),
        t::TABLE_MOD => {
            let table_id = r.u8("table_id")?;
            r.skip(3, "pad")?;
            Message::TableMod {
                table_id,
                config: r.u32("config")?,
            }
        }
        t::MULTIPART_REQUEST | t::MULTIPART_REPLY => {
            let whole = r.clone();
            let mp_type = r.u16("multipart type")?;
            let flags = r.u16("flags")?;
            r.skip(4, "pad")?;
            if msg_type == t::MULTIPART_REQUEST {
                Message::MultipartRequest {
                    flags,
                    body: MultipartRequest::decode(mp_type, r)?,
                }
            } else {
                match MultipartReply::decode(mp_type, r)? {
                    Some(body) => Message::MultipartReply { flags, body },
                    // A reply of a type not modelled is kept whole.
                    None => {
                        *r = whole;
                        Message::Unsupported {
                            msg_type,
                            body: r.rest().to_vec(),
                        }
                    }
                }
            }
        }
        t::BARRIER_REQUEST => Message::BarrierRequest,
        t::BARRIER_REPLY => Message::BarrierReply,
        t::ROLE_REQUEST | t::ROLE_REPLY => {
            let role = r.u32("role")?;
            r.skip(4, "pad")?;
            let role = Role {
                role,
                generation_id: r.u64("generation_id")?,
            };
            if msg_type == t::ROLE_REQUEST {
                Message::RoleRequest(role)
            } else {
                Message::RoleReply(role)
            }
        }
        t::GET_ASYNC_REQUEST => Message::GetAsyncRequest,
        t::GET_ASYNC_REPLY | t::SET_ASYNC => {
            let mut m = [0u32; 6];
            for v in &mut m {
                *v = r.u32("async mask")?;
            }
            if msg_type == t::SET_ASYNC {
                Message::SetAsync(m)
            } else {
                Message::GetAsyncReply(m)
            }
        }
        _ => Message::Unsupported {
            msg_type,
            body: r.rest().to_vec(),
        },
    };
    Ok(m)
}

/// HELLO's elements: the first version bitmap is kept (its first 32 bits,
/// versions 0 to 31), the others are skipped.
fn decode_hello(r: &mut Reader) -> Result<Message, DecodeError> {
    let mut versions = None;
    while !r.is_empty() {
        let at = r.pos();
        let etype = r.u16("hello element type")?;
        let len = usize::from(r.u16("hello element length")?);
        if len < 4 || len - 4 > r.remaining() {
            return Err(DecodeError::bad_len(format!(
                "hello element at byte {at} has length {len}, {} bytes left for it",
                r.remaining() + 4
            )));
        }
        let mut e = r.sub(
            len - 4,
            "hello element",
            (error::BAD_REQUEST, error::BAD_REQUEST_BAD_LEN),
        )?;
        // The padding to 8 bytes may be missing after the last element.
        let pad = (crate::wire::pad8(len) - len).min(r.remaining());
        r.skip(pad, "hello element padding")?;
        if etype == HELLO_ELEM_VERSIONBITMAP && versions.is_none() {
            versions = Some(
                e.peek(4)
                    .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]])),
            );
            let _ = e.rest();
        }
    }
    Ok(Message::Hello { versions })
}

/// The specification's name of a message type, for error reasons.
pub fn type_name(msg_type: u8) -> &'static str {
    const NAMES: [&str; 30] = [
        "hello",
        "error",
        "echo_request",
        "echo_reply",
        "experimenter",
        "features_request",
        "features_reply",
        "get_config_request",
        "get_config_reply",
        "set_config",
        "packet_in",
        "flow_removed",
        "port_status",
        "packet_out",
        "flow_mod",
        "group_mod",
        "port_mod",
        "table_mod",
        "multipart_request",
        "multipart_reply",
        "barrier_request",
        "barrier_reply",
        "queue_get_config_request",
        "queue_get_config_reply",
        "role_request",
        "role_reply",
        "get_async_request",
        "get_async_reply",
        "set_async",
        "meter_mod",
    ];
    NAMES
        .get(usize::from(msg_type))
        .copied()
        .unwrap_or("unknown")
}
