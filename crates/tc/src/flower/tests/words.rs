//! Bad words refused with tc's words, and the text `tc filter show`
//! prints for rules of every kind of key.

use super::*;

#[test]
fn bad_words_are_refused_with_tcs_words() {
    let cases: &[(u16, &str, &str)] = &[
        (IP, "bogus", "What is \"bogus\"?"),
        (IP, "actions drop", "What is \"actions\"?"),
        (0x0003, "ip_proto tcp", "Illegal \"eth_type\" for ip proto"),
        (IPV6, "ip_proto icmp", "Illegal \"eth_type\" for ip proto"),
        (IP, "ip_proto 0x100", "Illegal \"ip_proto\""),
        (
            IP,
            "dst_port 80",
            "Illegal \"dst_port\": it needs ip_proto tcp, udp or sctp",
        ),
        (IP, "ip_proto icmp src_port 80", "Illegal \"src_port\""),
        (IP, "ip_proto tcp dst_port 0", "Illegal \"dst_port\""),
        (
            IP,
            "ip_proto tcp dst_port 20-10",
            "max value should be greater than min value",
        ),
        (IP, "ip_proto tcp dst_port 70000", "Illegal \"dst_port\""),
        (IP, "dst_ip 10.0.0.300", "Illegal \"dst_ip\""),
        (IP, "dst_ip 2001:db8::1", "Illegal \"dst_ip\""),
        (IP, "src_ip 10.0.0.0/33", "Illegal \"src_ip\""),
        (IP, "src_ip 10.0.0.0/255.0.255.0", "contiguous"),
        (
            0x0003,
            "src_ip 10.0.0.1",
            "Illegal \"src_ip\": it needs protocol ip or ipv6",
        ),
        (IP, "dst_mac 02:00:00:00:00", "Illegal \"dst_mac\""),
        (IP, "src_mac 02:00:00:00:00:01/49", "Illegal \"src_mac\""),
        (
            IP,
            "vlan_id 5",
            "Can't set \"vlan_id\" if ethertype isn't 802.1Q or 802.1AD",
        ),
        (0x8100, "vlan_id 4096", "Illegal \"vlan_id\""),
        (0x8100, "vlan_prio 8", "Illegal \"vlan_prio\""),
        (0x8100, "cvlan_id 5", "Can't set \"cvlan_id\""),
        (0x8100, "vlan_ethtype nope", "invalid vlan_ethtype"),
        (
            IP,
            "mpls_label 5",
            "Can't set \"mpls_label\" if ethertype isn't MPLS",
        ),
        (0x8847, "mpls_label 1048576", "Illegal \"mpls_label\""),
        (0x8847, "mpls_tc 8", "Illegal \"mpls_tc\""),
        (0x8847, "mpls lse label 5", "\"depth\" is required"),
        (0x8847, "mpls lse depth 8", "Invalid MPLS depth"),
        (
            0x8847,
            "mpls_ttl 5 mpls lse depth 1",
            "Can't set \"mpls\" if",
        ),
        (0x8847, "mpls lse depth 1 lse depth 1", "given twice"),
        (IP, "ip_proto tcp tcp_flags 0x1000", "Illegal \"tcp_flags\""),
        (IP, "ip_tos 256", "Illegal \"ip_tos\""),
        (IP, "ip_proto tcp type 8", "Illegal \"icmp type\""),
        (IP, "ip_proto icmp code 300", "Illegal \"icmp code\""),
        (
            IP,
            "arp_op request",
            "Illegal \"arp_op\": it needs protocol arp or rarp",
        ),
        (0x0806, "arp_op 3", "Illegal \"arp_op\""),
        (0x0806, "arp_tip 10.0.0.0/40", "Illegal \"arp_tip\""),
        (IP, "ip_flags fragile", "Illegal \"ip_flags\""),
        (
            IP,
            "ct_state +trk",
            "ct_state: sluice has no connection tracking",
        ),
        (IP, "ct_zone 1", "connection tracking"),
        (IP, "ct_mark 1", "connection tracking"),
        (
            IP,
            "enc_dst_ip 10.0.0.1",
            "enc_dst_ip: sluice has no tunnel metadata",
        ),
        (IP, "enc_key_id 5", "tunnel metadata"),
        (IP, "geneve_opts 0102:80:00880022", "tunnel metadata"),
        (IP, "classid", "Command line is not complete"),
        (IP, "classid 1:10000", "Illegal \"classid\""),
        (IP, "hw_tc 16", "TC index exceeds max range"),
        (IP, "indev", "Command line is not complete"),
        (IP, "indev v9", "Network device not found"),
        (IP, "action bogus", "Illegal \"action\""),
        (IP, "num_of_vlans 1", "num_of_vlans"),
    ];
    for (proto, words, want) in cases {
        let (mut f, mut a) = (Flower::new(*proto), Actions::default());
        let e = add(&mut f, &mut a, None, words).unwrap_err();
        assert!(e.contains(want), "{words}: {e}");
        assert_eq!(f.rules().count(), 0);
    }
    let (mut f, mut a) = (Flower::new(IP), Actions::default());
    assert_eq!(
        add(&mut f, &mut a, Some("x"), "").unwrap_err(),
        "Illegal \"handle\""
    );
    // Keywords go by prefix, in tc's order.
    add(&mut f, &mut a, None, "ip_p udp dst_p 53 cl 1:1").unwrap();
    assert_eq!(f.rule(1).unwrap().classid, 0x1_0001);
}

