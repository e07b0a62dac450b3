//! Random messages of every kind: encoding then decoding gives the same
//! message, and cutting the bytes short never panics.

use openflow::*;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::{select, subsequence};

fn oxm_of(field: Field, masked: bool) -> BoxedStrategy<Oxm> {
    let full = field.full_mask();
    (any::<u128>(), any::<u128>())
        .prop_map(move |(v, m)| {
            if masked && field.maskable() {
                let m = m & full;
                Oxm::masked(field, v & m, m)
            } else {
                Oxm::exact(field, v & full)
            }
        })
        .boxed()
}

fn a_match() -> impl Strategy<Value = Match> {
    subsequence(Field::ALL.to_vec(), 0..8)
        .prop_flat_map(|fields| {
            fields
                .into_iter()
                .map(|f| any::<bool>().prop_flat_map(move |m| oxm_of(f, m)))
                .collect::<Vec<_>>()
        })
        .prop_map(|fields| Match { fields })
}

/// Data of an experimenter action or instruction: a multiple of 8 bytes,
/// as its padded length leaves it.
fn exp_data() -> impl Strategy<Value = Vec<u8>> {
    vec(any::<[u8; 8]>(), 0..3).prop_map(|v| v.concat())
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        (any::<u32>(), any::<u16>()).prop_map(|(port, max_len)| Action::Output { port, max_len }),
        Just(Action::CopyTtlOut),
        Just(Action::CopyTtlIn),
        any::<u8>().prop_map(Action::SetMplsTtl),
        Just(Action::DecMplsTtl),
        any::<u16>().prop_map(Action::PushVlan),
        Just(Action::PopVlan),
        any::<u16>().prop_map(Action::PushMpls),
        any::<u16>().prop_map(Action::PopMpls),
        any::<u32>().prop_map(Action::SetQueue),
        any::<u32>().prop_map(Action::Group),
        any::<u8>().prop_map(Action::SetNwTtl),
        Just(Action::DecNwTtl),
        select(Field::ALL.to_vec())
            .prop_flat_map(|f| oxm_of(f, false))
            .prop_map(Action::SetField),
        any::<u16>().prop_map(Action::PushPbb),
        Just(Action::PopPbb),
        (
            any::<u32>().prop_filter("not Nicira's", |e| *e != NX_VENDOR_ID),
            exp_data()
        )
            .prop_map(|(experimenter, data)| Action::Experimenter { experimenter, data }),
        nx_action().prop_map(Action::Nx),
    ]
}

/// A register's bits `ofs..ofs + n_bits`.
fn reg_bits() -> impl Strategy<Value = SubField> {
    (0u8..16, 1u16..=32).prop_flat_map(|(r, n_bits)| {
        (0..=32 - n_bits).prop_map(move |ofs| SubField {
            header: oxm_header(Field::reg(r).unwrap()),
            ofs,
            n_bits,
        })
    })
}

/// Nicira actions as the wire carries them (ports of 16 bits, notes
/// padded to 8-byte actions).
fn nx_action() -> impl Strategy<Value = NxAction> {
    let port = prop_oneof![0u32..0xff00, Just(port::IN_PORT), Just(port::LOCAL)];
    prop_oneof![
        (port, prop::option::of(0u8..255))
            .prop_map(|(in_port, table)| NxAction::Resubmit { in_port, table }),
        (reg_bits(), any::<u64>()).prop_map(|(dst, v)| NxAction::RegLoad {
            value: if dst.n_bits >= 64 {
                v
            } else {
                v & ((1 << dst.n_bits) - 1)
            },
            dst,
        }),
        (reg_bits(), 0u8..16).prop_map(|(src, r)| NxAction::RegMove {
            dst: SubField {
                header: oxm_header(Field::reg(r).unwrap()),
                ofs: 32 - src.n_bits,
                n_bits: src.n_bits,
            },
            src,
        }),
        (0usize..3).prop_map(|units| NxAction::Note(vec![7; 6 + 8 * units])),
        (any::<(u16, u16, u64, u8)>(), reg_bits()).prop_map(
            |((idle, prio, cookie, table), dst)| {
                NxAction::Learn(Box::new(Learn {
                    idle_timeout: idle,
                    priority: prio,
                    cookie,
                    table_id: table % 255,
                    specs: vec![
                        LearnSpec::Match {
                            dst,
                            src: LearnSrc::Field(dst),
                        },
                        LearnSpec::Load {
                            dst,
                            src: LearnSrc::Value(1),
                        },
                        LearnSpec::Output { src: dst },
                    ],
                    ..Learn::default()
                }))
            }
        ),
    ]
}

