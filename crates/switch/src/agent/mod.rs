//! The switch's side of an OpenFlow 1.3 connection, apart from sockets:
//! each message a controller sends gets its replies (or the error the
//! specification names) from [`Session::handle`]; nothing a peer sends
//! ends the connection except a failed HELLO.

mod multipart;
mod table_features;

use openflow::{
    DecodeError, Features, FlowModCommand, Message, NO_BUFFER, PacketOut, Role, capabilities,
    error, role,
};

use crate::OfError;
use crate::core::{Core, CoreOutput, N_BUFFERS, Transmit};
use crate::dpif::execute;
use crate::flow::extract;
use crate::ofproto::N_TABLES;

/// The state of one controller connection.
pub struct Session {
    /// HELLO exchanged with a common version.
    pub ready: bool,
    /// Set when the connection must close (a failed HELLO).
    pub closing: bool,
    pub role: u32,
    /// Packet-in, port-status and flow-removed masks, master then slave.
    pub async_masks: [u32; 6],
}

impl Default for Session {
    fn default() -> Session {
        Session {
            ready: false,
            closing: false,
            role: role::EQUAL,
            // The specification's defaults: a master or equal gets every
            // packet-in and port-status and flow-removed except
            // group-delete; a slave only port-status.
            async_masks: [0b111, 0, 0b111, 0b111, 0b1111, 0],
        }
    }
}

/// What the control loop must do besides sending the replies.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Effects {
    /// This session became master: other masters become slaves.
    pub became_master: bool,
}

/// Every flow entry's stats, in table order (what `dump-flows` shows).
pub fn dump_flows(core: &Core) -> Vec<openflow::FlowStats> {
    let all = openflow::FlowStatsRequest {
        table_id: openflow::TABLE_ALL,
        out_port: openflow::port::ANY,
        out_group: openflow::group::ANY,
        cookie: 0,
        cookie_mask: 0,
        matcher: openflow::Match::default(),
    };
    let now = core.now();
    core.shared
        .with(|of| multipart::flow_stats(of, &all, now))
        .unwrap_or_default()
}

/// The HELLO the switch opens with (version 1.3 only).
pub fn hello() -> Vec<u8> {
    Message::Hello {
        versions: Some(1 << openflow::VERSION),
    }
    .encode(0)
}

/// Generation ids of role requests, shared by the sessions.
#[derive(Default)]
pub struct RoleState {
    pub generation: Option<u64>,
}

impl Session {
    /// Answers one message (`frame`, a whole message); replies go to
    /// `replies`, encoded.
    pub fn handle(
        &mut self,
        core: &Core,
        roles: &mut RoleState,
        tx: &mut dyn Transmit,
        frame: &[u8],
        replies: &mut Vec<Vec<u8>>,
    ) -> Effects {
        let mut effects = Effects::default();
        let (header, msg) = match Message::decode(frame) {
            Ok(m) => m,
            Err(e) => {
                replies.push(Message::Error(e.reply(frame)).encode(xid_of(frame)));
                return effects;
            }
        };
        let xid = header.xid;
        if let Message::Hello { versions } = &msg {
            let ok = match versions {
                Some(bits) => bits & (1 << openflow::VERSION) != 0,
                None => header.version >= openflow::VERSION,
            };
            if ok {
                self.ready = true;
            } else {
                let e = OfError::new(
                    error::HELLO_FAILED,
                    error::HELLO_FAILED_INCOMPATIBLE,
                    format!(
                        "this switch speaks OpenFlow 1.3 only (peer offered version {})",
                        header.version
                    ),
                );
                replies.push(Message::Error(e.reply(frame)).encode(xid));
                self.closing = true;
            }
            return effects;
        }
        match self.message(core, roles, tx, msg, xid, replies, &mut effects) {
            Ok(()) => {}
            Err(e) => replies.push(Message::Error(e.reply(frame)).encode(xid)),
        }
        effects
    }

