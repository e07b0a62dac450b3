//! `ovs-ofctl ofp-print` reads the messages we encode: the fields it
//! prints are those we put in.

mod common;

use common::have_ovs_ofctl;
use openflow::*;
use testkit::tool::ofp_print;

fn has(text: &str, needles: &[&str]) {
    for n in needles {
        assert!(
            text.contains(n),
            "{n:?} missing from ovs-ofctl's output:\n{text}"
        );
    }
    assert!(!text.contains("***"), "ovs-ofctl complains:\n{text}");
}

fn tcp_match() -> Match {
    Match {
        fields: vec![
            Oxm::exact(Field::InPort, 3),
            Oxm::exact(Field::EthType, 0x0800),
            Oxm::exact(Field::IpProto, 6),
            Oxm::masked(Field::Ipv4Dst, 0x0a00_0000, 0xff00_0000),
            Oxm::exact(Field::TcpDst, 80),
            Oxm::masked(Field::TcpFlags, 0x002, 0x012),
        ],
    }
}

fn port(port_no: u32, name: &str) -> Port {
    Port {
        port_no,
        hw_addr: [2, 0, 0, 0, 0, 7],
        name: name.into(),
        config: 0,
        state: port_bits::STATE_LIVE,
        curr: 0x802,
        curr_speed: 10_000_000,
        max_speed: 10_000_000,
        ..Port::default()
    }
}

#[test]
fn flow_mod_with_matches_and_instructions() {
    if !have_ovs_ofctl("flow_mod_with_matches_and_instructions") {
        return;
    }
    let fm = FlowMod {
        cookie: 0xabc,
        cookie_mask: 0,
        table_id: 1,
        command: FlowModCommand::Add,
        idle_timeout: 10,
        hard_timeout: 20,
        priority: 100,
        buffer_id: NO_BUFFER,
        out_port: port::ANY,
        out_group: group::ANY,
        flags: flow_flags::SEND_FLOW_REM,
        matcher: tcp_match(),
        instructions: vec![
            Instruction::WriteMetadata {
                metadata: 5,
                mask: 0xff,
            },
            Instruction::ApplyActions(vec![
                Action::PushVlan(0x8100),
                Action::SetField(Oxm::exact(Field::VlanVid, u128::from(VID_PRESENT | 42))),
                Action::DecNwTtl,
                Action::Group(9),
                Action::Output {
                    port: 2,
                    max_len: 0,
                },
                Action::Output {
                    port: port::CONTROLLER,
                    max_len: 128,
                },
            ]),
            Instruction::GotoTable(4),
        ],
    };
    let text = ofp_print(&Message::FlowMod(fm).encode(0x42));
    has(
        &text,
        &[
            "OFPT_FLOW_MOD (OF1.3) (xid=0x42)",
            "ADD",
            "table:1",
            "priority=100",
            "in_port=3",
            "tcp",
            "nw_dst=10.0.0.0/8",
            "tp_dst=80",
            "tcp_flags=+syn-ack",
            "cookie:0xabc",
            "idle:10",
            "hard:20",
            "send_flow_rem",
            "push_vlan:0x8100",
            "set_field:4138->vlan_vid",
            "dec_ttl",
            "group:9",
            "output:2",
            "CONTROLLER:128",
            "write_metadata:0x5/0xff",
            "goto_table:4",
        ],
    );
}