fn actions() -> impl Strategy<Value = Vec<Action>> {
    vec(action(), 0..5)
}

fn instruction() -> impl Strategy<Value = Instruction> {
    prop_oneof![
        any::<u8>().prop_map(Instruction::GotoTable),
        (any::<u64>(), any::<u64>())
            .prop_map(|(metadata, mask)| Instruction::WriteMetadata { metadata, mask }),
        actions().prop_map(Instruction::WriteActions),
        actions().prop_map(Instruction::ApplyActions),
        Just(Instruction::ClearActions),
        any::<u32>().prop_map(Instruction::Meter),
        (any::<u32>(), exp_data())
            .prop_map(|(experimenter, data)| Instruction::Experimenter { experimenter, data }),
    ]
}

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 0..max)
}

fn name(max: usize) -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!("[a-zA-Z0-9 ._é-]{{0,{max}}}"))
        .expect("regex")
        .prop_map(move |s| {
            // At most `max` bytes, cut at a character boundary.
            let mut end = s.len().min(max);
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            s[..end].to_string()
        })
}

fn port_desc() -> impl Strategy<Value = Port> {
    (any::<u32>(), any::<[u8; 6]>(), name(15), any::<[u32; 8]>()).prop_map(
        |(port_no, hw_addr, name, c)| Port {
            port_no,
            hw_addr,
            name,
            config: c[0],
            state: c[1],
            curr: c[2],
            advertised: c[3],
            supported: c[4],
            peer: c[5],
            curr_speed: c[6],
            max_speed: c[7],
        },
    )
}

fn command() -> impl Strategy<Value = FlowModCommand> {
    select(
        (0..5)
            .filter_map(FlowModCommand::from_number)
            .collect::<Vec<_>>(),
    )
}

fn group_type() -> impl Strategy<Value = GroupType> {
    select(
        (0..4)
            .filter_map(GroupType::from_number)
            .collect::<Vec<_>>(),
    )
}

fn bucket() -> impl Strategy<Value = Bucket> {
    (any::<u16>(), any::<u32>(), any::<u32>(), actions()).prop_map(
        |(weight, watch_port, watch_group, actions)| Bucket {
            weight,
            watch_port,
            watch_group,
            actions,
        },
    )
}

fn flow_mod() -> impl Strategy<Value = FlowMod> {
    (
        any::<(u64, u64, u8, u16, u16, u16)>(),
        command(),
        any::<(u32, u32, u32, u16)>(),
        a_match(),
        vec(instruction(), 0..4),
    )
        .prop_map(
            |(
                (cookie, cookie_mask, table_id, idle_timeout, hard_timeout, priority),
                command,
                (buffer_id, out_port, out_group, flags),
                matcher,
                instructions,
            )| FlowMod {
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
            },
        )
}

fn flow_stats_request() -> impl Strategy<Value = FlowStatsRequest> {
    (any::<(u8, u32, u32, u64, u64)>(), a_match()).prop_map(
        |((table_id, out_port, out_group, cookie, cookie_mask), matcher)| FlowStatsRequest {
            table_id,
            out_port,
            out_group,
            cookie,
            cookie_mask,
            matcher,
        },
    )
}

fn multipart_request() -> impl Strategy<Value = MultipartRequest> {
    prop_oneof![
        Just(MultipartRequest::Desc),
        flow_stats_request().prop_map(MultipartRequest::Flow),
        flow_stats_request().prop_map(MultipartRequest::Aggregate),
        Just(MultipartRequest::Table),
        any::<u32>().prop_map(|port_no| MultipartRequest::PortStats { port_no }),
        any::<u32>().prop_map(|group_id| MultipartRequest::Group { group_id }),
        Just(MultipartRequest::GroupDesc),
        Just(MultipartRequest::PortDesc),
        bytes(64).prop_map(MultipartRequest::TableFeatures),
        Just(MultipartRequest::GroupFeatures),
        any::<(u32, u32)>()
            .prop_map(|(port_no, queue_id)| MultipartRequest::QueueStats { port_no, queue_id }),
        (
            // Types not modelled (meters, experimenter, ...).
            select(vec![9u16, 10, 11, 14, 0x1234, 0xffff]),
            bytes(32)
        )
            .prop_map(|(mp_type, body)| MultipartRequest::Other { mp_type, body }),
    ]
}

