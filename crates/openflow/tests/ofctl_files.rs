//! ovs-ofctl flows files, groups, and printing: the dump-flows line and
//! flows printed back as add-flow text.

use openflow::*;

fn add(text: &str) -> FlowMod {
    parse_flow(text, FlowModCommand::Add).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn out(port: u32) -> Action {
    Action::Output { port, max_len: 0 }
}

fn set(field: Field, value: u128) -> Action {
    Action::SetField(Oxm {
        field,
        value,
        mask: None,
    })
}

#[test]
fn flows_files() {
    let text = "# comment\n\n  tcp,tp_dst=80 actions=output:1\nmodify_strict priority=7,ip actions=drop\ndelete ip\n";
    let flows = parse_flows_file(text).unwrap();
    assert_eq!(flows.len(), 3);
    assert_eq!(
        flows[0].instructions,
        [Instruction::ApplyActions(vec![out(1)])]
    );
    assert_eq!(
        (flows[1].command, flows[1].priority),
        (FlowModCommand::ModifyStrict, 7)
    );
    assert_eq!(flows[2].command, FlowModCommand::Delete);
    let e =
        parse_flows_file("ip,actions=drop\n# x\nip,nw_dst=1.2.3.999,actions=drop\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 3: nw_dst: 1.2.3.999 is not an IPv4 address"
    );
    assert!(matches!(e, OfctlError::Line { line: 3, .. }));
}

#[test]
fn groups() {
    let g = parse_group(
        "group_id=1,type=select,bucket=output:1,bucket=weight:10,watch_port:2,actions=output:2,mod_vlan_vid:5",
        GroupModCommand::Add,
    )
    .unwrap();
    let b = |weight, watch_port, actions| Bucket {
        weight,
        watch_port,
        watch_group: group::ANY,
        actions,
    };
    assert_eq!(
        g,
        GroupMod {
            command: GroupModCommand::Add,
            group_type: GroupType::Select,
            group_id: 1,
            buckets: vec![
                b(1, port::ANY, vec![out(1)]),
                b(10, 2, vec![out(2), set(Field::VlanVid, 0x1005)]),
            ],
        }
    );
    let ff = parse_group(
        "group_id=2,type=ff,bucket=watch_port=3,actions=output:3",
        GroupModCommand::Modify,
    )
    .unwrap();
    assert_eq!(
        (
            ff.group_type,
            ff.buckets[0].watch_port,
            ff.buckets[0].weight
        ),
        (GroupType::FastFailover, 3, 0)
    );
    let del = parse_group("", GroupModCommand::Delete).unwrap();
    assert_eq!(del.group_id, group::ALL);
    assert!(parse_group("type=all,bucket=output:1", GroupModCommand::Add).is_err());
    assert!(parse_group("group_id=1,type=fancy", GroupModCommand::Add).is_err());
    assert_eq!(
        format_group(&g),
        "group_id=1,type=select,bucket=weight:1,actions=output:1,bucket=weight:10,watch_port:2,actions=output:2,set_field:4101->vlan_vid"
    );
    assert_eq!(
        parse_group(&format_group(&g), GroupModCommand::Add).unwrap(),
        g
    );
}

#[test]
fn printing() {
    let fm = add("tcp,nw_dst=10.0.0.0/255.0.0.0,tp_dst=80,dl_vlan=5,actions=output:2,goto_table:1");
    assert_eq!(
        format_match(&fm.matcher),
        "tcp,dl_vlan=5,nw_dst=10.0.0.0/8,tp_dst=80"
    );
    assert_eq!(
        format_actions(&fm.instructions),
        "actions=output:2,goto_table:1"
    );
    assert_eq!(format_actions(&[]), "actions=drop");
    assert_eq!(format_match(&Match::default()), "");
    let ip = add("ip,nw_proto=47,nw_tos=40,actions=drop");
    assert_eq!(format_match(&ip.matcher), "ip,nw_proto=47,nw_tos=40");
    let fs = FlowStats {
        table_id: 0,
        duration_sec: 1,
        duration_nsec: 500_000_000,
        priority: 100,
        idle_timeout: 10,
        hard_timeout: 0,
        flags: flow_flags::SEND_FLOW_REM,
        cookie: 0,
        packet_count: 3,
        byte_count: 180,
        matcher: fm.matcher.clone(),
        instructions: fm.instructions.clone(),
    };
    assert_eq!(
        format_flow_stats(&fs),
        "cookie=0x0, duration=1.500s, table=0, n_packets=3, n_bytes=180, idle_timeout=10, send_flow_rem priority=100,tcp,dl_vlan=5,nw_dst=10.0.0.0/8,tp_dst=80 actions=output:2,goto_table:1"
    );
    let bare = FlowStats {
        duration_nsec: 1,
        priority: 0x8000,
        idle_timeout: 0,
        flags: 0,
        matcher: Match::default(),
        instructions: vec![],
        ..fs
    };
    assert_eq!(
        format_flow_stats(&bare),
        "cookie=0x0, duration=1.000000001s, table=0, n_packets=3, n_bytes=180, actions=drop"
    );
    let fm = add(
        "table=3,priority=7,cookie=0x9,idle_timeout=1,hard_timeout=2,send_flow_rem,no_byte_counts,udp,tp_src=5,actions=output:1",
    );
    assert_eq!(add(&format_flow(&fm)), fm);
    let del = parse_flow(
        "table=2,cookie=0x1/0x3,out_port=LOCAL,out_group=all,ip",
        FlowModCommand::DeleteStrict,
    )
    .unwrap();
    assert_eq!(
        format_flow(&del),
        "table=2,cookie=0x1/0x3,out_port=LOCAL,out_group=all,ip"
    );
    assert_eq!(
        parse_flow(&format_flow(&del), FlowModCommand::DeleteStrict).unwrap(),
        del
    );
}