#[test]
fn packet_in_and_flow_removed() {
    if !have_ovs_ofctl("packet_in_and_flow_removed") {
        return;
    }
    let frame = common::unhex(
        "ffffffffffff020000000001080600010800060400010200000000010a0000010000000000000a000002",
    );
    let pi = PacketIn {
        buffer_id: NO_BUFFER,
        total_len: frame.len() as u16,
        reason: packet_in_reason::ACTION,
        table_id: 2,
        cookie: 0x77,
        matcher: Match {
            fields: vec![Oxm::exact(Field::InPort, 5)],
        },
        data: frame,
    };
    let text = ofp_print(&Message::PacketIn(pi).encode(1));
    has(
        &text,
        &[
            "OFPT_PACKET_IN (OF1.3)",
            "total_len=42",
            "in_port=5",
            "(via action)",
            "table_id=2",
            "cookie=0x77",
            "data_len=42 (unbuffered)",
            "arp",
            "arp_spa=10.0.0.1",
            "arp_tpa=10.0.0.2",
        ],
    );

    let fr = FlowRemoved {
        cookie: 0x99,
        priority: 7,
        reason: flow_removed_reason::IDLE_TIMEOUT,
        table_id: 3,
        duration_sec: 12,
        duration_nsec: 500_000_000,
        idle_timeout: 30,
        hard_timeout: 0,
        packet_count: 1234,
        byte_count: 56789,
        matcher: tcp_match(),
    };
    let text = ofp_print(&Message::FlowRemoved(fr).encode(2));
    has(
        &text,
        &[
            "OFPT_FLOW_REMOVED (OF1.3)",
            "priority=7",
            "tp_dst=80",
            "reason=idle",
            "table_id=3",
            "cookie:0x99",
            "duration12.500s",
            "idle30",
            "pkts1234",
            "bytes56789",
        ],
    );
}

#[test]
fn features_reply() {
    if !have_ovs_ofctl("features_reply") {
        return;
    }
    let f = Features {
        datapath_id: 0xfedc_ba98_7654_3210,
        n_buffers: 256,
        n_tables: 254,
        auxiliary_id: 0,
        capabilities: capabilities::FLOW_STATS
            | capabilities::TABLE_STATS
            | capabilities::PORT_STATS,
    };
    let text = ofp_print(&Message::FeaturesReply(f).encode(3));
    has(
        &text,
        &[
            "OFPT_FEATURES_REPLY (OF1.3)",
            "dpid:fedcba9876543210",
            "n_tables:254",
            "n_buffers:256",
            "FLOW_STATS TABLE_STATS PORT_STATS",
        ],
    );
}

fn reply(body: MultipartReply) -> String {
    ofp_print(&Message::MultipartReply { flags: 0, body }.encode(9))
}

