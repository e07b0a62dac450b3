//! What `ovs-ofctl -O OpenFlow13` sends to a switch, decoded by us: a fake
//! switch on a loopback port answers the handshake and the requests the
//! tool waits for, and keeps every message the tool sent.

mod common;

use common::have_ovs_ofctl;
use openflow::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use testkit::tool::run_with_timeout;

const LIMIT: Duration = Duration::from_secs(20);

fn port(port_no: u32, name: &str) -> Port {
    Port {
        port_no,
        hw_addr: [2, 0, 0, 0, 0, port_no as u8],
        name: name.into(),
        curr_speed: 10_000_000,
        max_speed: 10_000_000,
        ..Port::default()
    }
}

/// The answer of a switch to `m` (whose header is `h`), if the tool
/// waits for one.
fn answer(h: &Header, m: &Message) -> Option<Vec<u8>> {
    if let Message::MultipartRequest {
        body: MultipartRequest::TableFeatures(_),
        ..
    } = m
    {
        // A TABLE_FEATURES reply (not modelled by the types) of one table
        // whose required properties are empty: the tool asks before a flow
        // mod.
        let mut r = vec![VERSION, msg_type::MULTIPART_REPLY, 0, 144];
        r.extend_from_slice(&h.xid.to_be_bytes());
        r.extend_from_slice(&[0, multipart_type::TABLE_FEATURES as u8, 0, 0, 0, 0, 0, 0]);
        r.extend_from_slice(&[0, 128, 0, 0, 0, 0, 0, 0]); // length, table 0, pad
        r.extend_from_slice(b"t0");
        r.resize(r.len() + 30, 0); // the rest of the name
        r.extend_from_slice(&[0xff; 16]); // metadata match and write
        r.extend_from_slice(&[0, 0, 0, 0, 0, 0x0f, 0x42, 0x40]); // config, max entries
        for prop in (0..16).step_by(2) {
            r.extend_from_slice(&[0, prop, 0, 4, 0, 0, 0, 0]); // type, length 4, pad
        }
        return Some(r);
    }
    let m = match m {
        Message::EchoRequest(d) => Message::EchoReply(d.clone()),
        Message::FeaturesRequest => Message::FeaturesReply(Features {
            datapath_id: 0x1234,
            n_buffers: 0,
            n_tables: 254,
            auxiliary_id: 0,
            capabilities: capabilities::FLOW_STATS | capabilities::PORT_STATS,
        }),
        Message::GetConfigRequest => Message::GetConfigReply(SwitchConfig {
            flags: 0,
            miss_send_len: 128,
        }),
        Message::BarrierRequest => Message::BarrierReply,
        Message::MultipartRequest { body, .. } => Message::MultipartReply {
            flags: 0,
            body: match body {
                MultipartRequest::PortDesc => {
                    MultipartReply::PortDesc(vec![port(1, "p1"), port(2, "p2")])
                }
                MultipartRequest::Flow(_) => MultipartReply::Flow(vec![]),
                MultipartRequest::Aggregate(_) => MultipartReply::Aggregate {
                    packet_count: 0,
                    byte_count: 0,
                    flow_count: 0,
                },
                MultipartRequest::Table => MultipartReply::Table(vec![]),
                MultipartRequest::Desc => MultipartReply::Desc(Desc::default()),
                _ => return None,
            },
        },
        _ => return None,
    };
    Some(m.encode(h.xid))
}