fn flow_stats() -> impl Strategy<Value = FlowStats> {
    (
        any::<(u8, u32, u32, u16, u16, u16, u16)>(),
        any::<(u64, u64, u64)>(),
        a_match(),
        vec(instruction(), 0..3),
    )
        .prop_map(
            |(
                (
                    table_id,
                    duration_sec,
                    duration_nsec,
                    priority,
                    idle_timeout,
                    hard_timeout,
                    flags,
                ),
                (cookie, packet_count, byte_count),
                matcher,
                instructions,
            )| FlowStats {
                table_id,
                duration_sec,
                duration_nsec,
                priority,
                idle_timeout,
                hard_timeout,
                flags,
                cookie,
                packet_count,
                byte_count,
                matcher,
                instructions,
            },
        )
}

fn port_stats() -> impl Strategy<Value = PortStats> {
    (any::<u32>(), any::<[u64; 12]>(), any::<(u32, u32)>()).prop_map(
        |(port_no, c, (duration_sec, duration_nsec))| PortStats {
            port_no,
            rx_packets: c[0],
            tx_packets: c[1],
            rx_bytes: c[2],
            tx_bytes: c[3],
            rx_dropped: c[4],
            tx_dropped: c[5],
            rx_errors: c[6],
            tx_errors: c[7],
            rx_frame_err: c[8],
            rx_over_err: c[9],
            rx_crc_err: c[10],
            collisions: c[11],
            duration_sec,
            duration_nsec,
        },
    )
}

fn multipart_reply() -> impl Strategy<Value = MultipartReply> {
    prop_oneof![
        (name(255), name(255), name(255), name(31), name(255)).prop_map(
            |(mfr_desc, hw_desc, sw_desc, serial_num, dp_desc)| {
                MultipartReply::Desc(Desc {
                    mfr_desc,
                    hw_desc,
                    sw_desc,
                    serial_num,
                    dp_desc,
                })
            }
        ),
        vec(flow_stats(), 0..3).prop_map(MultipartReply::Flow),
        any::<(u64, u64, u32)>().prop_map(|(packet_count, byte_count, flow_count)| {
            MultipartReply::Aggregate {
                packet_count,
                byte_count,
                flow_count,
            }
        }),
        vec(any::<(u8, u32, u64, u64)>(), 0..4).prop_map(|v| MultipartReply::Table(
            v.into_iter()
                .map(
                    |(table_id, active_count, lookup_count, matched_count)| TableStats {
                        table_id,
                        active_count,
                        lookup_count,
                        matched_count,
                    }
                )
                .collect()
        )),
        vec(port_stats(), 0..3).prop_map(MultipartReply::PortStats),
        (any::<(u32, u32)>(), any::<[u32; 4]>(), any::<[u32; 4]>()).prop_map(
            |((types, capabilities), max_groups, actions)| {
                MultipartReply::GroupFeatures(GroupFeatures {
                    types,
                    capabilities,
                    max_groups,
                    actions,
                })
            }
        ),
        vec(any::<(u32, u32, u64, u64, u64, u32, u32)>(), 0..3).prop_map(|v| {
            MultipartReply::QueueStats(
                v.into_iter()
                    .map(
                        |(port_no, queue_id, tx_bytes, tx_packets, tx_errors, s, ns)| QueueStats {
                            port_no,
                            queue_id,
                            tx_bytes,
                            tx_packets,
                            tx_errors,
                            duration_sec: s,
                            duration_nsec: ns,
                        },
                    )
                    .collect(),
            )
        }),
        vec(
            (
                any::<(u32, u32, u64, u64, u32, u32)>(),
                vec(any::<(u64, u64)>(), 0..3)
            ),
            0..3
        )
        .prop_map(|v| {
            MultipartReply::Group(
                v.into_iter()
                    .map(
                        |(
                            (
                                group_id,
                                ref_count,
                                packet_count,
                                byte_count,
                                duration_sec,
                                duration_nsec,
                            ),
                            buckets,
                        )| GroupStats {
                            group_id,
                            ref_count,
                            packet_count,
                            byte_count,
                            duration_sec,
                            duration_nsec,
                            buckets,
                        },
                    )
                    .collect(),
            )
        }),
        vec((group_type(), any::<u32>(), vec(bucket(), 0..3)), 0..3).prop_map(|v| {
            MultipartReply::GroupDesc(
                v.into_iter()
                    .map(|(group_type, group_id, buckets)| GroupDesc {
                        group_type,
                        group_id,
                        buckets,
                    })
                    .collect(),
            )
        }),
        vec(port_desc(), 0..3).prop_map(MultipartReply::PortDesc),
    ]
}

