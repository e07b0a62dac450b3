//! Our flow parser and printer against the real `ovs-ofctl` (Open vSwitch
//! 3.1): for each flow text, `ovs-ofctl -O OpenFlow13 parse-flow` prints
//! its canonical form; ours must print the same match and actions and
//! read the same table, priority, cookie, timeouts and flags.

use openflow::{FlowModCommand, flow_flags, format_actions, format_match, parse_flow};
use std::time::Duration;

use testkit::tool::{OVS_OFCTL, run_with_timeout};

const FLOWS: &[&str] = &[
    "tcp,nw_dst=10.0.0.0/8,tp_dst=80,actions=output:2",
    "priority=100,in_port=1,dl_src=00:11:22:33:44:55,actions=drop",
    "table=1,cookie=0x5,idle_timeout=10,hard_timeout=20,send_flow_rem,ip,nw_src=1.2.3.4,actions=goto_table:2",
    "udp6,ipv6_dst=fe80::/10,tp_dst=53,actions=controller",
    "dl_vlan=5,actions=strip_vlan,output:1",
    "vlan_tci=0x1005/0x1fff,actions=mod_vlan_vid:7,output:1",
    "nw_tos=32,ip,actions=mod_nw_tos:16,normal",
    "tcp,tcp_flags=+syn-ack,actions=flood",
    "arp,arp_spa=10.0.0.0/24,arp_op=1,actions=all,local,in_port",
    "ip,actions=output:1,clear_actions,write_actions(output:3,group:1),write_metadata:0x5/0xff,goto_table:3",
    "ip,actions=set_field:00:11:22:33:44:55->eth_src,group:3,set_queue:2,dec_ttl,set_nw_ttl:5,push_vlan:0x8100,controller:100",
    "metadata=0x5/0xff,tun_id=0x10,actions=drop",
    "vlan_vid=5,actions=drop",
    "vlan_vid=0x1000/0x1000,actions=drop",
    "dl_vlan=0xffff,actions=drop",
    "vlan_tci=0,actions=drop",
    "dl_vlan_pcp=3,actions=drop",
    "dl_vlan=3,dl_vlan_pcp=3,actions=drop",
    "vlan_tci=0x3005,actions=drop",
    "ip,nw_src=10.0.0.0/255.255.0.0,nw_dst=10.1.2.3/255.0.255.0,actions=drop",
    "dl_dst=01:00:00:00:00:00/01:00:00:00:00:00,dl_src=00:11:22:33:44:55/ff:ff:ff:00:00:00,actions=drop",
    "ipv6,ipv6_src=2001:db8::1/64,ipv6_label=0x12345,actions=drop",
    "icmp6,icmp_type=135,nd_target=2001:db8::1,nd_sll=00:11:22:33:44:55,actions=drop",
    "icmp6,icmp_type=136,nd_tll=00:11:22:33:44:55,actions=drop",
    "sctp,tp_src=1,tp_dst=2,actions=drop",
    "udp,udp_src=1,udp_dst=2,actions=mod_tp_src:1,mod_tp_dst:2",
    "tcp,tcp_src=1,tcp_dst=0x10/0xf0,actions=mod_tp_dst:8080",
    "tcp,tcp_flags=0x12/0x3f,actions=drop",
    "ip,nw_proto=47,nw_ecn=2,ip_dscp=10,actions=drop",
    "arp,arp_sha=00:11:22:33:44:55,arp_tha=00:00:00:00:00:01,arp_tpa=1.2.3.4,arp_op=2,actions=set_field:2->arp_op",
    "dl_type=0x88cc,actions=drop",
    "eth_type=0x0800,ip_proto=6,actions=drop",
    "icmpv6_type=3,icmpv6_code=1,icmp6,actions=drop",
    "icmp,icmp_type=8,icmp_code=0,nw_src=1.2.3.4,actions=set_field:3->icmp_type",
    "tcp,tcp_flags=0x12,actions=drop",
    "tcp6,tcp_flags=+cwr+ece-ns,actions=drop",
    "ip,actions=mod_dl_src:00:11:22:33:44:55,mod_dl_dst:00:11:22:33:44:66,mod_nw_src:1.2.3.4,mod_nw_dst:5.6.7.8",
    "actions=mod_vlan_vid:7,mod_vlan_pcp:3",
    "dl_vlan=5,actions=mod_vlan_vid:7,pop_vlan,mod_vlan_pcp:2",
    "ipv6,actions=set_field:2001:db8::1->ipv6_src,set_field:0x12345->ipv6_label",
    "in_port=LOCAL,actions=controller(max_len=100),CONTROLLER:65535,output:in_port",
    "arp,nw_src=1.2.3.4,nw_proto=2,actions=drop",
    "ipv6,ipv6_dst=2001:db8::/ffff:ffff::,ipv6_label=0x5/0xf,actions=drop",
    "tun_id=0x5/0xff,metadata=0x10,actions=set_field:0x5->tun_id,set_field:LOCAL->in_port",
    "mpls,mpls_label=5,mpls_tc=3,mpls_bos=1,actions=set_field:10->mpls_label",
    "actions=meter:3,output:1",
    "ip,actions=write_actions(set_field:1.2.3.4->ip_src,output:1)",
    "icmp6,icmp_type=135,nd_target=2001:db8::/64,actions=drop",
    "check_overlap,reset_counts,no_packet_counts,no_byte_counts,priority=0,actions=drop",
    "tcp,tcp_flags=0,actions=drop",
    "ipv6,ipv6_src=::ffff:1.2.3.4,ipv6_dst=2001:db8:0:0:1:0:0:1,actions=drop",
    "udp,tp_src=0x50/0xfff0,in_port=7,actions=output:65534",
    "tcp6,ipv6_src=2001:db8::/32,tp_dst=443,tcp_flags=+syn,actions=output:3,goto_table:4",
    "dl_src=aa:bb:cc:dd:ee:ff,dl_dst=ff:ff:ff:ff:ff:ff,arp,arp_tpa=10.0.0.1,actions=NORMAL",
    // Nicira extensions: registers, resubmit, load, move, note.
    "reg0=5,reg15=0x5/0xff,reg3=0x10,actions=drop",
    "ip,reg1=0x7,tun_id=0x1,actions=resubmit(,3),resubmit:2,resubmit(IN_PORT,4),resubmit(1,2)",
    "actions=load:0x5->NXM_NX_REG0[0..15],load:0x1->reg2[1],load:0->NXM_OF_VLAN_TCI[],load:0x5->OXM_OF_METADATA[0..3]",
    "actions=move:NXM_OF_IN_PORT[]->NXM_NX_REG0[0..15],move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],move:reg0[0..15]->reg1[16..31]",
    "ip,actions=move:OXM_OF_IPV4_SRC[]->reg0[],move:NXM_OF_IP_SRC[0..7]->NXM_NX_REG0[8..15],load:7->NXM_OF_IP_DST[]",
    "actions=note:01.02.03,note:,note:0102030405060708,set_field:5->reg1,load:0x5->OXM_OF_IN_PORT[]",
    "table=2 actions=learn(table=10, NXM_OF_VLAN_TCI[0..11], NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[], load:NXM_OF_IN_PORT[]->NXM_NX_REG0[0..15]), resubmit(,3)",
    "ip,actions=learn(table=1,idle_timeout=10,hard_timeout=20,priority=5,cookie=0x9,fin_idle_timeout=2,fin_hard_timeout=3,send_flow_rem,delete_learned,dl_type=0x800,NXM_OF_IP_PROTO[]=6,NXM_OF_IP_SRC[]=NXM_OF_IP_DST[],load:0x5->NXM_NX_REG1[],output:NXM_OF_IN_PORT[])",
    "actions=learn(NXM_OF_ETH_SRC[]=NXM_OF_ETH_DST[],load:NXM_NX_REG0[]->NXM_NX_REG1[],NXM_NX_REG2[0..3]=0x5,in_port=99)",
    "actions=learn(eth_type=0x800,ip_dst=10.0.0.1,reg3=5,nw_proto=17,load:0->NXM_NX_REG4[])",
];

