//! ovs-ofctl flow text: the exact values parsed, and the errors.

use openflow::*;

fn oxm(field: Field, value: u128) -> Oxm {
    Oxm {
        field,
        value,
        mask: None,
    }
}

fn masked(field: Field, value: u128, mask: u128) -> Oxm {
    Oxm {
        field,
        value,
        mask: Some(mask),
    }
}

fn add(text: &str) -> FlowMod {
    parse_flow(text, FlowModCommand::Add).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// The match of `text` (a flow without actions).
fn fields(text: &str) -> Vec<Oxm> {
    add(&format!("{text},actions=drop")).matcher.fields
}

fn apply(text: &str) -> Vec<Action> {
    match add(text).instructions.as_slice() {
        [Instruction::ApplyActions(a)] => a.clone(),
        other => panic!("{text}: {other:?}"),
    }
}

fn err(text: &str) -> String {
    parse_flow(text, FlowModCommand::Add)
        .expect_err(text)
        .to_string()
}

fn out(port: u32) -> Action {
    Action::Output { port, max_len: 0 }
}

fn set(field: Field, value: u128) -> Action {
    Action::SetField(oxm(field, value))
}

#[test]
fn a_whole_flow_mod() {
    let fm = add(
        "table=3,priority=100,cookie=0x1f,idle_timeout=10,hard_timeout=0x20,send_flow_rem,\
         check_overlap,tcp,nw_dst=10.0.0.0/8,tp_dst=80,actions=output:2",
    );
    assert_eq!(
        fm,
        FlowMod {
            cookie: 0x1f,
            cookie_mask: 0,
            table_id: 3,
            command: FlowModCommand::Add,
            idle_timeout: 10,
            hard_timeout: 32,
            priority: 100,
            buffer_id: NO_BUFFER,
            out_port: port::ANY,
            out_group: group::ANY,
            flags: flow_flags::SEND_FLOW_REM | flow_flags::CHECK_OVERLAP,
            matcher: Match {
                fields: vec![
                    oxm(Field::EthType, 0x0800),
                    oxm(Field::IpProto, 6),
                    masked(Field::Ipv4Dst, 0x0a00_0000, 0xff00_0000),
                    oxm(Field::TcpDst, 80),
                ]
            },
            instructions: vec![Instruction::ApplyActions(vec![out(2)])],
        }
    );
}

#[test]
fn defaults_by_command() {
    let fm = add("actions=drop");
    assert_eq!((fm.table_id, fm.priority, fm.flags), (0, 0x8000, 0));
    assert!(fm.instructions.is_empty() && fm.matcher.fields.is_empty());
    let del = parse_flow(
        "cookie=0x10/0xff,out_port=3,out_group=7",
        FlowModCommand::Delete,
    )
    .unwrap();
    assert_eq!(del.table_id, TABLE_ALL);
    assert_eq!((del.cookie, del.cookie_mask), (0x10, 0xff));
    assert_eq!((del.out_port, del.out_group), (3, 7));
    let m = parse_flow("cookie=1/1,ip,actions=drop", FlowModCommand::ModifyStrict).unwrap();
    assert_eq!(
        (m.cookie, m.cookie_mask, m.command),
        (1, 1, FlowModCommand::ModifyStrict)
    );
}

#[test]
fn field_order_is_canonical() {
    assert_eq!(
        fields("tp_dst=80,nw_src=1.2.3.4,tcp"),
        fields("tcp,nw_src=1.2.3.4,tp_dst=80")
    );
    assert_eq!(
        fields("eth_type=0x800,ip_proto=6,tcp_dst=80"),
        fields("tcp,tp_dst=80")
    );
}

#[test]
fn shorthands_imply_their_prerequisites() {
    let cases: [(&str, u128, Option<u128>); 9] = [
        ("ip", 0x0800, None),
        ("ipv6", 0x86dd, None),
        ("tcp", 0x0800, Some(6)),
        ("tcp6", 0x86dd, Some(6)),
        ("udp", 0x0800, Some(17)),
        ("udp6", 0x86dd, Some(17)),
        ("sctp", 0x0800, Some(132)),
        ("icmp", 0x0800, Some(1)),
        ("icmp6", 0x86dd, Some(58)),
    ];
    for (s, eth, proto) in cases {
        let mut want = vec![oxm(Field::EthType, eth)];
        want.extend(proto.map(|p| oxm(Field::IpProto, p)));
        assert_eq!(fields(s), want, "{s}");
    }
    assert_eq!(fields("arp"), vec![oxm(Field::EthType, 0x0806)]);
}

#[test]
fn transport_fields_follow_the_protocol() {
    assert_eq!(fields("udp,tp_dst=53")[2], oxm(Field::UdpDst, 53));
    assert_eq!(fields("sctp6,tp_src=9")[2], oxm(Field::SctpSrc, 9));
    assert_eq!(
        fields("tcp,tp_src=0x50/0xfff0")[2],
        masked(Field::TcpSrc, 0x50, 0xfff0)
    );
    assert_eq!(
        fields("icmp,icmp_type=8,icmp_code=0")[2..],
        [oxm(Field::Icmpv4Type, 8), oxm(Field::Icmpv4Code, 0)]
    );
    assert_eq!(
        fields("icmp6,icmp_type=135")[2],
        oxm(Field::Icmpv6Type, 135)
    );
    assert_eq!(fields("icmp6,icmpv6_code=3")[2], oxm(Field::Icmpv6Code, 3));
    assert_eq!(fields("icmp,icmpv4_type=3")[2], oxm(Field::Icmpv4Type, 3));
}

#[test]
fn addresses_and_masks() {
    assert_eq!(
        fields("ip,nw_src=10.1.2.3/255.255.0.0,ip_dst=1.2.3.4/32")[1..],
        [
            masked(Field::Ipv4Src, 0x0a01_0000, 0xffff_0000),
            oxm(Field::Ipv4Dst, 0x0102_0304)
        ]
    );
    // A /0 mask matches everything: the field goes.
    assert_eq!(fields("ip,nw_src=1.2.3.4/0").len(), 1);
    assert_eq!(
        fields("dl_dst=01:00:00:00:00:00/01:00:00:00:00:00,eth_src=00:11:22:33:44:55"),
        vec![
            masked(Field::EthDst, 0x0100_0000_0000, 0x0100_0000_0000),
            oxm(Field::EthSrc, 0x0011_2233_4455),
        ]
    );
    assert_eq!(
        fields("arp,arp_spa=10.0.0.0/24,arp_tpa=10.0.0.1,arp_sha=0:0:0:0:0:1,arp_op=2")[1..],
        [
            oxm(Field::ArpOp, 2),
            masked(Field::ArpSpa, 0x0a00_0000, 0xffff_ff00),
            oxm(Field::ArpTpa, 0x0a00_0001),
            oxm(Field::ArpSha, 1),
        ]
    );
    // On ARP, nw_src and nw_proto are arp_spa and arp_op, as in OVS.
    assert_eq!(
        fields("arp,nw_src=1.2.3.4,nw_proto=2")[1..],
        [oxm(Field::ArpOp, 2), oxm(Field::ArpSpa, 0x0102_0304)]
    );
    let v6 = fields("ipv6,ipv6_src=2001:db8::1/32,ipv6_dst=::1,ipv6_label=0x12345");
    assert_eq!(
        v6[1],
        masked(Field::Ipv6Src, 0x2001_0db8 << 96, u128::MAX << 96)
    );
    assert_eq!(v6[2], oxm(Field::Ipv6Dst, 1));
    assert_eq!(v6[3], oxm(Field::Ipv6Flabel, 0x12345));
    let nd = fields("icmp6,icmp_type=135,nd_target=fe80::1,nd_sll=00:00:00:00:00:02");
    assert_eq!(
        nd[3..],
        [
            oxm(Field::Ipv6NdTarget, (0xfe80 << 112) | 1),
            oxm(Field::Ipv6NdSll, 2)
        ]
    );
    assert_eq!(
        fields("icmp6,icmp_type=136,nd_tll=00:00:00:00:00:03")[3],
        oxm(Field::Ipv6NdTll, 3)
    );
}

#[test]
fn vlan_forms() {
    let vid = |v| oxm(Field::VlanVid, v);
    assert_eq!(fields("dl_vlan=5"), [vid(0x1005)]);
    assert_eq!(fields("dl_vlan=0xffff"), [vid(0)]);
    assert_eq!(fields("vlan_vid=0x1005"), [vid(0x1005)]);
    assert_eq!(
        fields("vlan_vid=0x1000/0x1000"),
        [masked(Field::VlanVid, 0x1000, 0x1000)]
    );
    assert_eq!(
        fields("dl_vlan_pcp=3"),
        [
            masked(Field::VlanVid, 0x1000, 0x1000),
            oxm(Field::VlanPcp, 3)
        ]
    );
    assert_eq!(
        fields("dl_vlan=7,vlan_pcp=1"),
        [vid(0x1007), oxm(Field::VlanPcp, 1)]
    );
    assert_eq!(
        fields("vlan_tci=0x3005"),
        [vid(0x1005), oxm(Field::VlanPcp, 1)]
    );
    assert_eq!(fields("vlan_tci=0x1005/0x1fff"), [vid(0x1005)]);
    assert_eq!(fields("vlan_tci=0"), [vid(0)]);
    assert_eq!(
        fields("vlan_tci=0x0005/0x0fff"),
        [masked(Field::VlanVid, 5, 0x0fff)]
    );
    assert!(err("vlan_tci=0x2000/0xe000").contains("cannot be matched in OpenFlow 1.3"));
    assert!(err("dl_vlan=4096").contains("dl_vlan: 4096 is not a VLAN id"));
}

#[test]
fn other_fields() {
    assert_eq!(fields("ip,nw_tos=32")[1], oxm(Field::IpDscp, 8));
    assert_eq!(
        fields("ip,ip_dscp=10,nw_ecn=2")[1..],
        [oxm(Field::IpDscp, 10), oxm(Field::IpEcn, 2)]
    );
    assert_eq!(
        fields("metadata=0x5/0xff,tun_id=0x10,in_port=LOCAL"),
        [
            oxm(Field::InPort, port::LOCAL.into()),
            masked(Field::Metadata, 5, 0xff),
            oxm(Field::TunnelId, 0x10)
        ]
    );
    assert_eq!(
        fields("in_port=65534")[0],
        oxm(Field::InPort, port::LOCAL.into())
    );
    assert_eq!(
        fields("tcp,tcp_flags=+syn-ack")[2],
        masked(Field::TcpFlags, 0x002, 0x012)
    );
    assert_eq!(
        fields("tcp,tcp_flags=syn|ack")[2],
        oxm(Field::TcpFlags, 0x012)
    );
    assert_eq!(
        fields("tcp,tcp_flags=0x12/0xfff")[2],
        oxm(Field::TcpFlags, 0x012)
    );
    assert_eq!(
        fields("tcp,tcp_flags=-[200]+[800]")[2],
        masked(Field::TcpFlags, 0x800, 0xa00)
    );
    assert_eq!(fields("dl_type=0x88cc"), [oxm(Field::EthType, 0x88cc)]);
}

#[test]
fn port_names_through_the_resolver() {
    let ports = |n: &str| (n == "eth1").then_some(7);
    let fm = parse_flow_with_ports(
        "in_port=eth1,actions=output:eth1,eth1,3",
        FlowModCommand::Add,
        &ports,
    )
    .unwrap();
    assert_eq!(fm.matcher.fields, [oxm(Field::InPort, 7)]);
    assert_eq!(
        fm.instructions,
        [Instruction::ApplyActions(vec![out(7), out(7), out(3)])]
    );
    assert!(err("in_port=eth1,actions=drop").contains("in_port: eth1 is not a port"));
    assert_eq!(err("actions=eth1"), "unknown action eth1");
}

#[test]
fn actions() {
    let ctl = |max_len| Action::Output {
        port: port::CONTROLLER,
        max_len,
    };
    assert_eq!(
        apply(
            "actions=output:1,2,in_port,all,flood,local,normal,controller,controller:100,controller(max_len=9)"
        ),
        [
            out(1),
            out(2),
            out(port::IN_PORT),
            out(port::ALL),
            out(port::FLOOD),
            out(port::LOCAL),
            out(port::NORMAL),
            ctl(0xffff),
            ctl(100),
            ctl(9)
        ]
    );
    assert_eq!(
        apply(
            "ip,actions=mod_dl_src:00:00:00:00:00:01,mod_dl_dst:0:0:0:0:0:2,mod_nw_src:1.2.3.4,mod_nw_dst:5.6.7.8,mod_nw_tos:16"
        ),
        [
            set(Field::EthSrc, 1),
            set(Field::EthDst, 2),
            set(Field::Ipv4Src, 0x0102_0304),
            set(Field::Ipv4Dst, 0x0506_0708),
            set(Field::IpDscp, 4)
        ]
    );
    assert_eq!(
        apply("udp,actions=mod_tp_src:1,mod_tp_dst:2"),
        [set(Field::UdpSrc, 1), set(Field::UdpDst, 2)]
    );
    assert_eq!(apply("tcp,actions=mod_tp_dst:2"), [set(Field::TcpDst, 2)]);
    assert_eq!(
        apply("actions=set_field:00:11:22:33:44:55->eth_src,set_field:0x5->metadata"),
        [
            set(Field::EthSrc, 0x0011_2233_4455),
            set(Field::Metadata, 5)
        ]
    );
    // A tag is pushed for mod_vlan_vid when the packet has none.
    assert_eq!(
        apply("actions=mod_vlan_vid:7,mod_vlan_pcp:3"),
        [
            Action::PushVlan(0x8100),
            set(Field::VlanVid, 0x1007),
            set(Field::VlanPcp, 3)
        ]
    );
    assert_eq!(
        apply("dl_vlan=5,actions=mod_vlan_vid:7,strip_vlan,mod_vlan_pcp:2"),
        [
            set(Field::VlanVid, 0x1007),
            Action::PopVlan,
            Action::PushVlan(0x8100),
            set(Field::VlanPcp, 2)
        ]
    );
    assert_eq!(
        apply("ip,actions=push_vlan:0x8100,pop_vlan,dec_ttl,set_nw_ttl:5,group:3,set_queue:2"),
        [
            Action::PushVlan(0x8100),
            Action::PopVlan,
            Action::DecNwTtl,
            Action::SetNwTtl(5),
            Action::Group(3),
            Action::SetQueue(2)
        ]
    );
}

#[test]
fn instructions_in_openflow_order() {
    let fm = add(
        "ip,actions=meter:2,output:1,clear_actions,write_actions(output:3,group:1),write_metadata:0x5/0xff,goto_table:3",
    );
    assert_eq!(
        fm.instructions,
        [
            Instruction::Meter(2),
            Instruction::ApplyActions(vec![out(1)]),
            Instruction::ClearActions,
            Instruction::WriteActions(vec![out(3), Action::Group(1)]),
            Instruction::WriteMetadata {
                metadata: 5,
                mask: 0xff
            },
            Instruction::GotoTable(3),
        ]
    );
    assert_eq!(
        add("actions=write_metadata:0x7").instructions,
        [Instruction::WriteMetadata {
            metadata: 7,
            mask: u64::MAX
        }]
    );
    assert_eq!(
        add("actions=goto_table:1").instructions,
        [Instruction::GotoTable(1)]
    );
    assert_eq!(
        err("actions=goto_table:1,output:1"),
        "invalid instruction ordering: apply_actions must appear before goto_table, for OpenFlow 1.1+ compatibility"
    );
    assert!(
        err("actions=write_actions(output:1),clear_actions")
            .contains("clear_actions must appear before write_actions")
    );
    assert!(err("actions=goto_table:1,goto_table:2").contains("only once"));
}

#[test]
fn errors_name_the_field_and_value() {
    assert_eq!(
        err("ip,nw_dst=10.0.0.300,actions=drop"),
        "nw_dst: 10.0.0.300 is not an IPv4 address"
    );
    assert_eq!(err("foo=1,actions=drop"), "unknown keyword foo");
    assert_eq!(err("ip,actions=frobnicate"), "unknown action frobnicate");
    assert_eq!(
        err("tp_dst=80,actions=drop"),
        "tp_dst: prerequisites not met: needs tcp, udp or sctp (or their ip6 forms)"
    );
    assert_eq!(
        err("ip,udp_dst=80,actions=drop"),
        "udp_dst: prerequisites not met: needs udp or udp6"
    );
    assert_eq!(
        err("nw_src=1.2.3.4,actions=drop"),
        "ip_src: prerequisites not met: needs ip"
    );
    assert!(err("icmp_type=3,actions=drop").contains("icmp_type: prerequisites not met"));
    assert!(
        err("icmp6,nd_sll=00:00:00:00:00:01,actions=drop")
            .contains("nd_sll: prerequisites not met")
    );
    assert!(err("vlan_pcp=3,vlan_vid=5,actions=drop").contains("vlan_pcp: prerequisites not met"));
    assert_eq!(err("ip"), "must specify an action");
    assert_eq!(
        err("cookie=1/1,actions=drop"),
        "flow additions cannot use a cookie mask"
    );
    assert_eq!(err("out_port=1,actions=drop"), "unknown keyword out_port");
    assert!(err("rarp,actions=drop").contains("rarp: not supported"));
    assert_eq!(
        err("nw_proto=256,actions=drop"),
        "nw_proto: 256 is not a 8-bit number"
    );
    assert_eq!(
        err("dl_src=00:11:22:33:44,actions=drop"),
        "dl_src: 00:11:22:33:44 is not an Ethernet address"
    );
    assert!(
        err("ip,actions=set_field:1.2.3.4/255.255.0.0->ip_dst")
            .contains("masked set_field cannot be encoded in OpenFlow 1.3")
    );
    assert!(
        err("actions=set_field:1->icmpv9_code")
            .contains("icmpv9_code is not a valid OXM field name")
    );
    assert!(
        err("actions=set_field:00:00:00:00:00:01->eth_src,mod_tp_dst:1")
            .contains("mod_tp_dst: prerequisites not met")
    );
    assert!(err("actions=set_field:1.2.3.4->ip_src").contains("ip_src: prerequisites not met"));
    assert!(err("actions=set_field:5->vlan_vid").contains("vlan_vid: prerequisites not met"));
    assert!(err("ip,actions=mod_nw_tos:5").contains("mod_nw_tos: 5 is not a valid TOS"));
    assert!(err("actions=output:1,drop").contains("drop must be the only action"));
    assert!(err("actions=write_actions(output:1").contains("unbalanced"));
    assert!(err("actions=controller(reason=no_match)").contains("only max_len"));
    assert!(err("tcp,tcp_flags=+syn+syn,actions=drop").contains("tcp_flags"));
    assert!(err("in_port=1/1,actions=drop").contains("takes none"));
    assert!(parse_flow("ip,actions=drop", FlowModCommand::Delete).is_err());
}
