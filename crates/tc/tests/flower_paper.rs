//! The paper's "flower with 5 tuples" example: many 5-tuple rules (source
//! and destination address, protocol, ports) each with its class, added
//! with tc's own lines through `Config::run_batch`, and frames classified
//! to their class; frames no rule names go on unmatched.

use runtime::TcAction;
use tc::{ClsactHook, Config, ShowOptions, Skb};

/// A TCP or UDP frame over IPv4.
fn frame(proto: u8, src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 20 + 20];
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[14 + 8] = 64;
    f[14 + 9] = proto;
    f[14 + 12..14 + 16].copy_from_slice(&src);
    f[14 + 16..14 + 20].copy_from_slice(&dst);
    f[34..36].copy_from_slice(&sport.to_be_bytes());
    f[36..38].copy_from_slice(&dport.to_be_bytes());
    f[34 + 12] = 0x50;
    f
}

/// Rule `n`'s five tuple.
fn tuple(n: u32) -> (u8, [u8; 4], [u8; 4], u16, u16) {
    let proto = if n.is_multiple_of(2) { 6 } else { 17 };
    let src = [10, 0, (n >> 8) as u8, n as u8];
    let dst = [192, 168, (n % 7) as u8, (n % 251) as u8];
    (proto, src, dst, 1024 + n as u16, 80 + (n % 5) as u16)
}

const RULES: u32 = 500;

fn config() -> Config {
    let mut batch = String::from("qdisc add dev v0 clsact\n");
    for n in 1..=RULES {
        let (proto, src, dst, sport, dport) = tuple(n);
        let p = if proto == 6 { "tcp" } else { "udp" };
        let ip = |a: [u8; 4]| format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3]);
        batch += &format!(
            "filter add dev v0 ingress protocol ip prio 1 flower ip_proto {p} \
             src_ip {} dst_ip {} src_port {sport} dst_port {dport} classid 1:{n:x}\n",
            ip(src),
            ip(dst)
        );
    }
    let mut c = Config::default();
    c.run_batch(&batch, ShowOptions::default()).unwrap();
    c
}

#[test]
fn five_tuple_rules_classify_to_their_class() {
    let mut c = config();
    for n in 1..=RULES {
        let (proto, src, dst, sport, dport) = tuple(n);
        let mut skb = Skb::from_frame(&frame(proto, src, dst, sport, dport), 1);
        let out = c.classify("v0", ClsactHook::Ingress, &mut skb);
        assert_eq!(
            (out.verdict, out.classid),
            (TcAction::Ok, 0x1_0000 | n),
            "rule {n}"
        );
    }
    // One field off, each in turn: no rule.
    let (proto, src, dst, sport, dport) = tuple(42);
    for (p, s, d, sp, dp) in [
        (17, src, dst, sport, dport),
        (proto, [10, 0, 0, 43], dst, sport, dport),
        (proto, src, [192, 168, 0, 1], sport, dport),
        (proto, src, dst, sport + 1, dport),
        (proto, src, dst, sport, dport + 1),
    ] {
        let mut skb = Skb::from_frame(&frame(p, s, d, sp, dp), 1);
        let out = c.classify("v0", ClsactHook::Ingress, &mut skb);
        assert_eq!((out.verdict, out.classid), (TcAction::Unspec, 0));
    }
    // An IPv6 frame passes the `protocol ip` filter by.
    let mut v6 = vec![0u8; 14 + 40];
    v6[12..14].copy_from_slice(&[0x86, 0xdd]);
    let out = c.classify("v0", ClsactHook::Ingress, &mut Skb::from_frame(&v6, 1));
    assert_eq!(out.verdict, TcAction::Unspec);
}

#[test]
fn the_rules_show_as_tc_prints_them_and_bad_ones_change_nothing() {
    let mut c = config();
    let shown = c
        .run(
            &["filter", "show", "dev", "v0", "ingress"],
            ShowOptions::default(),
        )
        .unwrap();
    let (_, src, dst, sport, dport) = tuple(1);
    let first = format!(
        "filter protocol ip pref 1 flower chain 0 \n\
         filter protocol ip pref 1 flower chain 0 handle 0x1 classid 1:1 \n  \
         eth_type ipv4\n  ip_proto udp\n  dst_ip {}.{}.{}.{}\n  src_ip {}.{}.{}.{}\n  \
         dst_port {dport}\n  src_port {sport}\n  not_in_hw\n",
        dst[0], dst[1], dst[2], dst[3], src[0], src[1], src[2], src[3]
    );
    assert!(shown.starts_with(&first), "{}", &shown[..400]);
    assert_eq!(shown.matches("handle 0x").count(), RULES as usize);
    // A rule the same as one there is refused; a bad one names its word;
    // neither changes anything.
    let e = c
        .run_batch(
            "filter add dev v0 ingress protocol ip prio 1 flower ip_proto udp src_ip 10.0.0.1 \
             dst_ip 192.168.1.1 src_port 1025 dst_port 81",
            ShowOptions::default(),
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("File exists"), "{e}");
    let e = c
        .run_batch(
            "filter add dev v0 ingress protocol ip prio 1 flower ip_proto udp dst_port 80 sport 1",
            ShowOptions::default(),
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("What is \"sport\"?"), "{e}");
    let e = c
        .run_batch(
            "filter add dev v0 ingress prio 2 flower ip_proto tcp",
            ShowOptions::default(),
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("Illegal \"eth_type\" for ip proto"), "{e}");
    assert_eq!(
        c.run(
            &["filter", "show", "dev", "v0", "ingress"],
            ShowOptions::default()
        )
        .unwrap(),
        shown
    );
    // Deleting by handle.
    c.run_batch(
        "filter del dev v0 ingress protocol ip prio 1 handle 2 flower",
        ShowOptions::default(),
    )
    .unwrap();
    let (proto, src, dst, sport, dport) = tuple(2);
    let mut skb = Skb::from_frame(&frame(proto, src, dst, sport, dport), 1);
    assert_eq!(c.classify("v0", ClsactHook::Ingress, &mut skb).classid, 0);
    let j = c
        .run(
            &["filter", "show", "dev", "v0", "ingress"],
            ShowOptions {
                stats: false,
                json: true,
            },
        )
        .unwrap();
    let j: serde_json::Value = serde_json::from_str(&j).unwrap();
    assert_eq!(j[1]["options"]["keys"]["ip_proto"], "udp");
    assert_eq!(j[2]["options"]["handle"], 3);
}