/// `ovs-ofctl -O OpenFlow13 parse-flow FLOW`'s flow-mod line after
/// `ADD `, killed after 10 s.
fn ovs_parse(flow: &str) -> String {
    let out = run_with_timeout(
        OVS_OFCTL
            .command()
            .args(["-O", "OpenFlow13", "parse-flow", flow]),
        Duration::from_secs(10),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "ovs-ofctl rejects {flow:?}: {err}");
    let out = String::from_utf8_lossy(&out.stdout);
    let line = out
        .lines()
        .find(|l| l.starts_with("OFPT_FLOW_MOD"))
        .unwrap_or_else(|| panic!("no flow-mod printed for {flow:?}: {out}"));
    line.split_once(" ADD ")
        .expect("an ADD flow-mod")
        .1
        .to_string()
}

/// What ovs-ofctl printed, taken apart.
#[derive(Debug, Default, PartialEq)]
struct Printed {
    table: u8,
    cookie: u64,
    idle: u16,
    hard: u16,
    flags: u16,
    priority: u16,
    matcher: String,
    actions: String,
}

fn take_apart(text: &str) -> Printed {
    let text = format!(" {text}");
    let (head, actions) = text.split_once(" actions=").expect("actions printed");
    let mut p = Printed {
        priority: 0x8000,
        actions: format!("actions={actions}"),
        ..Printed::default()
    };
    for word in head.split_whitespace() {
        let num = |s: &str| {
            let s = s.trim_start_matches("0x");
            u64::from_str_radix(s, if word.starts_with("cookie") { 16 } else { 10 }).unwrap()
        };
        match word.split_once(':') {
            Some(("table", v)) => p.table = num(v) as u8,
            Some(("cookie", v)) => p.cookie = num(v),
            Some(("idle", v)) => p.idle = num(v) as u16,
            Some(("hard", v)) => p.hard = num(v) as u16,
            _ => match word {
                "send_flow_rem" => p.flags |= flow_flags::SEND_FLOW_REM,
                "check_overlap" => p.flags |= flow_flags::CHECK_OVERLAP,
                "reset_counts" => p.flags |= flow_flags::RESET_COUNTS,
                "no_packet_counts" => p.flags |= flow_flags::NO_PKT_COUNTS,
                "no_byte_counts" => p.flags |= flow_flags::NO_BYT_COUNTS,
                m => {
                    let rest = match m.strip_prefix("priority=") {
                        Some(r) => {
                            let (n, rest) = r.split_once(',').unwrap_or((r, ""));
                            p.priority = n.parse().unwrap();
                            rest
                        }
                        None => m,
                    };
                    p.matcher = rest.to_string();
                }
            },
        }
    }
    p
}

#[test]
fn parse_and_print_agree_with_ovs_ofctl() {
    if !OVS_OFCTL.available("ovs-ofctl parse-flow") {
        return;
    }
    let mut failures = Vec::new();
    for flow in FLOWS {
        let ovs = take_apart(&ovs_parse(flow));
        let fm = parse_flow(flow, FlowModCommand::Add)
            .unwrap_or_else(|e| panic!("we reject {flow:?}: {e}"));
        let ours = Printed {
            table: fm.table_id,
            cookie: fm.cookie,
            idle: fm.idle_timeout,
            hard: fm.hard_timeout,
            flags: fm.flags,
            priority: fm.priority,
            matcher: format_match(&fm.matcher),
            actions: format_actions(&fm.instructions),
        };
        if ours != ovs {
            failures.push(format!("{flow}\n  ovs:  {ovs:?}\n  ours: {ours:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
