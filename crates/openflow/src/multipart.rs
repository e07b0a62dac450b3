//! MULTIPART_REQUEST and MULTIPART_REPLY bodies (after the 8 bytes of
//! type, flags and padding).

use crate::body::decode_buckets;
use crate::decode_error::DecodeError;
use crate::header::multipart_type as mp;
use crate::instruction::{decode_instructions, encode_instructions};
use crate::types::*;
use crate::wire::{Put, Reader};

fn no_body(r: &Reader, what: &str) -> Result<(), DecodeError> {
    if r.is_empty() {
        Ok(())
    } else {
        Err(DecodeError::bad_len(format!(
            "{what} request at byte {} has {} bytes of body, it takes none",
            r.pos(),
            r.remaining()
        )))
    }
}

/// A reader of the next entry of a reply whose entries start with a 16-bit
/// length (checked to be at least `min` and to fit).
fn entry<'a>(r: &mut Reader<'a>, min: usize, what: &str) -> Result<Reader<'a>, DecodeError> {
    let at = r.pos();
    let len = r
        .peek(2)
        .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])));
    match len {
        Some(len) if len >= min && len <= r.remaining() => {
            let mut e = r.sub(len, what, (error::BAD_REQUEST, error::BAD_REQUEST_BAD_LEN))?;
            e.skip(2, "length")?;
            Ok(e)
        }
        _ => Err(DecodeError::bad_len(format!(
            "{what} at byte {at} has length {len:?}, it needs at least {min} within the {} bytes left",
            r.remaining()
        ))),
    }
}

impl FlowStatsRequest {
    fn encode(&self, out: &mut Vec<u8>) {
        out.u8(self.table_id);
        out.zeros(3);
        out.u32(self.out_port);
        out.u32(self.out_group);
        out.zeros(4);
        out.u64(self.cookie);
        out.u64(self.cookie_mask);
        self.matcher.encode(out);
    }

    fn decode(r: &mut Reader) -> Result<Self, DecodeError> {
        let table_id = r.u8("table_id")?;
        r.skip(3, "pad")?;
        let out_port = r.u32("out_port")?;
        let out_group = r.u32("out_group")?;
        r.skip(4, "pad")?;
        let cookie = r.u64("cookie")?;
        let cookie_mask = r.u64("cookie_mask")?;
        let matcher = Match::decode(r)?;
        Ok(FlowStatsRequest {
            table_id,
            out_port,
            out_group,
            cookie,
            cookie_mask,
            matcher,
        })
    }
}

impl MultipartRequest {
    /// The `ofp_multipart_type` number.
    pub fn mp_type(&self) -> u16 {
        match self {
            MultipartRequest::Desc => mp::DESC,
            MultipartRequest::Flow(_) => mp::FLOW,
            MultipartRequest::Aggregate(_) => mp::AGGREGATE,
            MultipartRequest::Table => mp::TABLE,
            MultipartRequest::PortStats { .. } => mp::PORT_STATS,
            MultipartRequest::Group { .. } => mp::GROUP,
            MultipartRequest::GroupDesc => mp::GROUP_DESC,
            MultipartRequest::PortDesc => mp::PORT_DESC,
            MultipartRequest::TableFeatures(_) => mp::TABLE_FEATURES,
            MultipartRequest::GroupFeatures => mp::GROUP_FEATURES,
            MultipartRequest::QueueStats { .. } => mp::QUEUE,
            MultipartRequest::Other { mp_type, .. } => *mp_type,
        }
    }

