//! Multipart (statistics) replies: desc, flow, aggregate, table, port,
//! port desc, group, group desc, group features and queues (each port's
//! default queue 0). Replies too long for one message are
//! split, every part but the last flagged `OFPMPF_REPLY_MORE`.

use openflow::{
    Desc, FlowStats, FlowStatsRequest, GroupDesc, GroupFeatures, GroupStats, MULTIPART_MORE,
    Message, MultipartReply, MultipartRequest, QueueStats, TableStats, action_type, error, port,
};

use crate::OfError;
use crate::core::{Core, ovs_duration};
use crate::flow::key_match;
use crate::ofproto::{N_TABLES, Ofproto, Selector};

/// Entries per reply part (each part must stay under 64 KiB).
const PER_PART: usize = 64;

pub fn reply(core: &Core, req: MultipartRequest) -> Result<Vec<Message>, OfError> {
    let one = |body| Ok(vec![Message::MultipartReply { flags: 0, body }]);
    match req {
        MultipartRequest::Desc => one(MultipartReply::Desc(Desc {
            mfr_desc: "sluice".into(),
            hw_desc: "sluice userspace switch".into(),
            sw_desc: env!("CARGO_PKG_VERSION").into(),
            serial_num: "None".into(),
            dp_desc: "sluice OpenFlow 1.3 switch with megaflow caches".into(),
        })),
        MultipartRequest::Flow(r) => {
            let now = core.now();
            let flows = core.shared.with(|of| flow_stats(of, &r, now))?;
            Ok(parts(flows, MultipartReply::Flow))
        }
        MultipartRequest::Aggregate(r) => {
            let now = core.now();
            let flows = core.shared.with(|of| flow_stats(of, &r, now))?;
            one(MultipartReply::Aggregate {
                packet_count: flows.iter().map(|f| f.packet_count).sum(),
                byte_count: flows.iter().map(|f| f.byte_count).sum(),
                flow_count: flows.len() as u32,
            })
        }
        MultipartRequest::Table => {
            let tables = core.shared.with(|of| {
                of.tables
                    .iter()
                    .enumerate()
                    .map(|(i, t)| TableStats {
                        table_id: i as u8,
                        active_count: t.len() as u32,
                        lookup_count: t.lookups,
                        matched_count: t.matched,
                    })
                    .collect()
            });
            Ok(parts(tables, MultipartReply::Table))
        }
        MultipartRequest::PortStats { port_no } => {
            let stats = core.port_stats(port_no);
            if stats.is_empty() && port_no != openflow::port::ANY {
                return Err(OfError::new(
                    error::BAD_REQUEST,
                    error::BAD_REQUEST_BAD_PORT,
                    format!("no port {port_no}"),
                ));
            }
            Ok(parts(stats, MultipartReply::PortStats))
        }
        MultipartRequest::PortDesc => Ok(parts(core.ports(), MultipartReply::PortDesc)),
        MultipartRequest::Group { group_id } => {
            let now = core.now();
            let groups = core.shared.with(|of| {
                let refs = of.group_refs();
                of.groups
                    .iter()
                    .filter(|(id, _)| group_id == openflow::group::ALL || **id == group_id)
                    .map(|(id, g)| {
                        let (duration_sec, duration_nsec) =
                            ovs_duration(now.saturating_sub(g.installed_ns));
                        GroupStats {
                            group_id: *id,
                            ref_count: refs.get(id).copied().unwrap_or(0),
                            packet_count: g.packets,
                            byte_count: g.bytes,
                            duration_sec,
                            duration_nsec,
                            buckets: g.bucket_counts.clone(),
                        }
                    })
                    .collect()
            });
            Ok(parts(groups, MultipartReply::Group))
        }
        MultipartRequest::GroupDesc => {
            let groups = core.shared.with(|of| {
                of.groups
                    .iter()
                    .map(|(id, g)| GroupDesc {
                        group_type: g.group_type,
                        group_id: *id,
                        buckets: g.buckets.clone(),
                    })
                    .collect()
            });
            Ok(parts(groups, MultipartReply::GroupDesc))
        }
        MultipartRequest::GroupFeatures => one(MultipartReply::GroupFeatures(group_features())),
        MultipartRequest::QueueStats { port_no, queue_id } => {
            // Every port has one queue, 0 (OVS's default queue), which all
            // its frames leave through: its counters are the port's.
            let stats = core.port_stats(port_no);
            if stats.is_empty() && port_no != port::ANY {
                return Err(OfError::new(
                    error::QUEUE_OP_FAILED,
                    error::QUEUE_OP_FAILED_BAD_PORT,
                    format!("port {port_no} does not exist"),
                ));
            }
            if queue_id != 0 && queue_id != u32::MAX {
                return Err(OfError::new(
                    error::QUEUE_OP_FAILED,
                    error::QUEUE_OP_FAILED_BAD_QUEUE,
                    format!("queue {queue_id} does not exist (each port has queue 0 only)"),
                ));
            }
            let queues = stats
                .into_iter()
                .map(|p| QueueStats {
                    port_no: p.port_no,
                    queue_id: 0,
                    tx_bytes: p.tx_bytes,
                    tx_packets: p.tx_packets,
                    tx_errors: p.tx_errors,
                    duration_sec: p.duration_sec,
                    duration_nsec: p.duration_nsec,
                })
                .collect();
            Ok(parts(queues, MultipartReply::QueueStats))
        }
        MultipartRequest::TableFeatures(_) => Err(OfError::new(
            error::TABLE_FEATURES_FAILED,
            error::TABLE_FEATURES_FAILED_EPERM,
            "table features cannot be read or changed on this switch",
        )),
        MultipartRequest::Other { mp_type, .. } => Err(OfError::new(
            error::BAD_REQUEST,
            error::BAD_REQUEST_BAD_MULTIPART,
            format!("multipart type {mp_type} is not supported"),
        )),
    }
}

