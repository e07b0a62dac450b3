//! Reading IPFIX messages back: the header, template sets (kept per
//! observation domain), data sets turned into [`Flow`]s. Any template made of
//! the elements sluice exports is understood (other elements are skipped,
//! unsigned ones may use reduced-size encoding); malformed bytes are refused.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::error::{DecodeError, malformed};
use crate::flow::{EndReason, Flow};
use crate::ie::{MESSAGE_HEADER, SET_HEADER, SET_OPTIONS_TEMPLATE, SET_TEMPLATE, VERSION, id};

/// Variable-length marker in a template field.
const VARIABLE: u16 = 65535;

/// One decoded message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub export_time: u32,
    pub sequence: u32,
    pub domain: u32,
    /// Ids of the templates this message announced, in order.
    pub templates: Vec<u16>,
    /// Its data records.
    pub flows: Vec<Flow>,
}

/// A template field: element id (enterprise elements are kept to be
/// skipped) and length.
#[derive(Clone, Copy, Debug)]
struct Spec {
    id: u16,
    enterprise: bool,
    len: u16,
}

/// Decodes messages of one transport session, remembering templates.
#[derive(Debug, Default)]
pub struct Decoder {
    templates: HashMap<(u32, u16), Vec<Spec>>,
}

impl Decoder {
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// Messages back to back (a file, RFC 5655, or a TCP stream).
    pub fn decode_stream(&mut self, mut bytes: &[u8]) -> Result<Vec<Message>, DecodeError> {
        let mut out = Vec::new();
        let mut offset = 0;
        while !bytes.is_empty() {
            if bytes.len() < 4 {
                return Err(malformed(offset, "trailing bytes shorter than a header"));
            }
            let len = usize::from(u16::from_be_bytes([bytes[2], bytes[3]]));
            if len < MESSAGE_HEADER || len > bytes.len() {
                return Err(malformed(
                    offset + 2,
                    format!("message length {len} with {} bytes left", bytes.len()),
                ));
            }
            let msg = self.decode(&bytes[..len]).map_err(|e| shift(e, offset))?;
            out.push(msg);
            bytes = &bytes[len..];
            offset += len;
        }
        Ok(out)
    }

    /// One message, exactly (a UDP datagram).
    pub fn decode(&mut self, bytes: &[u8]) -> Result<Message, DecodeError> {
        if bytes.len() < MESSAGE_HEADER {
            return Err(malformed(
                0,
                format!("{} bytes: shorter than a header", bytes.len()),
            ));
        }
        let version = be16(bytes, 0);
        if version != VERSION {
            return Err(DecodeError::Version(version));
        }
        let len = usize::from(be16(bytes, 2));
        if len != bytes.len() {
            return Err(malformed(
                2,
                format!("length field {len}, message of {} bytes", bytes.len()),
            ));
        }
        let mut msg = Message {
            export_time: be32(bytes, 4),
            sequence: be32(bytes, 8),
            domain: be32(bytes, 12),
            templates: Vec::new(),
            flows: Vec::new(),
        };
        let mut at = MESSAGE_HEADER;
        while at < len {
            if len - at < SET_HEADER {
                return Err(malformed(at, "trailing bytes shorter than a set header"));
            }
            let set_id = be16(bytes, at);
            let set_len = usize::from(be16(bytes, at + 2));
            if set_len < SET_HEADER || at + set_len > len {
                return Err(malformed(
                    at + 2,
                    format!("set length {set_len} with {} bytes left", len - at),
                ));
            }
            let body = &bytes[at + SET_HEADER..at + set_len];
            let body_at = at + SET_HEADER;
            match set_id {
                SET_TEMPLATE => self.templates(msg.domain, body, body_at, &mut msg.templates)?,
                SET_OPTIONS_TEMPLATE => {} // nothing sluice needs
                256.. => self.data(msg.domain, set_id, body, body_at, &mut msg.flows)?,
                _ => return Err(malformed(at, format!("reserved set id {set_id}"))),
            }
            at += set_len;
        }
        Ok(msg)
    }