    #[allow(clippy::too_many_arguments)]
    fn message(
        &mut self,
        core: &Core,
        roles: &mut RoleState,
        tx: &mut dyn Transmit,
        msg: Message,
        xid: u32,
        replies: &mut Vec<Vec<u8>>,
        effects: &mut Effects,
    ) -> Result<(), OfError> {
        let mut reply = |m: Message| replies.push(m.encode(xid));
        let modifies = matches!(
            msg,
            Message::FlowMod(_)
                | Message::GroupMod(_)
                | Message::PortMod(_)
                | Message::TableMod { .. }
                | Message::PacketOut(_)
                | Message::SetConfig(_)
        );
        if modifies && self.role == role::SLAVE {
            return Err(OfError::new(
                error::BAD_REQUEST,
                error::BAD_REQUEST_IS_SLAVE,
                "a slave controller cannot change the switch",
            ));
        }
        match msg {
            Message::Hello { .. } => unreachable!("handled before"),
            Message::EchoRequest(d) => reply(Message::EchoReply(d)),
            Message::EchoReply(_) | Message::Error(_) => {}
            Message::FeaturesRequest => reply(Message::FeaturesReply(Features {
                datapath_id: core.datapath_id,
                n_buffers: N_BUFFERS,
                n_tables: N_TABLES,
                auxiliary_id: 0,
                capabilities: capabilities::FLOW_STATS
                    | capabilities::TABLE_STATS
                    | capabilities::PORT_STATS
                    | capabilities::GROUP_STATS,
            })),
            Message::GetConfigRequest => {
                reply(Message::GetConfigReply(core.shared.with(|of| of.config)))
            }
            Message::SetConfig(c) => {
                if c.flags & !0x7 != 0 {
                    return Err(OfError::new(
                        error::SWITCH_CONFIG_FAILED,
                        error::SWITCH_CONFIG_FAILED_BAD_FLAGS,
                        format!("config flags {:#x} are not defined", c.flags),
                    ));
                }
                core.shared.with(|of| {
                    of.config = c;
                    of.version += 1;
                });
            }
            Message::FlowMod(fm) => {
                fm.matcher.check_prerequisites()?;
                let now = core.now();
                let removed = core.shared.with(|of| of.flow_mod(&fm, now))?;
                core.flows_removed(&removed);
                let adds = !matches!(
                    fm.command,
                    FlowModCommand::Delete | FlowModCommand::DeleteStrict
                );
                if adds && fm.buffer_id != NO_BUFFER {
                    // The buffered packet goes through the tables as they
                    // are now.
                    let (in_port, data) = buffered(core, fm.buffer_id)?;
                    run_packet(core, tx, in_port, data, None);
                }
            }
            Message::GroupMod(gm) => {
                let now = core.now();
                let removed = core.shared.with(|of| of.group_mod(&gm, now))?;
                core.flows_removed(&removed);
            }
            Message::PortMod(pm) => {
                core.modify_port(pm.port_no, pm.hw_addr, pm.config, pm.mask)
                    .map_err(|hw| {
                        let (code, why) = if hw {
                            (
                                error::PORT_MOD_FAILED_BAD_HW_ADDR,
                                "the hardware address differs",
                            )
                        } else {
                            (error::PORT_MOD_FAILED_BAD_PORT, "no such port")
                        };
                        OfError::new(
                            error::PORT_MOD_FAILED,
                            code,
                            format!("port {}: {why}", pm.port_no),
                        )
                    })?;
            }
            // Table config is deprecated in 1.3: accepted, nothing to do.
            Message::TableMod { table_id, .. } if table_id < N_TABLES || table_id == 0xff => {}
            Message::TableMod { table_id, .. } => {
                return Err(OfError::new(
                    error::TABLE_MOD_FAILED,
                    error::TABLE_MOD_FAILED_BAD_TABLE,
                    format!("table {table_id} does not exist"),
                ));
            }
            Message::PacketOut(po) => packet_out(core, tx, po)?,
            Message::BarrierRequest => reply(Message::BarrierReply),
            Message::RoleRequest(r) => {
                let granted = self.role_request(roles, r)?;
                effects.became_master = granted.role == role::MASTER;
                reply(Message::RoleReply(granted));
            }
            Message::GetAsyncRequest => reply(Message::GetAsyncReply(self.async_masks)),
            Message::SetAsync(m) => self.async_masks = m,
            // A read of the table features (a body would set them).
            Message::MultipartRequest {
                body: openflow::MultipartRequest::TableFeatures(b),
                ..
            } if b.is_empty() => replies.extend(table_features::reply(xid)),
            Message::MultipartRequest { body, .. } => {
                for m in multipart::reply(core, body)? {
                    reply(m);
                }
            }
            Message::Experimenter { experimenter, .. } => {
                return Err(OfError::new(
                    error::BAD_REQUEST,
                    error::BAD_REQUEST_BAD_EXPERIMENTER,
                    format!("experimenter {experimenter:#x} messages are not supported"),
                ));
            }
            other => {
                return Err(OfError::new(
                    error::BAD_REQUEST,
                    error::BAD_REQUEST_BAD_TYPE,
                    format!(
                        "{} is not a request a switch takes",
                        openflow::type_name(other.msg_type())
                    ),
                ));
            }
        }
        Ok(())
    }