    /// Appends the body (without type and flags).
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        match self {
            MultipartRequest::Flow(f) | MultipartRequest::Aggregate(f) => f.encode(out),
            MultipartRequest::PortStats { port_no: id }
            | MultipartRequest::Group { group_id: id } => {
                out.u32(*id);
                out.zeros(4);
            }
            MultipartRequest::TableFeatures(b) | MultipartRequest::Other { body: b, .. } => {
                out.extend_from_slice(b)
            }
            MultipartRequest::QueueStats { port_no, queue_id } => {
                out.u32(*port_no);
                out.u32(*queue_id);
            }
            MultipartRequest::Desc
            | MultipartRequest::Table
            | MultipartRequest::GroupDesc
            | MultipartRequest::GroupFeatures
            | MultipartRequest::PortDesc => {}
        }
    }

    pub(crate) fn decode(mp_type: u16, r: &mut Reader) -> Result<Self, DecodeError> {
        let req = match mp_type {
            mp::DESC => no_body(r, "desc").map(|_| MultipartRequest::Desc)?,
            mp::TABLE => no_body(r, "table").map(|_| MultipartRequest::Table)?,
            mp::GROUP_DESC => no_body(r, "group desc").map(|_| MultipartRequest::GroupDesc)?,
            mp::PORT_DESC => no_body(r, "port desc").map(|_| MultipartRequest::PortDesc)?,
            mp::FLOW => MultipartRequest::Flow(FlowStatsRequest::decode(r)?),
            mp::AGGREGATE => MultipartRequest::Aggregate(FlowStatsRequest::decode(r)?),
            mp::PORT_STATS | mp::GROUP => {
                let id = r.u32("port or group")?;
                r.skip(4, "pad")?;
                if mp_type == mp::GROUP {
                    MultipartRequest::Group { group_id: id }
                } else {
                    MultipartRequest::PortStats { port_no: id }
                }
            }
            mp::TABLE_FEATURES => MultipartRequest::TableFeatures(r.rest().to_vec()),
            mp::GROUP_FEATURES => {
                no_body(r, "group features").map(|_| MultipartRequest::GroupFeatures)?
            }
            mp::QUEUE => {
                let port_no = r.u32("queue stats port_no")?;
                let queue_id = r.u32("queue stats queue_id")?;
                no_body(r, "queue stats")?;
                MultipartRequest::QueueStats { port_no, queue_id }
            }
            _ => MultipartRequest::Other {
                mp_type,
                body: r.rest().to_vec(),
            },
        };
        if !r.is_empty() {
            return Err(DecodeError::bad_len(format!(
                "multipart request type {mp_type}: {} bytes left over at byte {}",
                r.remaining(),
                r.pos()
            )));
        }
        Ok(req)
    }
}

impl MultipartReply {
    /// The `ofp_multipart_type` number.
    pub fn mp_type(&self) -> u16 {
        match self {
            MultipartReply::Desc(_) => mp::DESC,
            MultipartReply::Flow(_) => mp::FLOW,
            MultipartReply::Aggregate { .. } => mp::AGGREGATE,
            MultipartReply::Table(_) => mp::TABLE,
            MultipartReply::PortStats(_) => mp::PORT_STATS,
            MultipartReply::Group(_) => mp::GROUP,
            MultipartReply::GroupDesc(_) => mp::GROUP_DESC,
            MultipartReply::PortDesc(_) => mp::PORT_DESC,
            MultipartReply::GroupFeatures(_) => mp::GROUP_FEATURES,
            MultipartReply::QueueStats(_) => mp::QUEUE,
        }
    }