    fn templates(
        &mut self,
        domain: u32,
        body: &[u8],
        base: usize,
        ids: &mut Vec<u16>,
    ) -> Result<(), DecodeError> {
        let mut at = 0;
        // Fewer than 4 bytes left: padding.
        while body.len() - at >= 4 {
            let tid = be16(body, at);
            let count = be16(body, at + 2);
            at += 4;
            if tid < 256 {
                return Err(malformed(
                    base + at - 4,
                    format!("template id {tid} below 256"),
                ));
            }
            if count == 0 {
                // A template withdrawal (RFC 7011 section 8.1).
                self.templates.remove(&(domain, tid));
                continue;
            }
            let mut specs = Vec::with_capacity(usize::from(count));
            for _ in 0..count {
                if body.len() - at < 4 {
                    return Err(malformed(base + at, format!("template {tid} cut short")));
                }
                let raw = be16(body, at);
                let len = be16(body, at + 2);
                at += 4;
                let enterprise = raw & 0x8000 != 0;
                if enterprise {
                    if body.len() - at < 4 {
                        return Err(malformed(base + at, format!("template {tid} cut short")));
                    }
                    at += 4;
                }
                let spec = Spec {
                    id: raw & 0x7fff,
                    enterprise,
                    len,
                };
                check_spec(spec)
                    .map_err(|r| malformed(base + at - 4, format!("template {tid}: {r}")))?;
                specs.push(spec);
            }
            self.templates.insert((domain, tid), specs);
            ids.push(tid);
        }
        Ok(())
    }

    fn data(
        &self,
        domain: u32,
        tid: u16,
        body: &[u8],
        base: usize,
        flows: &mut Vec<Flow>,
    ) -> Result<(), DecodeError> {
        let specs = self
            .templates
            .get(&(domain, tid))
            .ok_or(DecodeError::UnknownTemplate {
                domain,
                template: tid,
            })?;
        let min: usize = specs
            .iter()
            .map(|s| {
                if s.len == VARIABLE {
                    1
                } else {
                    usize::from(s.len)
                }
            })
            .sum();
        let mut at = 0;
        // Fewer bytes left than the shortest record: padding.
        while body.len() - at >= min.max(1) {
            let mut rec = Partial::default();
            for s in specs {
                let len = if s.len == VARIABLE {
                    variable_len(body, &mut at)
                        .ok_or_else(|| malformed(base + at, "variable-length field cut short"))?
                } else {
                    usize::from(s.len)
                };
                if body.len() - at < len {
                    return Err(malformed(
                        base + at,
                        format!("record of template {tid} cut short"),
                    ));
                }
                if !s.enterprise {
                    rec.set(s.id, &body[at..at + len]);
                }
                at += len;
            }
            let flow = rec.finish().map_err(|reason| DecodeError::Record {
                template: tid,
                record: flows.len(),
                reason,
            })?;
            flows.push(flow);
        }
        Ok(())
    }
}

/// RFC 7011 section 7: one length byte, or 255 and two.
fn variable_len(body: &[u8], at: &mut usize) -> Option<usize> {
    let first = *body.get(*at)?;
    *at += 1;
    if first < 255 {
        return Some(usize::from(first));
    }
    let b = body.get(*at..*at + 2)?;
    *at += 2;
    Some(usize::from(u16::from_be_bytes([b[0], b[1]])))
}

/// Lengths the elements sluice reads may have.
fn check_spec(s: Spec) -> Result<(), String> {
    if s.enterprise {
        return Ok(());
    }
    let max = match s.id {
        id::SOURCE_IPV4_ADDRESS | id::DESTINATION_IPV4_ADDRESS => return exact(s, 4),
        id::SOURCE_IPV6_ADDRESS | id::DESTINATION_IPV6_ADDRESS => return exact(s, 16),
        id::PROTOCOL_IDENTIFIER | id::FLOW_END_REASON => 1,
        id::SOURCE_TRANSPORT_PORT
        | id::DESTINATION_TRANSPORT_PORT
        | id::ICMP_TYPE_CODE_IPV4
        | id::ICMP_TYPE_CODE_IPV6
        | id::TCP_CONTROL_BITS => 2,
        id::PACKET_DELTA_COUNT
        | id::PACKET_TOTAL_COUNT
        | id::OCTET_DELTA_COUNT
        | id::OCTET_TOTAL_COUNT => 8,
        id::FLOW_START_MILLISECONDS | id::FLOW_END_MILLISECONDS => return exact(s, 8),
        _ => return Ok(()),
    };
    if s.len == 0 || s.len > max {
        return Err(format!(
            "element {} with length {} (at most {max})",
            s.id, s.len
        ));
    }
    Ok(())
}