/// The messages a switch receives.
fn request() -> impl Strategy<Value = Message> {
    prop_oneof![
        any::<Option<u32>>().prop_map(|versions| Message::Hello { versions }),
        bytes(40).prop_map(Message::EchoRequest),
        bytes(40).prop_map(Message::EchoReply),
        (any::<u32>(), any::<u32>(), bytes(40)).prop_map(|(experimenter, exp_type, data)| {
            Message::Experimenter {
                experimenter,
                exp_type,
                data,
            }
        }),
        Just(Message::FeaturesRequest),
        Just(Message::GetConfigRequest),
        any::<(u16, u16)>().prop_map(|(flags, miss_send_len)| Message::SetConfig(SwitchConfig {
            flags,
            miss_send_len
        })),
        (any::<(u32, u32)>(), actions(), bytes(60)).prop_map(
            |((buffer_id, in_port), actions, data)| Message::PacketOut(PacketOut {
                buffer_id,
                in_port,
                actions,
                data
            })
        ),
        flow_mod().prop_map(Message::FlowMod),
        (
            select(vec![
                GroupModCommand::Add,
                GroupModCommand::Modify,
                GroupModCommand::Delete
            ]),
            group_type(),
            any::<u32>(),
            vec(bucket(), 0..3)
        )
            .prop_map(
                |(command, group_type, group_id, buckets)| Message::GroupMod(GroupMod {
                    command,
                    group_type,
                    group_id,
                    buckets
                })
            ),
        (any::<u32>(), any::<[u8; 6]>(), any::<(u32, u32, u32)>()).prop_map(
            |(port_no, hw_addr, (config, mask, advertise))| Message::PortMod(PortMod {
                port_no,
                hw_addr,
                config,
                mask,
                advertise
            })
        ),
        any::<(u8, u32)>().prop_map(|(table_id, config)| Message::TableMod { table_id, config }),
        (any::<u16>(), multipart_request())
            .prop_map(|(flags, body)| Message::MultipartRequest { flags, body }),
        Just(Message::BarrierRequest),
        any::<(u32, u64)>().prop_map(|(role, generation_id)| Message::RoleRequest(Role {
            role,
            generation_id
        })),
        Just(Message::GetAsyncRequest),
        any::<[u32; 6]>().prop_map(Message::SetAsync),
        (select(vec![22u8, 23, 29]), bytes(40))
            .prop_map(|(msg_type, body)| Message::Unsupported { msg_type, body }),
    ]
}