    /// Appends the body (without type and flags).
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        match self {
            MultipartReply::Desc(d) => {
                out.string(&d.mfr_desc, 256);
                out.string(&d.hw_desc, 256);
                out.string(&d.sw_desc, 256);
                out.string(&d.serial_num, 32);
                out.string(&d.dp_desc, 256);
            }
            MultipartReply::Flow(v) => v.iter().for_each(|f| f.encode(out)),
            MultipartReply::Aggregate {
                packet_count,
                byte_count,
                flow_count,
            } => {
                out.u64(*packet_count);
                out.u64(*byte_count);
                out.u32(*flow_count);
                out.zeros(4);
            }
            MultipartReply::Table(v) => {
                for t in v {
                    out.u8(t.table_id);
                    out.zeros(3);
                    out.u32(t.active_count);
                    out.u64(t.lookup_count);
                    out.u64(t.matched_count);
                }
            }
            MultipartReply::PortStats(v) => v.iter().for_each(|p| p.encode(out)),
            MultipartReply::Group(v) => v.iter().for_each(|g| g.encode(out)),
            MultipartReply::GroupDesc(v) => {
                for g in v {
                    let start = out.len();
                    out.u16(0);
                    out.u8(g.group_type.number());
                    out.zeros(1);
                    out.u32(g.group_id);
                    g.buckets.iter().for_each(|b| b.encode(out));
                    let len = out.len() - start;
                    out.patch_u16(start, len);
                }
            }
            MultipartReply::PortDesc(v) => v.iter().for_each(|p| p.encode(out)),
            MultipartReply::GroupFeatures(g) => {
                out.u32(g.types);
                out.u32(g.capabilities);
                g.max_groups.iter().for_each(|&m| out.u32(m));
                g.actions.iter().for_each(|&a| out.u32(a));
            }
            MultipartReply::QueueStats(v) => {
                for q in v {
                    out.u32(q.port_no);
                    out.u32(q.queue_id);
                    out.u64(q.tx_bytes);
                    out.u64(q.tx_packets);
                    out.u64(q.tx_errors);
                    out.u32(q.duration_sec);
                    out.u32(q.duration_nsec);
                }
            }
        }
    }

    /// The reply of type `mp_type`, or `None` for a type not modelled.
    pub(crate) fn decode(mp_type: u16, r: &mut Reader) -> Result<Option<Self>, DecodeError> {
        let rep = match mp_type {
            mp::DESC => MultipartReply::Desc(Desc {
                mfr_desc: r.string(256, "mfr_desc")?,
                hw_desc: r.string(256, "hw_desc")?,
                sw_desc: r.string(256, "sw_desc")?,
                serial_num: r.string(32, "serial_num")?,
                dp_desc: r.string(256, "dp_desc")?,
            }),
            mp::FLOW => MultipartReply::Flow(many(r, FlowStats::decode)?),
            mp::AGGREGATE => {
                let rep = MultipartReply::Aggregate {
                    packet_count: r.u64("packet_count")?,
                    byte_count: r.u64("byte_count")?,
                    flow_count: r.u32("flow_count")?,
                };
                r.skip(4, "pad")?;
                rep
            }
            mp::TABLE => MultipartReply::Table(many(r, |r| {
                let table_id = r.u8("table_id")?;
                r.skip(3, "pad")?;
                Ok(TableStats {
                    table_id,
                    active_count: r.u32("active_count")?,
                    lookup_count: r.u64("lookup_count")?,
                    matched_count: r.u64("matched_count")?,
                })
            })?),
            mp::PORT_STATS => MultipartReply::PortStats(many(r, PortStats::decode)?),
            mp::GROUP => MultipartReply::Group(many(r, GroupStats::decode)?),
            mp::GROUP_DESC => MultipartReply::GroupDesc(many(r, |r| {
                let mut e = entry(r, 8, "group desc")?;
                let group_type = GroupType::decode(&mut e)?;
                e.skip(1, "pad")?;
                Ok(GroupDesc {
                    group_type,
                    group_id: e.u32("group_id")?,
                    buckets: decode_buckets(&mut e)?,
                })
            })?),
            mp::PORT_DESC => MultipartReply::PortDesc(many(r, Port::decode)?),
            mp::GROUP_FEATURES => {
                let mut g = GroupFeatures {
                    types: r.u32("group features types")?,
                    capabilities: r.u32("group features capabilities")?,
                    ..GroupFeatures::default()
                };
                for m in &mut g.max_groups {
                    *m = r.u32("group features max_groups")?;
                }
                for a in &mut g.actions {
                    *a = r.u32("group features actions")?;
                }
                MultipartReply::GroupFeatures(g)
            }
            mp::QUEUE => MultipartReply::QueueStats(many(r, |r| {
                Ok(QueueStats {
                    port_no: r.u32("queue port_no")?,
                    queue_id: r.u32("queue_id")?,
                    tx_bytes: r.u64("queue tx_bytes")?,
                    tx_packets: r.u64("queue tx_packets")?,
                    tx_errors: r.u64("queue tx_errors")?,
                    duration_sec: r.u32("queue duration_sec")?,
                    duration_nsec: r.u32("queue duration_nsec")?,
                })
            })?),
            _ => return Ok(None),
        };
        if !r.is_empty() {
            return Err(DecodeError::bad_len(format!(
                "multipart reply type {mp_type}: {} bytes left over at byte {}",
                r.remaining(),
                r.pos()
            )));
        }
        Ok(Some(rep))
    }
}

/// Entries read by `f` until `r` is used up.
fn many<T>(
    r: &mut Reader,
    f: impl Fn(&mut Reader) -> Result<T, DecodeError>,
) -> Result<Vec<T>, DecodeError> {
    let mut v = Vec::new();
    while !r.is_empty() {
        v.push(f(r)?);
    }
    Ok(v)
}

/// Bytes of `ofp_flow_stats` before its match.
const FLOW_STATS_LEN: usize = 48;