/// Serves one connection until the tool closes it: every message it sent,
/// decoded, or the first decode error.
fn serve(mut s: TcpStream) -> Result<Vec<(Header, Message)>, String> {
    let deadline = Instant::now() + LIMIT;
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .map_err(|e| e.to_string())?;
    let hello = Message::Hello {
        versions: Some(1 << VERSION),
    };
    s.write_all(&hello.encode(1)).map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if Instant::now() > deadline {
            return Err("the tool neither finished nor closed the connection".into());
        }
        // Every whole message in the buffer.
        while let Some(n) = frame_len(&buf).map_err(|e| e.to_string())? {
            if buf.len() < n {
                break;
            }
            let frame: Vec<u8> = buf.drain(..n).collect();
            let (h, m) =
                Message::decode(&frame).map_err(|e| format!("{e} in {}", common::hex(&frame)))?;
            if let Some(reply) = answer(&h, &m) {
                s.write_all(&reply).map_err(|e| e.to_string())?;
            }
            got.push((h, m));
        }
        match s.read(&mut chunk) {
            Ok(0) => return Ok(got),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Ok(got),
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// Runs `ovs-ofctl -O OpenFlow13 <cmd> tcp:127.0.0.1:PORT <args>` against
/// the fake switch: the messages it sent (HELLO first) and its stdout.
fn capture(cmd: &str, args: &[&str]) -> (Vec<Message>, String) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let addr = listener.local_addr().expect("local address");
    listener
        .set_nonblocking(true)
        .expect("nonblocking listener");
    // The tool may open more than one connection (one to learn port
    // names, one for the command): each is served in its own thread until
    // the tool is done.
    let done = Arc::new(AtomicBool::new(false));
    let server = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut conns = Vec::new();
            while !done.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((s, _)) => {
                        let _ = s.set_nonblocking(false);
                        conns.push(std::thread::spawn(move || serve(s)));
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    Err(e) => return vec![Err(e.to_string())],
                }
            }
            conns
                .into_iter()
                .map(|c| {
                    c.join()
                        .unwrap_or_else(|_| Err("serving thread panicked".into()))
                })
                .collect::<Vec<_>>()
        })
    };
    let target = format!("tcp:127.0.0.1:{}", addr.port());
    let out = run_with_timeout(
        Command::new("ovs-ofctl")
            .args(["-O", "OpenFlow13", "--timeout=15", cmd, &target])
            .args(args),
        LIMIT + Duration::from_secs(5),
    );
    done.store(true, Ordering::SeqCst);
    let got: Result<Vec<Vec<(Header, Message)>>, String> = server
        .join()
        .expect("the fake switch thread")
        .into_iter()
        .collect();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "ovs-ofctl {cmd} {args:?} failed: {}\nstdout: {stdout}\nswitch: {got:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    let conns = got.unwrap_or_else(|e| panic!("ovs-ofctl {cmd} {args:?}: {e}"));
    assert!(!conns.is_empty(), "ovs-ofctl {cmd} never connected");
    for c in &conns {
        assert!(
            matches!(c.first(), Some((_, Message::Hello { .. }))),
            "the tool starts with HELLO: {c:?}"
        );
    }
    let got: Vec<(Header, Message)> = conns.into_iter().flatten().collect();
    for (h, m) in &got {
        assert!(
            h.version == VERSION || matches!(m, Message::Hello { .. }),
            "{h:?} {m:?}"
        );
    }
    (got.into_iter().map(|(_, m)| m).collect(), stdout)
}

/// The flow mods the tool sent for `flow` through `cmd`.
fn flow_mods(cmd: &str, flow: &str) -> Vec<FlowMod> {
    let (msgs, _) = capture(cmd, &[flow]);
    let fms: Vec<FlowMod> = msgs
        .into_iter()
        .filter_map(|m| match m {
            Message::FlowMod(f) => Some(f),
            _ => None,
        })
        .collect();
    assert!(!fms.is_empty(), "{cmd} {flow} sent no flow_mod");
    for f in &fms {
        f.matcher
            .check_prerequisites()
            .unwrap_or_else(|e| panic!("{flow}: {e}"));
    }
    fms
}

fn one_flow_mod(cmd: &str, flow: &str) -> FlowMod {
    let mut v = flow_mods(cmd, flow);
    assert_eq!(v.len(), 1, "{flow}: {v:?}");
    v.remove(0)
}

fn exact(m: &Match, f: Field) -> u128 {
    let o = m.get(f).unwrap_or_else(|| panic!("no {f} in {m:?}"));
    assert_eq!(o.mask, None, "{f} is exact in {m:?}");
    o.value
}

