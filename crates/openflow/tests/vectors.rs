//! Hand-written bytes laid out as the OpenFlow 1.3 specification draws
//! them, decoded and encoded.

use openflow::*;

/// Hex digits, with `#` comments to the end of a line.
fn unhex(s: &str) -> Vec<u8> {
    let s: String = s
        .lines()
        .flat_map(|l| l.split('#').next().unwrap_or("").chars())
        .filter(|c| c.is_ascii_hexdigit())
        .collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// `bytes` decodes to `m` with `xid`, and `m` encodes to `bytes`.
fn both_ways(bytes: &str, xid: u32, m: Message) {
    let b = unhex(bytes);
    let (h, got) = Message::decode(&b).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((h.xid, &got), (xid, &m));
    assert_eq!(m.encode(xid), b, "encoding of {m:?}");
}

#[test]
fn header_and_framing() {
    let b = unhex("04 0e 00 58 12 34 56 78");
    assert_eq!(
        Header::parse(&b),
        Some(Header {
            version: 4,
            msg_type: 14,
            length: 0x58,
            xid: 0x1234_5678
        })
    );
    assert_eq!(Header::parse(&b[..7]), None);
    assert_eq!(frame_len(&b[..7]), Ok(None));
    assert_eq!(frame_len(&b), Ok(Some(0x58)));
    let e = frame_len(&unhex("04 00 00 04 00 00 00 01")).unwrap_err();
    assert_eq!(
        (e.err_type, e.code),
        (error::BAD_REQUEST, error::BAD_REQUEST_BAD_LEN)
    );
}

#[test]
fn hello_with_and_without_a_version_bitmap() {
    // Element type 1, length 8, bitmap with bit 4 (1.3) set.
    both_ways(
        "04 00 00 10 00 00 00 01  00 01 00 08 00 00 00 10",
        1,
        Message::Hello {
            versions: Some(0x10),
        },
    );
    both_ways(
        "04 00 00 08 00 00 00 02",
        2,
        Message::Hello { versions: None },
    );
    // HELLO of any version decodes: 1.0 without elements, 1.5 with a
    // bitmap of 1.0 to 1.5 and an unknown element before it.
    let (h, m) = Message::decode(&unhex("01 00 00 08 00 00 00 03")).unwrap();
    assert_eq!((h.version, m), (1, Message::Hello { versions: None }));
    let (h, m) = Message::decode(&unhex(
        "06 00 00 18 00 00 00 04  00 07 00 06 aa bb 00 00  00 01 00 08 00 00 00 7e",
    ))
    .unwrap();
    assert_eq!(
        (h.version, m),
        (
            6,
            Message::Hello {
                versions: Some(0x7e)
            }
        )
    );
}

#[test]
fn fixed_messages() {
    both_ways("04 05 00 08 00 00 00 07", 7, Message::FeaturesRequest);
    both_ways("04 14 00 08 00 00 00 08", 8, Message::BarrierRequest);
    both_ways("04 15 00 08 00 00 00 08", 8, Message::BarrierReply);
    both_ways(
        "04 02 00 0b 00 00 00 09 61 62 63",
        9,
        Message::EchoRequest(b"abc".to_vec()),
    );
    both_ways(
        "04 06 00 20 00 00 00 0a  00 00 00 00 00 00 00 2a  00 00 01 00 fe 00 00 00  00 00 00 0f 00 00 00 00",
        10,
        Message::FeaturesReply(Features {
            datapath_id: 42,
            n_buffers: 256,
            n_tables: 254,
            auxiliary_id: 0,
            capabilities: 0xf,
        }),
    );
    both_ways(
        "04 09 00 0c 00 00 00 0b  00 00 ff ff",
        11,
        Message::SetConfig(SwitchConfig {
            flags: 0,
            miss_send_len: 0xffff,
        }),
    );
    both_ways(
        "04 18 00 18 00 00 00 0c  00 00 00 02 00 00 00 00  00 00 00 00 00 00 00 05",
        12,
        Message::RoleRequest(Role {
            role: role::MASTER,
            generation_id: 5,
        }),
    );
    both_ways(
        "04 11 00 10 00 00 00 0d  03 00 00 00 00 00 00 03",
        13,
        Message::TableMod {
            table_id: 3,
            config: 3,
        },
    );
    both_ways(
        "04 01 00 14 00 00 00 0e  00 04 00 09 04 0e 00 58 12 34 56 78",
        14,
        Message::Error(ErrorMsg {
            err_type: error::BAD_MATCH,
            code: error::BAD_MATCH_BAD_PREREQ,
            data: unhex("04 0e 00 58 12 34 56 78"),
        }),
    );
    both_ways(
        "04 04 00 14 00 00 00 0f  00 00 23 20 00 00 00 0a  de ad be ef",
        15,
        Message::Experimenter {
            experimenter: 0x2320,
            exp_type: 10,
            data: unhex("deadbeef"),
        },
    );
}

#[test]
fn flow_mod_as_the_spec_lays_it_out() {
    both_ways(
        "04 0e 00 58 00 00 00 10
         00 00 00 00 00 00 00 01  00 00 00 00 00 00 00 00  # cookie, cookie_mask
         00 00 00 00 00 00 00 64  # table, ADD, idle, hard, priority 100
         ff ff ff ff ff ff ff ff  ff ff ff ff 00 01 00 00  # buffer, out_port, out_group, flags, pad
         00 01 00 0a 80 00 0a 02  08 00 00 00 00 00 00 00  # match OXM, length 10: eth_type=0x0800, pad 6
         00 04 00 18 00 00 00 00  # apply_actions, length 24
         00 00 00 10 00 00 00 02  ff ff 00 00 00 00 00 00  # output port 2, max_len 0xffff",
        16,
        Message::FlowMod(FlowMod {
            cookie: 1,
            cookie_mask: 0,
            table_id: 0,
            command: FlowModCommand::Add,
            idle_timeout: 0,
            hard_timeout: 0,
            priority: 100,
            buffer_id: NO_BUFFER,
            out_port: port::ANY,
            out_group: group::ANY,
            flags: flow_flags::SEND_FLOW_REM,
            matcher: Match { fields: vec![Oxm::exact(Field::EthType, 0x0800)] },
            instructions: vec![Instruction::ApplyActions(vec![Action::Output { port: 2, max_len: CML_NO_BUFFER }])],
        }),
    );
}

#[test]
fn oxm_tlvs_on_the_wire() {
    let enc = |o: Oxm| {
        let mut v = Vec::new();
        o.encode(&mut v);
        v
    };
    assert_eq!(
        enc(Oxm::exact(Field::InPort, 7)),
        unhex("80 00 00 04 00 00 00 07")
    );
    assert_eq!(
        enc(Oxm::masked(Field::Ipv4Dst, 0x0a00_0000, 0xff00_0000)),
        unhex("80 00 19 08 0a 00 00 00 ff 00 00 00")
    );
    assert_eq!(
        enc(Oxm::exact(Field::VlanVid, 0x1005)),
        unhex("80 00 0c 02 10 05")
    );
    assert_eq!(
        enc(Oxm::exact(Field::PbbIsid, 0xabcdef)),
        unhex("80 00 4a 03 ab cd ef")
    );
    assert_eq!(
        enc(Oxm::exact(Field::Ipv6Exthdr, 0x1ff)),
        unhex("80 00 4e 02 01 ff")
    );
    // TCP flags: ONF's experimenter class; the length counts the
    // experimenter id (as ovs-ofctl sends it).
    assert_eq!(
        enc(Oxm::exact(Field::TcpFlags, 0x012)),
        unhex("ff ff 54 06 4f 4e 46 00 00 12")
    );
    assert_eq!(
        enc(Oxm::masked(Field::TcpFlags, 0x002, 0x012)),
        unhex("ff ff 55 08 4f 4e 46 00 00 02 00 12")
    );
    for &f in Field::ALL {
        assert_eq!(Field::from_code(f.class(), f.code()), Some(f));
        assert!(f.width_bits() as usize <= 8 * f.bytes());
    }
    assert_eq!(Field::Ipv6NdTll.code(), 33);
    assert_eq!(
        (Field::Ipv6Flabel.bytes(), Field::Ipv6Flabel.width_bits()),
        (4, 20)
    );
    assert_eq!(
        (Field::VlanVid.bytes(), Field::VlanVid.width_bits()),
        (2, 13)
    );
    assert_eq!(Field::Ipv6Exthdr.code(), 39);
    assert!(!Field::InPort.maskable() && Field::Metadata.maskable() && !Field::IpProto.maskable());
    // Open vSwitch masks ports beyond the specification, and so do we.
    assert!(Field::TcpDst.maskable() && Field::Ipv6NdTarget.maskable());
}

#[test]
fn packet_out_and_packet_in() {
    both_ways(
        "04 0d 00 2c 00 00 00 11
         ff ff ff ff 00 00 00 01  00 10 00 00 00 00 00 00  # buffer, in_port 1, actions_len 16, pad
         00 00 00 10 ff ff ff fb  00 00 00 00 00 00 00 00  # output FLOOD
         01 02 03 04",
        17,
        Message::PacketOut(PacketOut {
            buffer_id: NO_BUFFER,
            in_port: 1,
            actions: vec![Action::Output {
                port: port::FLOOD,
                max_len: 0,
            }],
            data: unhex("01020304"),
        }),
    );
    both_ways(
        "04 0a 00 2e 00 00 00 12
         ff ff ff ff 00 04 00 05  00 00 00 00 00 00 00 09  # buffer, total_len 4, reason NO_MATCH, table 5, cookie
         00 01 00 0c 80 00 00 04  00 00 00 03 00 00 00 00  # match in_port=3, pad 4
         00 00 aa bb cc dd  # pad 2, frame",
        18,
        Message::PacketIn(PacketIn {
            buffer_id: NO_BUFFER,
            total_len: 4,
            reason: packet_in_reason::NO_MATCH,
            table_id: 5,
            cookie: 9,
            matcher: Match { fields: vec![Oxm::exact(Field::InPort, 3)] },
            data: unhex("aabbccdd"),
        }),
    );
}

#[test]
fn multipart_requests_and_replies() {
    both_ways(
        "04 12 00 10 00 00 00 13 00 0d 00 00 00 00 00 00",
        19,
        Message::MultipartRequest {
            flags: 0,
            body: MultipartRequest::PortDesc,
        },
    );
    both_ways(
        "04 12 00 18 00 00 00 14 00 04 00 00 00 00 00 00  ff ff ff ff 00 00 00 00",
        20,
        Message::MultipartRequest {
            flags: 0,
            body: MultipartRequest::PortStats { port_no: port::ANY },
        },
    );
    // Meter stats (9): not modelled, kept.
    both_ways(
        "04 12 00 18 00 00 00 15 00 09 00 00 00 00 00 00  ff ff ff ff 00 00 00 00",
        21,
        Message::MultipartRequest {
            flags: 0,
            body: MultipartRequest::Other {
                mp_type: 9,
                body: unhex("ffffffff00000000"),
            },
        },
    );
    both_ways(
        "04 13 00 28 00 00 00 16 00 02 00 01 00 00 00 00
         00 00 00 00 00 00 00 0a  00 00 00 00 00 00 01 00  00 00 00 03 00 00 00 00",
        22,
        Message::MultipartReply {
            flags: MULTIPART_MORE,
            body: MultipartReply::Aggregate {
                packet_count: 10,
                byte_count: 256,
                flow_count: 3,
            },
        },
    );
    // A port (64 bytes): port_no, pad, hw_addr, pad, name[16], then the
    // eight 32-bit words.
    let port = "00 00 00 01 00 00 00 00  02 00 00 00 00 01 00 00  65 74 68 30 00 00 00 00  00 00 00 00 00 00 00 00
                00 00 00 00 00 00 00 04  00 00 08 02 00 00 00 00  00 00 00 00 00 00 00 00  00 98 96 80 00 98 96 80";
    both_ways(
        &format!("04 13 00 50 00 00 00 17 00 0d 00 00 00 00 00 00 {port}"),
        23,
        Message::MultipartReply {
            flags: 0,
            body: MultipartReply::PortDesc(vec![Port {
                port_no: 1,
                hw_addr: [2, 0, 0, 0, 0, 1],
                name: "eth0".into(),
                config: 0,
                state: port_bits::STATE_LIVE,
                curr: 0x802,
                advertised: 0,
                supported: 0,
                peer: 0,
                curr_speed: 10_000_000,
                max_speed: 10_000_000,
            }]),
        },
    );
    // A table features reply is not modelled: the whole body is kept.
    let (_, m) = Message::decode(&unhex(
        "04 13 00 18 00 00 00 18 00 0c 00 00 00 00 00 00 01 02 03 04 05 06 07 08",
    ))
    .unwrap();
    assert_eq!(
        m,
        Message::Unsupported {
            msg_type: msg_type::MULTIPART_REPLY,
            body: unhex("000c000000000000 0102030405060708")
        }
    );
}

#[test]
fn messages_not_modelled_are_kept() {
    both_ways(
        "04 1d 00 10 00 00 00 19 00 00 00 01 00 00 00 05",
        25,
        Message::Unsupported {
            msg_type: msg_type::METER_MOD,
            body: unhex("0000000100000005"),
        },
    );
    both_ways(
        "04 16 00 10 00 00 00 1a ff ff ff fe 00 00 00 00",
        26,
        Message::Unsupported {
            msg_type: msg_type::QUEUE_GET_CONFIG_REQUEST,
            body: unhex("fffffffe00000000"),
        },
    );
}
