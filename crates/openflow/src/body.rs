//! The bodies of the messages that carry more than a few numbers: flow,
//! group and port mods, packet-in/out, flow-removed, ports and features.

use crate::action::{decode_actions, encode_actions};
use crate::decode_error::DecodeError;
use crate::instruction::{decode_instructions, encode_instructions};
use crate::types::*;
use crate::wire::{Put, Reader};

/// Bytes of `ofp_port`.
pub const PORT_LEN: usize = 64;

impl Port {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.u32(self.port_no);
        out.zeros(4);
        out.extend_from_slice(&self.hw_addr);
        out.zeros(2);
        out.string(&self.name, 16);
        for v in [
            self.config,
            self.state,
            self.curr,
            self.advertised,
            self.supported,
            self.peer,
            self.curr_speed,
            self.max_speed,
        ] {
            out.u32(v);
        }
    }

    pub(crate) fn decode(r: &mut Reader) -> Result<Port, DecodeError> {
        let port_no = r.u32("port_no")?;
        r.skip(4, "pad")?;
        let hw_addr = r.array("hw_addr")?;
        r.skip(2, "pad")?;
        Ok(Port {
            port_no,
            hw_addr,
            name: r.string(16, "port name")?,
            config: r.u32("config")?,
            state: r.u32("state")?,
            curr: r.u32("curr")?,
            advertised: r.u32("advertised")?,
            supported: r.u32("supported")?,
            peer: r.u32("peer")?,
            curr_speed: r.u32("curr_speed")?,
            max_speed: r.u32("max_speed")?,
        })
    }
}

impl FlowModCommand {
    pub fn number(self) -> u8 {
        self as u8
    }

    pub fn from_number(n: u8) -> Option<Self> {
        use FlowModCommand::*;
        [Add, Modify, ModifyStrict, Delete, DeleteStrict]
            .get(usize::from(n))
            .copied()
    }
}

impl FlowMod {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.u64(self.cookie);
        out.u64(self.cookie_mask);
        out.u8(self.table_id);
        out.u8(self.command.number());
        out.u16(self.idle_timeout);
        out.u16(self.hard_timeout);
        out.u16(self.priority);
        out.u32(self.buffer_id);
        out.u32(self.out_port);
        out.u32(self.out_group);
        out.u16(self.flags);
        out.zeros(2);
        self.matcher.encode(out);
        encode_instructions(&self.instructions, out);
    }

    pub(crate) fn decode(r: &mut Reader) -> Result<FlowMod, DecodeError> {
        let cookie = r.u64("cookie")?;
        let cookie_mask = r.u64("cookie_mask")?;
        let table_id = r.u8("table_id")?;
        let cmd = r.u8("command")?;
        let command = FlowModCommand::from_number(cmd).ok_or_else(|| {
            DecodeError::new(
                error::FLOW_MOD_FAILED,
                error::FLOW_MOD_FAILED_BAD_COMMAND,
                format!("command {cmd} at byte {} is not one of 0..=4", r.pos() - 1),
            )
        })?;
        let idle_timeout = r.u16("idle_timeout")?;
        let hard_timeout = r.u16("hard_timeout")?;
        let priority = r.u16("priority")?;
        let buffer_id = r.u32("buffer_id")?;
        let out_port = r.u32("out_port")?;
        let out_group = r.u32("out_group")?;
        let flags = r.u16("flags")?;
        r.skip(2, "pad")?;
        let matcher = Match::decode(r)?;
        let instructions = decode_instructions(r)?;
        Ok(FlowMod {
            cookie,
            cookie_mask,
            table_id,
            command,
            idle_timeout,
            hard_timeout,
            priority,
            buffer_id,
            out_port,
            out_group,
            flags,
            matcher,
            instructions,
        })
    }
}

impl GroupType {
    pub fn number(self) -> u8 {
        self as u8
    }

    pub fn from_number(n: u8) -> Option<Self> {
        use GroupType::*;
        [All, Select, Indirect, FastFailover]
            .get(usize::from(n))
            .copied()
    }