/// The messages a switch sends.
fn reply() -> impl Strategy<Value = Message> {
    prop_oneof![
        (any::<u16>(), any::<u16>(), bytes(80)).prop_map(|(err_type, code, data)| Message::Error(
            ErrorMsg {
                err_type,
                code,
                data
            }
        )),
        any::<(u64, u32, u8, u8, u32)>().prop_map(
            |(datapath_id, n_buffers, n_tables, auxiliary_id, capabilities)| Message::FeaturesReply(
                Features {
                    datapath_id,
                    n_buffers,
                    n_tables,
                    auxiliary_id,
                    capabilities
                }
            )
        ),
        any::<(u16, u16)>().prop_map(|(flags, miss_send_len)| Message::GetConfigReply(
            SwitchConfig {
                flags,
                miss_send_len
            }
        )),
        (any::<(u32, u16, u8, u8, u64)>(), a_match(), bytes(80)).prop_map(
            |((buffer_id, total_len, reason, table_id, cookie), matcher, data)| {
                Message::PacketIn(PacketIn {
                    buffer_id,
                    total_len,
                    reason,
                    table_id,
                    cookie,
                    matcher,
                    data,
                })
            }
        ),
        (
            any::<(u64, u16, u8, u8, u32, u32)>(),
            any::<(u16, u16, u64, u64)>(),
            a_match()
        )
            .prop_map(
                |(
                    (cookie, priority, reason, table_id, duration_sec, duration_nsec),
                    (idle_timeout, hard_timeout, packet_count, byte_count),
                    matcher,
                )| {
                    Message::FlowRemoved(FlowRemoved {
                        cookie,
                        priority,
                        reason,
                        table_id,
                        duration_sec,
                        duration_nsec,
                        idle_timeout,
                        hard_timeout,
                        packet_count,
                        byte_count,
                        matcher,
                    })
                }
            ),
        (any::<u8>(), port_desc())
            .prop_map(|(reason, desc)| Message::PortStatus(PortStatus { reason, desc })),
        (any::<u16>(), multipart_reply())
            .prop_map(|(flags, body)| Message::MultipartReply { flags, body }),
        Just(Message::BarrierReply),
        any::<(u32, u64)>().prop_map(|(role, generation_id)| Message::RoleReply(Role {
            role,
            generation_id
        })),
        any::<[u32; 6]>().prop_map(Message::GetAsyncReply),
    ]
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![request(), reply()]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn encode_then_decode_gives_the_message(m in message(), xid in any::<u32>()) {
        let bytes = m.encode(xid);
        prop_assert_eq!(usize::from(Header::parse(&bytes).unwrap().length), bytes.len());
        prop_assert_eq!(frame_len(&bytes), Ok(Some(bytes.len())));
        let (h, back) = Message::decode(&bytes).map_err(|e| TestCaseError::fail(format!("{e}: {m:?}")))?;
        prop_assert_eq!(h.xid, xid);
        prop_assert_eq!(h.version, VERSION);
        prop_assert_eq!(h.msg_type, m.msg_type());
        prop_assert_eq!(back, m);
    }

    #[test]
    fn a_truncated_message_is_an_error(m in message()) {
        let bytes = m.encode(1);
        for n in 0..bytes.len() {
            // The header still says the whole length: always an error.
            prop_assert!(Message::decode(&bytes[..n]).is_err(), "{} of {} bytes decoded", n, bytes.len());
            // With the length mended to the cut, never a panic; what
            // decodes encodes back to the same message.
            if n >= HEADER_LEN {
                let mut cut = bytes[..n].to_vec();
                cut[2..4].copy_from_slice(&(n as u16).to_be_bytes());
                if let Ok((_, m2)) = Message::decode(&cut) {
                    prop_assert_eq!(Message::decode(&m2.encode(1)).map(|(_, m)| m), Ok(m2));
                }
            }
        }
    }

    #[test]
    fn random_bytes_never_panic(mut b in bytes(300), t in 0u8..32) {
        if b.len() >= 8 {
            b[0] = VERSION;
            b[1] = t;
            let n = b.len() as u16;
            b[2..4].copy_from_slice(&n.to_be_bytes());
        }
        if let Ok((_, m)) = Message::decode(&b) {
            prop_assert_eq!(Message::decode(&m.encode(0)).map(|(_, m)| m), Ok(m));
        }
    }

    #[test]
    fn matches_from_the_wire_pass_their_own_checks(m in a_match()) {
        // The prerequisite check never panics, and a match holding only
        // fields without prerequisites always passes it.
        let _ = m.check_prerequisites();
        let free: Vec<Oxm> = m.fields.iter().copied().filter(|o| matches!(o.field,
            Field::InPort | Field::Metadata | Field::EthDst | Field::EthSrc | Field::EthType | Field::VlanVid | Field::TunnelId)).collect();
        prop_assert_eq!(Match { fields: free }.check_prerequisites(), Ok(()));
    }
}