#[test]
fn add_flow_tcp_to_a_prefix_and_port() {
    if !have_ovs_ofctl("add_flow_tcp_to_a_prefix_and_port") {
        return;
    }
    let f = one_flow_mod(
        "add-flow",
        "priority=100,tcp,nw_dst=10.0.0.0/8,tp_dst=80,actions=output:2",
    );
    assert_eq!(f.command, FlowModCommand::Add);
    assert_eq!(f.priority, 100);
    assert_eq!(f.table_id, 0);
    assert_eq!(f.buffer_id, NO_BUFFER);
    let m = &f.matcher;
    assert_eq!(exact(m, Field::EthType), 0x0800);
    assert_eq!(exact(m, Field::IpProto), 6);
    assert_eq!(exact(m, Field::TcpDst), 80);
    assert_eq!(
        m.get(Field::Ipv4Dst),
        Some(&Oxm::masked(Field::Ipv4Dst, 0x0a00_0000, 0xff00_0000))
    );
    assert_eq!(m.fields.len(), 4, "{m:?}");
    assert_eq!(
        f.instructions,
        vec![Instruction::ApplyActions(vec![Action::Output {
            port: 2,
            max_len: 0
        }])]
    );
}

/// Nicira matches and actions as `ovs-ofctl` puts them on the wire:
/// registers as OXM TLVs of class 1, resubmit/load/move/note as vendor
/// 0x2320 actions, decoded to what our parser makes of the same text.
#[test]
fn nicira_registers_and_actions_decode_as_our_parser_reads_them() {
    if !have_ovs_ofctl("nicira_registers_and_actions_decode_as_our_parser_reads_them") {
        return;
    }
    let flows = [
        "reg0=5,reg3=0x10/0xf0,actions=resubmit(,2),resubmit:3,resubmit(1,2)",
        "actions=load:0x5->NXM_NX_REG0[0..15],load:0x1->reg2[1],move:NXM_OF_IN_PORT[]->NXM_NX_REG0[0..15]",
        "actions=move:NXM_NX_REG0[0..15]->NXM_NX_REG1[16..31],note:01.02.03,set_field:5->reg1",
        "table=2,actions=learn(table=10,NXM_OF_VLAN_TCI[0..11],NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],load:NXM_OF_IN_PORT[]->NXM_NX_REG0[0..15]),resubmit(,3)",
        "ip,actions=learn(idle_timeout=10,priority=5,cookie=0x9,send_flow_rem,dl_type=0x800,NXM_OF_IP_SRC[]=NXM_OF_IP_DST[],load:0x5->NXM_NX_REG1[],output:NXM_OF_IN_PORT[],NXM_NX_REG2[0..3]=0x5)",
    ];
    for flow in flows {
        let theirs = one_flow_mod("add-flow", flow);
        let ours = parse_flow(flow, FlowModCommand::Add).unwrap();
        assert_eq!(theirs.matcher, ours.matcher, "{flow}");
        assert_eq!(theirs.instructions, ours.instructions, "{flow}");
    }
    let f = one_flow_mod("add-flow", flows[0]);
    assert_eq!(
        f.matcher.get(Field::Reg3),
        Some(&Oxm::masked(Field::Reg3, 0x10, 0xf0))
    );
    assert_eq!(
        f.instructions,
        vec![Instruction::ApplyActions(vec![
            Action::Nx(NxAction::Resubmit {
                in_port: port::IN_PORT,
                table: Some(2)
            }),
            Action::Nx(NxAction::Resubmit {
                in_port: 3,
                table: None
            }),
            Action::Nx(NxAction::Resubmit {
                in_port: 1,
                table: Some(2)
            }),
        ])]
    );
    let f = one_flow_mod("add-flow", flows[1]);
    let reg0 = oxm_header(Field::Reg0);
    assert_eq!(
        f.instructions,
        vec![Instruction::ApplyActions(vec![
            Action::Nx(NxAction::RegLoad {
                dst: SubField {
                    header: reg0,
                    ofs: 0,
                    n_bits: 16
                },
                value: 5
            }),
            Action::Nx(NxAction::RegLoad {
                dst: SubField {
                    header: oxm_header(Field::Reg2),
                    ofs: 1,
                    n_bits: 1
                },
                value: 1
            }),
            Action::Nx(NxAction::RegMove {
                src: SubField {
                    header: 0x0000_0002,
                    ofs: 0,
                    n_bits: 16
                },
                dst: SubField {
                    header: reg0,
                    ofs: 0,
                    n_bits: 16
                },
            }),
        ])]
    );
}