    pub(crate) fn decode(r: &mut Reader) -> Result<Self, DecodeError> {
        let n = r.u8("group type")?;
        Self::from_number(n).ok_or_else(|| {
            DecodeError::new(
                error::GROUP_MOD_FAILED,
                error::GROUP_MOD_FAILED_BAD_TYPE,
                format!("group type {n} at byte {} is not one of 0..=3", r.pos() - 1),
            )
        })
    }
}

/// Bytes of `ofp_bucket` before its actions.
const BUCKET_LEN: usize = 16;

impl Bucket {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.u16(0);
        out.u16(self.weight);
        out.u32(self.watch_port);
        out.u32(self.watch_group);
        out.zeros(4);
        encode_actions(&self.actions, out);
        let len = out.len() - start;
        out.patch_u16(start, len);
    }

    pub(crate) fn decode(r: &mut Reader) -> Result<Bucket, DecodeError> {
        let at = r.pos();
        let len = usize::from(r.u16("bucket length")?);
        if len < BUCKET_LEN || len % 8 != 0 || len - 2 > r.remaining() {
            return Err(DecodeError::bad_len(format!(
                "bucket at byte {at} has length {len}: not a multiple of 8 of at least {BUCKET_LEN} within the {} bytes left",
                r.remaining() + 2
            )));
        }
        let mut b = r.sub(
            len - 2,
            "bucket",
            (error::BAD_REQUEST, error::BAD_REQUEST_BAD_LEN),
        )?;
        let weight = b.u16("weight")?;
        let watch_port = b.u32("watch_port")?;
        let watch_group = b.u32("watch_group")?;
        b.skip(4, "pad")?;
        Ok(Bucket {
            weight,
            watch_port,
            watch_group,
            actions: decode_actions(&mut b)?,
        })
    }
}

pub(crate) fn decode_buckets(r: &mut Reader) -> Result<Vec<Bucket>, DecodeError> {
    let mut v = Vec::new();
    while !r.is_empty() {
        v.push(Bucket::decode(r)?);
    }
    Ok(v)
}

impl GroupModCommand {
    pub fn number(self) -> u16 {
        self as u16
    }

    pub fn from_number(n: u16) -> Option<Self> {
        use GroupModCommand::*;
        [Add, Modify, Delete].get(usize::from(n)).copied()
    }
}

impl GroupMod {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.u16(self.command.number());
        out.u8(self.group_type.number());
        out.zeros(1);
        out.u32(self.group_id);
        for b in &self.buckets {
            b.encode(out);
        }
    }

    pub(crate) fn decode(r: &mut Reader) -> Result<GroupMod, DecodeError> {
        let cmd = r.u16("command")?;
        let command = GroupModCommand::from_number(cmd).ok_or_else(|| {
            DecodeError::new(
                error::GROUP_MOD_FAILED,
                error::GROUP_MOD_FAILED_BAD_COMMAND,
                format!("command {cmd} at byte {} is not one of 0..=2", r.pos() - 2),
            )
        })?;
        let group_type = GroupType::decode(r)?;
        r.skip(1, "pad")?;
        Ok(GroupMod {
            command,
            group_type,
            group_id: r.u32("group_id")?,
            buckets: decode_buckets(r)?,
        })
    }
}

impl PacketIn {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.u32(self.buffer_id);
        out.u16(self.total_len);
        out.u8(self.reason);
        out.u8(self.table_id);
        out.u64(self.cookie);
        self.matcher.encode(out);
        out.zeros(2);
        out.extend_from_slice(&self.data);
    }

    pub(crate) fn decode(r: &mut Reader) -> Result<PacketIn, DecodeError> {
        let buffer_id = r.u32("buffer_id")?;
        let total_len = r.u16("total_len")?;
        let reason = r.u8("reason")?;
        let table_id = r.u8("table_id")?;
        let cookie = r.u64("cookie")?;
        let matcher = Match::decode(r)?;
        r.skip(2, "pad")?;
        Ok(PacketIn {
            buffer_id,
            total_len,
            reason,
            table_id,
            cookie,
            matcher,
            data: r.rest().to_vec(),
        })
    }
}

