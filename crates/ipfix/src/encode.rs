//! IPFIX messages (RFC 7011 section 3): flow records packed into messages no
//! longer than a maximum size, templates where the refresh rules want them,
//! sequence numbers counting data records.

use std::net::IpAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::Error;
use crate::flow::Flow;
use crate::ie::{
    IPV4_RECORD, IPV6_RECORD, MESSAGE_HEADER, SET_HEADER, TEMPLATE_IPV4, TEMPLATE_IPV6,
    TEMPLATE_SET_LEN, VERSION, template_set,
};

/// The largest IPFIX message (its length field is 16 bits).
pub const MAX_MESSAGE: usize = 65535;
/// The smallest maximum message size: a header, both templates and one IPv6
/// record.
pub const MIN_MESSAGE: usize = MESSAGE_HEADER + TEMPLATE_SET_LEN + pad4(SET_HEADER + IPV6_RECORD);

/// When templates go out (RFC 7011 section 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refresh {
    /// In the first message only: reliable transports (TCP) and files.
    Once,
    /// In the first message, then again in the first message after `messages`
    /// messages or `interval` since they last went, whichever comes first:
    /// UDP, where a collector may start late or lose the message.
    Periodic { messages: u32, interval: Duration },
}

/// Turns batches of flows into IPFIX messages for one observation domain of
/// one transport session.
#[derive(Debug)]
pub struct Encoder {
    domain: u32,
    max_message: usize,
    refresh: Refresh,
    /// Data records sent so far (mod 2^32): the next message's sequence number.
    sequence: u32,
    /// When templates last went, and messages since (that one included).
    templates_at: Option<SystemTime>,
    messages_since_templates: u32,
}

impl Encoder {
    /// An encoder for `domain` whose messages are at most `max_message` bytes
    /// (for UDP: the path MTU less the IP and UDP headers).
    pub fn new(domain: u32, max_message: usize, refresh: Refresh) -> Result<Encoder, Error> {
        if !(MIN_MESSAGE..=MAX_MESSAGE).contains(&max_message) {
            return Err(Error::MessageSize {
                size: max_message,
                min: MIN_MESSAGE,
                max: MAX_MESSAGE,
            });
        }
        Ok(Encoder {
            domain,
            max_message,
            refresh,
            sequence: 0,
            templates_at: None,
            messages_since_templates: 0,
        })
    }

    /// The sequence number the next message will carry.
    pub fn sequence(&self) -> u32 {
        self.sequence
    }

    /// The messages carrying `flows`, stamped `now` (export time, and the
    /// clock of the template refresh). Several records share a set; a
    /// message holds as many as fit. Nothing is encoded (and the state is
    /// unchanged) if a record is invalid. No flows, no messages.
    pub fn encode(&mut self, flows: &[Flow], now: SystemTime) -> Result<Vec<Vec<u8>>, Error> {
        for (index, flow) in flows.iter().enumerate() {
            flow.check()
                .map_err(|reason| Error::InvalidFlow { index, reason })?;
        }
        let export_time = now
            .duration_since(UNIX_EPOCH)
            .ok()
            .and_then(|d| u32::try_from(d.as_secs()).ok())
            .ok_or(Error::Time(now))?;
        let mut out = Vec::new();
        let mut rest = flows;
        while !rest.is_empty() {
            let mut msg = Message::new(export_time, self.sequence, self.domain);
            if self.templates_due(now) {
                msg.buf.extend_from_slice(&template_set());
                self.templates_at = Some(now);
                self.messages_since_templates = 0;
            }
            let mut n = 0;
            while let Some(flow) = rest.first() {
                if !msg.push(flow, self.max_message) {
                    break;
                }
                rest = &rest[1..];
                n += 1;
            }
            // MIN_MESSAGE guarantees one record fits beside the templates.
            debug_assert!(n > 0);
            out.push(msg.finish());
            self.sequence = self.sequence.wrapping_add(n);
            self.messages_since_templates = self.messages_since_templates.saturating_add(1);
        }
        Ok(out)
    }