/// Splits `items` into reply parts.
fn parts<T: Clone>(items: Vec<T>, body: impl Fn(Vec<T>) -> MultipartReply) -> Vec<Message> {
    if items.is_empty() {
        return vec![Message::MultipartReply {
            flags: 0,
            body: body(Vec::new()),
        }];
    }
    let chunks: Vec<Vec<T>> = items.chunks(PER_PART).map(|c| c.to_vec()).collect();
    let n = chunks.len();
    chunks
        .into_iter()
        .enumerate()
        .map(|(i, c)| Message::MultipartReply {
            flags: if i + 1 < n { MULTIPART_MORE } else { 0 },
            body: body(c),
        })
        .collect()
}

pub(crate) fn flow_stats(
    of: &Ofproto,
    r: &FlowStatsRequest,
    now: u64,
) -> Result<Vec<FlowStats>, OfError> {
    if r.table_id != openflow::TABLE_ALL && r.table_id >= N_TABLES {
        return Err(OfError::new(
            error::BAD_REQUEST,
            error::BAD_REQUEST_BAD_TABLE_ID,
            format!("table {} does not exist", r.table_id),
        ));
    }
    let sel = Selector {
        key_match: key_match(&r.matcher)?,
        strict: None,
        cookie: r.cookie,
        cookie_mask: r.cookie_mask,
        out_port: r.out_port,
        out_group: r.out_group,
    };
    let mut out = Vec::new();
    for t in of.table_ids(r.table_id) {
        for e in of.tables[usize::from(t)].select(&sel) {
            let (duration_sec, duration_nsec) = ovs_duration(now.saturating_sub(e.installed_ns));
            out.push(FlowStats {
                table_id: t,
                duration_sec,
                duration_nsec,
                priority: e.priority,
                idle_timeout: e.idle_timeout,
                hard_timeout: e.hard_timeout,
                flags: e.flags,
                cookie: e.cookie,
                packet_count: e.packets,
                byte_count: e.bytes,
                matcher: e.matcher.clone(),
                instructions: e.instructions.clone(),
            });
        }
    }
    Ok(out)
}

/// What this switch's groups can do: all four types; select buckets by
/// weight (no liveness: every port is live; no chaining: a bucket may not
/// output to a group); as many groups as OpenFlow numbers; in a bucket the
/// actions `validate` takes.
fn group_features() -> GroupFeatures {
    let bit = |t: u16| 1u32 << t;
    let actions = [
        action_type::OUTPUT,
        action_type::PUSH_VLAN,
        action_type::POP_VLAN,
        action_type::SET_QUEUE,
        action_type::SET_NW_TTL,
        action_type::DEC_NW_TTL,
        action_type::SET_FIELD,
    ]
    .into_iter()
    .map(bit)
    .fold(0, |a, b| a | b);
    GroupFeatures {
        types: 0b1111,
        capabilities: 1,
        max_groups: [openflow::group::MAX; 4],
        actions: [actions; 4],
    }
}