fn exact(s: Spec, len: u16) -> Result<(), String> {
    if s.len == len {
        Ok(())
    } else {
        Err(format!(
            "element {} with length {} (must be {len})",
            s.id, s.len
        ))
    }
}

/// The fields of one record as they are read.
#[derive(Default)]
struct Partial {
    src: Option<IpAddr>,
    dst: Option<IpAddr>,
    src_port: u16,
    dst_port: u16,
    protocol: u8,
    icmp_v4: u16,
    icmp_v6: u16,
    packets: u64,
    bytes: u64,
    first_ms: u64,
    last_ms: u64,
    tcp_flags: u16,
    end_reason: Option<u8>,
}

impl Partial {
    /// `value` has the length `check_spec` allowed for `ie`.
    fn set(&mut self, ie: u16, value: &[u8]) {
        let n = uint(value);
        match ie {
            id::SOURCE_IPV4_ADDRESS => self.src = Some(IpAddr::V4(Ipv4Addr::from(n as u32))),
            id::DESTINATION_IPV4_ADDRESS => self.dst = Some(IpAddr::V4(Ipv4Addr::from(n as u32))),
            id::SOURCE_IPV6_ADDRESS => self.src = Some(IpAddr::V6(v6(value))),
            id::DESTINATION_IPV6_ADDRESS => self.dst = Some(IpAddr::V6(v6(value))),
            id::SOURCE_TRANSPORT_PORT => self.src_port = n as u16,
            id::DESTINATION_TRANSPORT_PORT => self.dst_port = n as u16,
            id::PROTOCOL_IDENTIFIER => self.protocol = n as u8,
            id::ICMP_TYPE_CODE_IPV4 => self.icmp_v4 = n as u16,
            id::ICMP_TYPE_CODE_IPV6 => self.icmp_v6 = n as u16,
            id::PACKET_DELTA_COUNT | id::PACKET_TOTAL_COUNT => self.packets = n,
            id::OCTET_DELTA_COUNT | id::OCTET_TOTAL_COUNT => self.bytes = n,
            id::FLOW_START_MILLISECONDS => self.first_ms = n,
            id::FLOW_END_MILLISECONDS => self.last_ms = n,
            id::TCP_CONTROL_BITS => self.tcp_flags = n as u16,
            id::FLOW_END_REASON => self.end_reason = Some(n as u8),
            _ => {}
        }
    }

    fn finish(self) -> Result<Flow, String> {
        let (Some(src), Some(dst)) = (self.src, self.dst) else {
            return Err("no source or no destination address".into());
        };
        let ns = |ms: u64| {
            ms.checked_mul(1_000_000)
                .ok_or_else(|| format!("time {ms} ms is out of range"))
        };
        let code = self.end_reason.ok_or("no flowEndReason")?;
        let end_reason =
            EndReason::from_code(code).ok_or_else(|| format!("unknown flowEndReason {code}"))?;
        let mut flow = Flow {
            src,
            dst,
            src_port: self.src_port,
            dst_port: self.dst_port,
            protocol: self.protocol,
            icmp_type_code: None,
            packets: self.packets,
            bytes: self.bytes,
            first_ns: ns(self.first_ms)?,
            last_ns: ns(self.last_ms)?,
            // The flags sluice keeps are the low eight (RFC 9565 leaves the
            // upper ones for the data offset and reserved bits).
            tcp_flags: self.tcp_flags as u8,
            end_reason,
        };
        if flow.protocol == flow.icmp_protocol() {
            flow.icmp_type_code = Some(if flow.is_ipv6() {
                self.icmp_v6
            } else {
                self.icmp_v4
            });
        }
        flow.check().map_err(String::from)?;
        Ok(flow)
    }
}

fn uint(b: &[u8]) -> u64 {
    b.iter()
        .take(8)
        .fold(0, |acc, &x| (acc << 8) | u64::from(x))
}

fn v6(b: &[u8]) -> Ipv6Addr {
    let mut a = [0u8; 16];
    a.copy_from_slice(&b[..16]);
    Ipv6Addr::from(a)
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// An error of a message found `by` bytes into a stream.
fn shift(e: DecodeError, by: usize) -> DecodeError {
    match e {
        DecodeError::Malformed { offset, reason } => DecodeError::Malformed {
            offset: offset + by,
            reason,
        },
        other => other,
    }
}