#[test]
fn show_prints_what_f_flower_c_prints() {
    let (mut f, mut a) = (Flower::new(IP), Actions::default());
    f.set_device("v1", 3);
    for r in [
        "ip_proto tcp src_ip 10.0.0.1 dst_ip 10.1.0.0/16 src_port 1000 dst_port 80 classid 1:1",
        "indev v1 dst_mac 02:00:00:00:00:0d/ff:ff:ff:00:00:ff src_mac 02:00:00:00:00:00/40 ip_proto udp dst_port 1000-2000 skip_hw action drop",
        "ip_tos 0x10/0xfc ip_ttl 64 ip_flags frag/nofirstfrag classid 1:3",
        "ip_proto tcp tcp_flags 0x2/0x12 dst_port 0x1000/0xf000 hw_tc 3",
        "ip_proto icmp type 8 code 0/15 dst_ip 10.0.0.0/255.255.255.0",
    ] {
        add(&mut f, &mut a, None, r).unwrap();
    }
    let want = [
        "handle 0x1 classid 1:1 \n  eth_type ipv4\n  ip_proto tcp\n  dst_ip 10.1.0.0/16\n  src_ip 10.0.0.1\n  dst_port 80\n  src_port 1000\n  not_in_hw",
        "handle 0x2 \n  indev v1\n  dst_mac 02:00:00:00:00:0d/ff:ff:ff:00:00:ff\n  src_mac 02:00:00:00:00:00/40\n  eth_type ipv4\n  ip_proto udp\n  dst_port 1000-2000\n  skip_hw\n  not_in_hw\n\taction order 1: gact action drop\n\tindex 1 ref 1 bind 1\n",
        "handle 0x3 classid 1:3 \n  eth_type ipv4\n  ip_tos 16/0xfc\n  ip_ttl 64\n  ip_flags frag/nofirstfrag\n  not_in_hw",
        "handle 0x4 hw_tc 3 \n  eth_type ipv4\n  ip_proto tcp\n  dst_port 4096/0xf000\n  tcp_flags 0x2/12\n  not_in_hw",
        "handle 0x5 \n  eth_type ipv4\n  ip_proto icmp\n  dst_ip 10.0.0.0/24\n  icmp_type 8\n  icmp_code 0/15\n  not_in_hw",
    ];
    assert_eq!(f.show(&a, false), want);
    let j = f.json(&a, false);
    assert_eq!(j[0]["handle"], 1);
    assert_eq!(j[0]["classid"], "1:1");
    assert_eq!(j[0]["keys"]["dst_ip"], "10.1.0.0/16");
    assert_eq!(j[0]["keys"]["dst_port"], 80);
    assert_eq!(
        j[1]["keys"]["dst_port"],
        serde_json::json!({"start": 1000, "end": 2000})
    );
    assert_eq!(j[1]["skip_hw"], true);
    assert_eq!(j[1]["actions"][0]["kind"], "gact");
    assert_eq!(j[2]["keys"]["ip_tos"], 16);
    assert_eq!(j[2]["keys"]["ip_tos_mask"], "fc");
    assert_eq!(
        j[2]["keys"]["ip_flags"],
        serde_json::json!({"frag": true, "firstfrag": false})
    );
    assert_eq!(j[3]["hw_tc"], 3);
    assert_eq!(j[4]["keys"]["icmp_code"], "0/15");
    assert_eq!(j[4]["not_in_hw"], true);

    let (mut v, mut a) = flower(
        0x8100,
        &[
            "vlan_id 100 vlan_prio 5 vlan_ethtype ip ip_proto udp dst_ip 10.0.0.1",
            "vlan_id 300 vlan_ethtype 802.1q cvlan_id 7 cvlan_prio 1 cvlan_ethtype ipv6",
        ],
    );
    add(&mut v, &mut a, None, "vlan_id 400").unwrap();
    assert_eq!(
        v.show(&a, false),
        [
            "handle 0x1 \n  vlan_id 100\n  vlan_prio 5\n  vlan_ethtype ip\n  eth_type ipv4\n  ip_proto udp\n  dst_ip 10.0.0.1\n  not_in_hw",
            "handle 0x2 \n  vlan_id 300\n  vlan_ethtype 802.1Q\n  cvlan_id 7\n  cvlan_prio 1\n  cvlan_ethtype ipv6\n  eth_type ipv6\n  not_in_hw",
            "handle 0x3 \n  vlan_id 400\n  not_in_hw",
        ]
    );
    let (m, a) = flower(
        0x8847,
        &[
            "mpls_label 100 mpls_tc 3 mpls_bos 1 mpls_ttl 64",
            "mpls lse depth 1 label 5 lse depth 2 ttl 9 bos 1",
        ],
    );
    assert_eq!(
        m.show(&a, false),
        [
            "handle 0x1 \n  eth_type 8847\n  mpls_label 100\n  mpls_tc 3\n  mpls_bos 1\n  mpls_ttl 64\n  not_in_hw",
            "handle 0x2 \n  eth_type 8847\n  mpls\n    lse depth 1 label 5\n    lse depth 2 bos 1 ttl 9\n  not_in_hw",
        ]
    );
    assert_eq!(
        m.json(&a, false)[1]["keys"]["mpls"][1],
        serde_json::json!({"depth": 2, "bos": 1, "ttl": 9})
    );
    let (arp, a) = flower(
        0x0806,
        &[
            "arp_op reply arp_sip 10.0.0.1 arp_tip 10.0.0.0/8 arp_tha 02:00:00:00:00:05",
            "arp_op 1/1",
        ],
    );
    assert_eq!(
        arp.show(&a, false),
        [
            "handle 0x1 \n  eth_type arp\n  arp_sip 10.0.0.1\n  arp_tip 10.0.0.0/8\n  arp_op reply\n  arp_tha 02:00:00:00:00:05\n  not_in_hw",
            "handle 0x2 \n  eth_type arp\n  arp_op 1/1\n  not_in_hw",
        ]
    );
    // Under `protocol all`: no eth_type, and a rule without keys;
    // `ip_tos` is dropped there as the kernel drops it, so a second rule
    // with only that is the first one again.
    let (mut all, mut a) = flower(0x0003, &["", "ip_tos 4 dst_mac 02:00:00:00:00:01 skip_sw"]);
    assert!(
        add(&mut all, &mut a, None, "ip_tos 4")
            .unwrap_err()
            .contains("File exists")
    );
    assert_eq!(
        all.show(&a, false),
        [
            "handle 0x1 \n  not_in_hw",
            "handle 0x2 \n  dst_mac 02:00:00:00:00:01\n  skip_sw\n  not_in_hw"
        ]
    );
}