#[test]
fn add_flow_tcp_flags_as_the_onf_experimenter_field() {
    if !have_ovs_ofctl("add_flow_tcp_flags_as_the_onf_experimenter_field") {
        return;
    }
    let f = one_flow_mod("add-flow", "tcp,tcp_flags=+syn-ack,actions=drop");
    assert_eq!(
        f.matcher.get(Field::TcpFlags),
        Some(&Oxm::masked(Field::TcpFlags, 0x002, 0x012))
    );
    let f = one_flow_mod("add-flow", "tcp,tcp_flags=0x010,actions=drop");
    assert_eq!(exact(&f.matcher, Field::TcpFlags), 0x010);
    // "drop" is no instruction at all.
    assert_eq!(f.instructions, vec![]);
}

#[test]
fn add_flow_vlan_and_controller() {
    if !have_ovs_ofctl("add_flow_vlan_and_controller") {
        return;
    }
    let f = one_flow_mod(
        "add-flow",
        "in_port=1,dl_vlan=10,dl_vlan_pcp=3,actions=pop_vlan,output:3,controller:128",
    );
    let m = &f.matcher;
    assert_eq!(exact(m, Field::InPort), 1);
    assert_eq!(exact(m, Field::VlanVid), u128::from(VID_PRESENT | 10));
    assert_eq!(exact(m, Field::VlanPcp), 3);
    assert_eq!(
        f.instructions,
        vec![Instruction::ApplyActions(vec![
            Action::PopVlan,
            Action::Output {
                port: 3,
                max_len: 0
            },
            Action::Output {
                port: port::CONTROLLER,
                max_len: 128
            },
        ])]
    );
    let f = one_flow_mod(
        "add-flow",
        "dl_src=02:00:00:00:00:01/ff:ff:ff:00:00:00,actions=push_vlan:0x8100,set_field:4196->vlan_vid,output:1",
    );
    assert_eq!(
        f.matcher.get(Field::EthSrc),
        // OVS clears the value's bits outside the mask.
        Some(&Oxm::masked(
            Field::EthSrc,
            0x0200_0000_0000,
            0xffff_ff00_0000
        ))
    );
    assert_eq!(
        f.instructions,
        vec![Instruction::ApplyActions(vec![
            Action::PushVlan(0x8100),
            Action::SetField(Oxm::exact(Field::VlanVid, 4196)),
            Action::Output {
                port: 1,
                max_len: 0
            },
        ])]
    );
}