#[test]
fn multipart_replies() {
    if !have_ovs_ofctl("multipart_replies") {
        return;
    }
    let text = reply(MultipartReply::Desc(Desc {
        mfr_desc: "sluice project".into(),
        hw_desc: "software".into(),
        sw_desc: "sluice 0.1".into(),
        serial_num: "0001".into(),
        dp_desc: "test datapath".into(),
    }));
    has(
        &text,
        &[
            "OFPST_DESC reply (OF1.3)",
            "Manufacturer: sluice project",
            "Hardware: software",
            "Software: sluice 0.1",
            "Serial Num: 0001",
            "DP Description: test datapath",
        ],
    );

    let text = reply(MultipartReply::Flow(vec![
        FlowStats {
            table_id: 0,
            duration_sec: 5,
            duration_nsec: 0,
            priority: 100,
            idle_timeout: 0,
            hard_timeout: 0,
            flags: 0,
            cookie: 0x1,
            packet_count: 10,
            byte_count: 1500,
            matcher: tcp_match(),
            instructions: vec![Instruction::ApplyActions(vec![Action::Output {
                port: 2,
                max_len: 0,
            }])],
        },
        FlowStats {
            table_id: 1,
            duration_sec: 1,
            duration_nsec: 0,
            priority: 0,
            idle_timeout: 0,
            hard_timeout: 0,
            flags: 0,
            cookie: 0,
            packet_count: 0,
            byte_count: 0,
            matcher: Match::default(),
            instructions: vec![Instruction::ClearActions],
        },
    ]));
    has(
        &text,
        &[
            "OFPST_FLOW reply (OF1.3)",
            "cookie=0x1, duration=5s, table=0, n_packets=10, n_bytes=1500, priority=100,tcp,in_port=3,nw_dst=10.0.0.0/8,tp_dst=80,tcp_flags=+syn-ack actions=output:2",
            "table=1, n_packets=0, n_bytes=0, priority=0 actions=clear_actions",
        ],
    );

    let text = reply(MultipartReply::Aggregate {
        packet_count: 11,
        byte_count: 2222,
        flow_count: 3,
    });
    has(
        &text,
        &[
            "OFPST_AGGREGATE reply (OF1.3)",
            "packet_count=11",
            "byte_count=2222",
            "flow_count=3",
        ],
    );

    let text = reply(MultipartReply::Table(vec![TableStats {
        table_id: 0,
        active_count: 4,
        lookup_count: 100,
        matched_count: 90,
    }]));
    has(
        &text,
        &[
            "OFPST_TABLE reply (OF1.3)",
            "table 0:",
            "active=4",
            "lookup=100",
            "matched=90",
        ],
    );

    let text = reply(MultipartReply::PortStats(vec![PortStats {
        port_no: 1,
        rx_packets: 10,
        tx_packets: 20,
        rx_bytes: 1000,
        tx_bytes: 2000,
        rx_dropped: 1,
        tx_dropped: 2,
        rx_errors: 3,
        tx_errors: 4,
        rx_frame_err: 5,
        rx_over_err: 6,
        rx_crc_err: 7,
        collisions: 8,
        duration_sec: 9,
        duration_nsec: 0,
    }]));
    has(
        &text,
        &[
            "OFPST_PORT reply (OF1.3)",
            "port  1: rx pkts=10, bytes=1000, drop=1, errs=3, frame=5, over=6, crc=7",
            "tx pkts=20, bytes=2000, drop=2, errs=4, coll=8",
            "duration=9s",
        ],
    );

    let text = reply(MultipartReply::PortDesc(vec![
        port(1, "eth1"),
        port(2, "veth-two"),
    ]));
    has(
        &text,
        &[
            "OFPST_PORT_DESC reply (OF1.3)",
            "1(eth1): addr:02:00:00:00:00:07",
            "2(veth-two): addr:02:00:00:00:00:07",
            "state:      LIVE",
            "speed: 10000 Mbps now, 10000 Mbps max",
        ],
    );
}

#[test]
fn port_status_group_mod_and_role() {
    if !have_ovs_ofctl("port_status_group_mod_and_role") {
        return;
    }
    let text = ofp_print(
        &Message::PortStatus(PortStatus {
            reason: port_reason::ADD,
            desc: port(7, "p7"),
        })
        .encode(1),
    );
    has(&text, &["OFPT_PORT_STATUS (OF1.3)", "ADD: 7(p7)"]);

    let gm = GroupMod {
        command: GroupModCommand::Add,
        group_type: GroupType::Select,
        group_id: 5,
        buckets: vec![
            Bucket {
                weight: 3,
                watch_port: port::ANY,
                watch_group: group::ANY,
                actions: vec![Action::Output {
                    port: 1,
                    max_len: 0,
                }],
            },
            Bucket {
                weight: 1,
                watch_port: port::ANY,
                watch_group: group::ANY,
                actions: vec![Action::Output {
                    port: 2,
                    max_len: 0,
                }],
            },
        ],
    };
    let text = ofp_print(&Message::GroupMod(gm).encode(2));
    has(
        &text,
        &[
            "OFPT_GROUP_MOD (OF1.3)",
            "ADD group_id=5,type=select",
            "bucket=weight:3,actions=output:1",
            // Weight 1 is OVS's default, which it does not print.
            ",bucket=actions=output:2",
        ],
    );

    let text = ofp_print(
        &Message::RoleRequest(Role {
            role: role::MASTER,
            generation_id: 12,
        })
        .encode(3),
    );
    has(
        &text,
        &[
            "OFPT_ROLE_REQUEST (OF1.3)",
            "role=primary",
            "generation_id=12",
        ],
    );
}