    fn templates_due(&self, now: SystemTime) -> bool {
        let Some(at) = self.templates_at else {
            return true;
        };
        match self.refresh {
            Refresh::Once => false,
            Refresh::Periodic { messages, interval } => {
                self.messages_since_templates >= messages
                    // A clock that went back counts as due.
                    || now.duration_since(at).map_or(true, |d| d >= interval)
            }
        }
    }
}

/// One message being filled.
struct Message {
    buf: Vec<u8>,
    /// Start and template of the data set being filled.
    open: Option<(usize, u16)>,
}

impl Message {
    fn new(export_time: u32, sequence: u32, domain: u32) -> Message {
        let mut buf = Vec::with_capacity(1500);
        buf.extend_from_slice(&VERSION.to_be_bytes());
        buf.extend_from_slice(&[0, 0]); // length, at the end
        buf.extend_from_slice(&export_time.to_be_bytes());
        buf.extend_from_slice(&sequence.to_be_bytes());
        buf.extend_from_slice(&domain.to_be_bytes());
        Message { buf, open: None }
    }

    /// Adds `flow` if the message stays within `max` bytes (with the padding
    /// its set will need).
    fn push(&mut self, flow: &Flow, max: usize) -> bool {
        let (template, len) = if flow.is_ipv6() {
            (TEMPLATE_IPV6, IPV6_RECORD)
        } else {
            (TEMPLATE_IPV4, IPV4_RECORD)
        };
        let same_set = matches!(self.open, Some((_, t)) if t == template);
        let total = if same_set {
            pad4(self.buf.len() + len)
        } else {
            pad4(self.buf.len()) + pad4(SET_HEADER + len)
        };
        if total > max {
            return false;
        }
        if !same_set {
            self.close_set();
            self.open = Some((self.buf.len(), template));
            self.buf.extend_from_slice(&template.to_be_bytes());
            self.buf.extend_from_slice(&[0, 0]);
        }
        write_record(&mut self.buf, flow);
        true
    }

    /// Pads the open data set to four bytes (RFC 7011 section 3.3.1: zero
    /// octets, fewer than a record) and writes its length.
    fn close_set(&mut self) {
        if let Some((start, _)) = self.open.take() {
            self.buf.resize(pad4(self.buf.len()), 0);
            let len = (self.buf.len() - start) as u16;
            self.buf[start + 2..start + 4].copy_from_slice(&len.to_be_bytes());
        }
    }

    fn finish(mut self) -> Vec<u8> {
        self.close_set();
        let len = self.buf.len() as u16;
        self.buf[2..4].copy_from_slice(&len.to_be_bytes());
        self.buf
    }
}

/// One data record, in the order of `IPV4_FIELDS` / `IPV6_FIELDS`.
fn write_record(out: &mut Vec<u8>, flow: &Flow) {
    match (flow.src, flow.dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            out.extend_from_slice(&s.octets());
            out.extend_from_slice(&d.octets());
        }
        (s, d) => {
            out.extend_from_slice(&v6(s).octets());
            out.extend_from_slice(&v6(d).octets());
        }
    }
    out.extend_from_slice(&flow.src_port.to_be_bytes());
    out.extend_from_slice(&flow.dst_port.to_be_bytes());
    out.push(flow.protocol);
    out.extend_from_slice(&flow.icmp_type_code.unwrap_or(0).to_be_bytes());
    out.extend_from_slice(&flow.packets.to_be_bytes());
    out.extend_from_slice(&flow.bytes.to_be_bytes());
    out.extend_from_slice(&(flow.first_ns / 1_000_000).to_be_bytes());
    out.extend_from_slice(&(flow.last_ns / 1_000_000).to_be_bytes());
    out.extend_from_slice(&u16::from(flow.tcp_flags).to_be_bytes());
    out.push(flow.end_reason.code());
}

fn v6(a: IpAddr) -> std::net::Ipv6Addr {
    match a {
        IpAddr::V6(a) => a,
        // `Flow::check` keeps families apart; mapped form keeps this total.
        IpAddr::V4(a) => a.to_ipv6_mapped(),
    }
}

pub(crate) const fn pad4(n: usize) -> usize {
    (n + 3) & !3
}