impl FlowStats {
    fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.u16(0);
        out.u8(self.table_id);
        out.zeros(1);
        out.u32(self.duration_sec);
        out.u32(self.duration_nsec);
        out.u16(self.priority);
        out.u16(self.idle_timeout);
        out.u16(self.hard_timeout);
        out.u16(self.flags);
        out.zeros(4);
        out.u64(self.cookie);
        out.u64(self.packet_count);
        out.u64(self.byte_count);
        self.matcher.encode(out);
        encode_instructions(&self.instructions, out);
        let len = out.len() - start;
        out.patch_u16(start, len);
    }

    fn decode(r: &mut Reader) -> Result<Self, DecodeError> {
        let mut e = entry(r, FLOW_STATS_LEN + 8, "flow stats")?;
        let table_id = e.u8("table_id")?;
        e.skip(1, "pad")?;
        let duration_sec = e.u32("duration_sec")?;
        let duration_nsec = e.u32("duration_nsec")?;
        let priority = e.u16("priority")?;
        let idle_timeout = e.u16("idle_timeout")?;
        let hard_timeout = e.u16("hard_timeout")?;
        let flags = e.u16("flags")?;
        e.skip(4, "pad")?;
        Ok(FlowStats {
            table_id,
            duration_sec,
            duration_nsec,
            priority,
            idle_timeout,
            hard_timeout,
            flags,
            cookie: e.u64("cookie")?,
            packet_count: e.u64("packet_count")?,
            byte_count: e.u64("byte_count")?,
            matcher: Match::decode(&mut e)?,
            instructions: decode_instructions(&mut e)?,
        })
    }
}

impl PortStats {
    fn encode(&self, out: &mut Vec<u8>) {
        out.u32(self.port_no);
        out.zeros(4);
        for v in self.counters() {
            out.u64(v);
        }
        out.u32(self.duration_sec);
        out.u32(self.duration_nsec);
    }

    fn counters(&self) -> [u64; 12] {
        [
            self.rx_packets,
            self.tx_packets,
            self.rx_bytes,
            self.tx_bytes,
            self.rx_dropped,
            self.tx_dropped,
            self.rx_errors,
            self.tx_errors,
            self.rx_frame_err,
            self.rx_over_err,
            self.rx_crc_err,
            self.collisions,
        ]
    }

    fn decode(r: &mut Reader) -> Result<Self, DecodeError> {
        let port_no = r.u32("port_no")?;
        r.skip(4, "pad")?;
        let mut c = [0u64; 12];
        for v in &mut c {
            *v = r.u64("port counter")?;
        }
        let [
            rx_packets,
            tx_packets,
            rx_bytes,
            tx_bytes,
            rx_dropped,
            tx_dropped,
            rx_errors,
            tx_errors,
            rx_frame_err,
            rx_over_err,
            rx_crc_err,
            collisions,
        ] = c;
        Ok(PortStats {
            port_no,
            rx_packets,
            tx_packets,
            rx_bytes,
            tx_bytes,
            rx_dropped,
            tx_dropped,
            rx_errors,
            tx_errors,
            rx_frame_err,
            rx_over_err,
            rx_crc_err,
            collisions,
            duration_sec: r.u32("duration_sec")?,
            duration_nsec: r.u32("duration_nsec")?,
        })
    }
}

/// Bytes of `ofp_group_stats` before its bucket counters.
const GROUP_STATS_LEN: usize = 40;

impl GroupStats {
    fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.u16(0);
        out.zeros(2);
        out.u32(self.group_id);
        out.u32(self.ref_count);
        out.zeros(4);
        out.u64(self.packet_count);
        out.u64(self.byte_count);
        out.u32(self.duration_sec);
        out.u32(self.duration_nsec);
        for (p, b) in &self.buckets {
            out.u64(*p);
            out.u64(*b);
        }
        let len = out.len() - start;
        out.patch_u16(start, len);
    }

    fn decode(r: &mut Reader) -> Result<Self, DecodeError> {
        let mut e = entry(r, GROUP_STATS_LEN, "group stats")?;
        e.skip(2, "pad")?;
        let group_id = e.u32("group_id")?;
        let ref_count = e.u32("ref_count")?;
        e.skip(4, "pad")?;
        let packet_count = e.u64("packet_count")?;
        let byte_count = e.u64("byte_count")?;
        let duration_sec = e.u32("duration_sec")?;
        let duration_nsec = e.u32("duration_nsec")?;
        if e.remaining() % 16 != 0 {
            return Err(DecodeError::bad_len(format!(
                "group stats at byte {}: {} bytes of bucket counters, not a multiple of 16",
                e.pos(),
                e.remaining()
            )));
        }
        let mut buckets = Vec::new();
        while !e.is_empty() {
            buckets.push((e.u64("bucket packet_count")?, e.u64("bucket byte_count")?));
        }
        Ok(GroupStats {
            group_id,
            ref_count,
            packet_count,
            byte_count,
            duration_sec,
            duration_nsec,
            buckets,
        })
    }
}