#[test]
fn add_flow_ipv6_metadata_goto_and_group() {
    if !have_ovs_ofctl("add_flow_ipv6_metadata_goto_and_group") {
        return;
    }
    let f = one_flow_mod(
        "add-flow",
        "table=1,cookie=0x55,idle_timeout=30,hard_timeout=60,send_flow_rem,ipv6,ipv6_src=2001:db8::/32,udp6,udp_dst=53,actions=write_metadata:0x5/0xff,goto_table:2",
    );
    assert_eq!(f.table_id, 1);
    assert_eq!(f.cookie, 0x55);
    assert_eq!((f.idle_timeout, f.hard_timeout), (30, 60));
    assert_eq!(
        f.flags & flow_flags::SEND_FLOW_REM,
        flow_flags::SEND_FLOW_REM
    );
    let m = &f.matcher;
    assert_eq!(exact(m, Field::EthType), 0x86dd);
    assert_eq!(exact(m, Field::IpProto), 17);
    assert_eq!(exact(m, Field::UdpDst), 53);
    assert_eq!(
        m.get(Field::Ipv6Src),
        Some(&Oxm::masked(
            Field::Ipv6Src,
            0x2001_0db8u128 << 96,
            0xffff_ffffu128 << 96
        ))
    );
    assert_eq!(
        f.instructions,
        vec![
            Instruction::WriteMetadata {
                metadata: 5,
                mask: 0xff
            },
            Instruction::GotoTable(2),
        ]
    );
    let f = one_flow_mod(
        "add-flow",
        "icmp6,icmp_type=135,nd_target=fe80::1,actions=group:7,set_field:2001:db8::9->ipv6_dst,dec_ttl",
    );
    assert_eq!(exact(&f.matcher, Field::Icmpv6Type), 135);
    assert_eq!(
        exact(&f.matcher, Field::Ipv6NdTarget),
        0xfe80u128 << 112 | 1
    );
    let Instruction::ApplyActions(a) = &f.instructions[0] else {
        panic!("{:?}", f.instructions)
    };
    assert!(a.contains(&Action::Group(7)), "{a:?}");
    assert!(a.contains(&Action::DecNwTtl), "{a:?}");
    assert!(
        a.contains(&Action::SetField(Oxm::exact(
            Field::Ipv6Dst,
            0x2001_0db8u128 << 96 | 9
        ))),
        "{a:?}"
    );
}

#[test]
fn del_flows_and_mod_flows() {
    if !have_ovs_ofctl("del_flows_and_mod_flows") {
        return;
    }
    let f = one_flow_mod("del-flows", "tcp,tp_dst=80");
    assert_eq!(f.command, FlowModCommand::Delete);
    assert_eq!(f.table_id, TABLE_ALL);
    assert_eq!((f.out_port, f.out_group), (port::ANY, group::ANY));
    assert_eq!(exact(&f.matcher, Field::TcpDst), 80);
    assert_eq!(f.instructions, vec![]);

    let f = one_flow_mod("mod-flows", "udp,udp_src=5000,actions=output:5");
    assert_eq!(f.command, FlowModCommand::Modify);
    assert_eq!(exact(&f.matcher, Field::UdpSrc), 5000);
    assert_eq!(
        f.instructions,
        vec![Instruction::ApplyActions(vec![Action::Output {
            port: 5,
            max_len: 0
        }])]
    );

    let f = one_flow_mod("del-flows", "--strict");
    assert_eq!(f.command, FlowModCommand::DeleteStrict);
}

#[test]
fn dump_flows_sends_a_flow_stats_request() {
    if !have_ovs_ofctl("dump_flows_sends_a_flow_stats_request") {
        return;
    }
    let (msgs, _) = capture("dump-flows", &["ip,nw_src=192.168.0.0/16"]);
    let req = msgs
        .iter()
        .find_map(|m| match m {
            Message::MultipartRequest {
                body: MultipartRequest::Flow(f),
                ..
            } => Some(f),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no flow stats request in {msgs:?}"));
    assert_eq!(req.table_id, TABLE_ALL);
    assert_eq!((req.out_port, req.out_group), (port::ANY, group::ANY));
    assert_eq!(
        req.matcher.get(Field::Ipv4Src),
        Some(&Oxm::masked(Field::Ipv4Src, 0xc0a8_0000, 0xffff_0000))
    );
}

#[test]
fn packet_out_with_its_frame() {
    if !have_ovs_ofctl("packet_out_with_its_frame") {
        return;
    }
    let frame =
        "ffffffffffff020000000001080600010800060400010200000000010a0000010000000000000a000002";
    let spec = format!("in_port=1 packet={frame} actions=output:2");
    let (msgs, _) = capture("packet-out", &[&spec]);
    let po = msgs
        .iter()
        .find_map(|m| match m {
            Message::PacketOut(p) => Some(p),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no packet_out in {msgs:?}"));
    assert_eq!(po.buffer_id, NO_BUFFER);
    assert_eq!(po.in_port, 1);
    assert_eq!(
        po.actions,
        vec![Action::Output {
            port: 2,
            max_len: 0
        }]
    );
    assert_eq!(po.data, common::unhex(frame));
}