impl PacketOut {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.u32(self.buffer_id);
        out.u32(self.in_port);
        let at = out.len();
        out.u16(0);
        out.zeros(6);
        let start = out.len();
        encode_actions(&self.actions, out);
        let len = out.len() - start;
        out.patch_u16(at, len);
        out.extend_from_slice(&self.data);
    }

    pub(crate) fn decode(r: &mut Reader) -> Result<PacketOut, DecodeError> {
        let buffer_id = r.u32("buffer_id")?;
        let in_port = r.u32("in_port")?;
        let actions_len = usize::from(r.u16("actions_len")?);
        r.skip(6, "pad")?;
        let mut a = r.sub(
            actions_len,
            "actions",
            (error::BAD_ACTION, error::BAD_ACTION_BAD_LEN),
        )?;
        Ok(PacketOut {
            buffer_id,
            in_port,
            actions: decode_actions(&mut a)?,
            data: r.rest().to_vec(),
        })
    }
}

impl FlowRemoved {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.u64(self.cookie);
        out.u16(self.priority);
        out.u8(self.reason);
        out.u8(self.table_id);
        out.u32(self.duration_sec);
        out.u32(self.duration_nsec);
        out.u16(self.idle_timeout);
        out.u16(self.hard_timeout);
        out.u64(self.packet_count);
        out.u64(self.byte_count);
        self.matcher.encode(out);
    }

    pub(crate) fn decode(r: &mut Reader) -> Result<FlowRemoved, DecodeError> {
        Ok(FlowRemoved {
            cookie: r.u64("cookie")?,
            priority: r.u16("priority")?,
            reason: r.u8("reason")?,
            table_id: r.u8("table_id")?,
            duration_sec: r.u32("duration_sec")?,
            duration_nsec: r.u32("duration_nsec")?,
            idle_timeout: r.u16("idle_timeout")?,
            hard_timeout: r.u16("hard_timeout")?,
            packet_count: r.u64("packet_count")?,
            byte_count: r.u64("byte_count")?,
            matcher: Match::decode(r)?,
        })
    }
}

impl PortMod {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.u32(self.port_no);
        out.zeros(4);
        out.extend_from_slice(&self.hw_addr);
        out.zeros(2);
        out.u32(self.config);
        out.u32(self.mask);
        out.u32(self.advertise);
        out.zeros(4);
    }

    pub(crate) fn decode(r: &mut Reader) -> Result<PortMod, DecodeError> {
        let port_no = r.u32("port_no")?;
        r.skip(4, "pad")?;
        let hw_addr = r.array("hw_addr")?;
        r.skip(2, "pad")?;
        let m = PortMod {
            port_no,
            hw_addr,
            config: r.u32("config")?,
            mask: r.u32("mask")?,
            advertise: r.u32("advertise")?,
        };
        r.skip(4, "pad")?;
        Ok(m)
    }
}

impl Features {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.u64(self.datapath_id);
        out.u32(self.n_buffers);
        out.u8(self.n_tables);
        out.u8(self.auxiliary_id);
        out.zeros(2);
        out.u32(self.capabilities);
        out.u32(0);
    }

    pub(crate) fn decode(r: &mut Reader) -> Result<Features, DecodeError> {
        let datapath_id = r.u64("datapath_id")?;
        let n_buffers = r.u32("n_buffers")?;
        let n_tables = r.u8("n_tables")?;
        let auxiliary_id = r.u8("auxiliary_id")?;
        r.skip(2, "pad")?;
        let capabilities = r.u32("capabilities")?;
        r.skip(4, "reserved")?;
        Ok(Features {
            datapath_id,
            n_buffers,
            n_tables,
            auxiliary_id,
            capabilities,
        })
    }
}