    fn role_request(&mut self, roles: &mut RoleState, r: Role) -> Result<Role, OfError> {
        match r.role {
            role::NOCHANGE => {}
            role::EQUAL => self.role = role::EQUAL,
            role::MASTER | role::SLAVE => {
                // A generation id older than the last one seen is stale
                // (compared as a wrapping difference, as the spec says).
                if let Some(g) = roles.generation
                    && (r.generation_id.wrapping_sub(g) as i64) < 0
                {
                    return Err(OfError::new(
                        error::ROLE_REQUEST_FAILED,
                        error::ROLE_REQUEST_FAILED_STALE,
                        format!("generation id {} is older than {g}", r.generation_id),
                    ));
                }
                roles.generation = Some(r.generation_id);
                self.role = r.role;
            }
            other => {
                return Err(OfError::new(
                    error::ROLE_REQUEST_FAILED,
                    error::ROLE_REQUEST_FAILED_BAD_ROLE,
                    format!("role {other} is not defined"),
                ));
            }
        }
        Ok(Role {
            role: self.role,
            generation_id: roles.generation.unwrap_or(0),
        })
    }

    /// Whether this session takes an asynchronous message (by its role's
    /// masks: bit `reason` of the packet-in, port-status or flow-removed
    /// mask).
    pub fn wants(&self, m: &Message) -> bool {
        if !self.ready {
            return false;
        }
        let base = if self.role == role::SLAVE { 1 } else { 0 };
        let (mask, reason) = match m {
            Message::PacketIn(p) => (self.async_masks[base], p.reason),
            Message::PortStatus(p) => (self.async_masks[2 + base], p.reason),
            Message::FlowRemoved(f) => (self.async_masks[4 + base], f.reason),
            _ => return true,
        };
        reason < 32 && mask & (1 << reason) != 0
    }
}

fn xid_of(frame: &[u8]) -> u32 {
    frame
        .get(4..8)
        .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

fn buffered(core: &Core, id: u32) -> Result<(u32, Vec<u8>), OfError> {
    core.take_buffer(id).ok_or_else(|| {
        OfError::new(
            error::BAD_REQUEST,
            error::BAD_REQUEST_BUFFER_UNKNOWN,
            format!("no packet is buffered as {id}"),
        )
    })
}

fn packet_out(core: &Core, tx: &mut dyn Transmit, po: PacketOut) -> Result<(), OfError> {
    core.shared
        .with(|of| crate::ofproto::validate_actions(of, &po.actions, true))?;
    let in_port = po.in_port;
    if in_port != openflow::port::CONTROLLER
        && in_port != openflow::port::ANY
        && in_port != openflow::port::LOCAL
        && (in_port == 0 || in_port >= openflow::port::MAX)
    {
        return Err(DecodeError::new(
            error::BAD_REQUEST,
            error::BAD_REQUEST_BAD_PORT,
            format!("packet-out from in_port {in_port:#x}"),
        ));
    }
    let data = if po.buffer_id != NO_BUFFER {
        buffered(core, po.buffer_id)?.1
    } else {
        po.data
    };
    run_packet(core, tx, in_port, data, Some(&po.actions));
    Ok(())
}

/// Runs a packet from the controller through `actions` (or the tables)
/// with no cache.
fn run_packet(
    core: &Core,
    tx: &mut dyn Transmit,
    in_port: u32,
    data: Vec<u8>,
    actions: Option<&[openflow::Action]>,
) {
    let (key, layout) = extract(&data, in_port);
    let now = core.now();
    let t = core.shared.with(|of| {
        let t = of.translate_actions(&key, actions);
        of.learn(&t.learned, now);
        t
    });
    let mut frame = data;
    let ports = core.port_table();
    let mut out = CoreOutput {
        core,
        ports: &ports,
        tx,
    };
    execute(&mut frame, layout, in_port, &t.actions, &mut out);
}
