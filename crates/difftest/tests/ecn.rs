//! `bpf_skb_ecn_set_ce` in the VM and in the kernel: every ECN codepoint
//! of IPv4 and IPv6 packets, a packet that is not IP and a truncated IPv4
//! header.

use difftest::{Comparison, Differ};
use runtime::{Hook, Image, LoadOptions, PacketMeta};

const PROGRAM: &str = r#"
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* The helper's return value in the mark, which the comparison sees; the
   packet goes on. */
SEC("tc")
int mark_ce(struct __sk_buff *skb)
{
	skb->mark = bpf_skb_ecn_set_ce(skb);
	return 0;
}

char _license[] SEC("license") = "GPL";
"#;

/// The frames, each with the expected return value and ECN field after.
fn frames() -> Vec<(&'static str, Vec<u8>, u64, u8)> {
    let v4 = |tos| {
        packet::Builder::udp("10.0.0.1", "10.0.0.2", 1000, 53)
            .tos(tos)
            .build()
    };
    let v6 = |tc| {
        packet::Builder::udp("fd00::1", "fd00::2", 1000, 53)
            .tos(tc)
            .build()
    };
    let mut short = v4(0x02);
    short.truncate(14 + 12);
    let mut arp = v4(0x02);
    arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    vec![
        ("ipv4 not-ECT", v4(0xb8), 0, 0),
        ("ipv4 ECT(1)", v4(0xb9), 1, 3),
        ("ipv4 ECT(0)", v4(0xba), 1, 3),
        ("ipv4 CE", v4(0xbb), 1, 3),
        ("ipv6 not-ECT", v6(0x20), 0, 0),
        ("ipv6 ECT(1)", v6(0x21), 1, 3),
        ("ipv6 ECT(0)", v6(0x22), 1, 3),
        ("ipv6 CE", v6(0x23), 1, 3),
        ("not IP", arp, 0, 2),
        ("truncated ipv4", short, 0, 2),
    ]
}

fn ecn_of(frame: &[u8]) -> u8 {
    match u16::from_be_bytes([frame[12], frame[13]]) {
        0x86dd => (frame[15] >> 4) & 3,
        _ => frame[15] & 3,
    }
}

/// The one's complement sum of an IPv4 header is 0xffff when its checksum
/// is right.
fn ipv4_checksum_ok(frame: &[u8]) -> bool {
    let ihl = usize::from(frame[14] & 0xf) * 4;
    let mut sum: u32 = frame[14..14 + ihl]
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum == 0xffff
}

fn hook(ncpus: u32) -> (Vec<u8>, Hook) {
    let bytes = programs::compile::compile("ecn", PROGRAM);
    let opts = LoadOptions {
        ncpus,
        ..LoadOptions::default()
    };
    let image = Image::load(obj::Object::parse(&bytes).unwrap(), &opts).unwrap();
    let p = image.find_program(None).unwrap();
    (bytes, Hook::new(image, p, 0).unwrap())
}

#[test]
fn skb_ecn_set_ce_marks_ect_packets_and_fixes_the_ipv4_checksum() {
    let (_, mut h) = hook(1);
    let meta = PacketMeta {
        ifindex: 1,
        ..PacketMeta::default()
    };
    for (what, frame, ret, ecn) in frames() {
        let out = h.run(&frame, &meta).unwrap();
        let mark = out.skb.map(|s| s.mark).unwrap();
        assert_eq!(u64::from(mark), ret, "{what}: return value");
        if what.starts_with("ipv") {
            assert_eq!(ecn_of(out.packet), ecn, "{what}: ECN after");
            let changed: Vec<usize> = (0..frame.len())
                .filter(|&i| frame[i] != out.packet[i])
                .collect();
            if what.starts_with("ipv4") {
                assert!(ipv4_checksum_ok(out.packet), "{what}: checksum");
                assert!(
                    changed.iter().all(|&i| matches!(i, 15 | 24 | 25)),
                    "{what}: {changed:?}"
                );
            } else {
                assert!(changed.iter().all(|&i| i == 15), "{what}: {changed:?}");
            }
        } else {
            assert_eq!(out.packet, &frame[..], "{what}: untouched");
        }
    }
}

#[test]
fn skb_ecn_set_ce_agrees_with_the_kernel() {
    if !testkit::kernel_available("differential test of bpf_skb_ecn_set_ce") {
        return;
    }
    let (bytes, h) = hook(kernel::possible_cpus() as u32);
    let mut d = Differ::new(h, &bytes, "ecn", 10).unwrap();
    for (i, (what, frame, _, _)) in frames().into_iter().enumerate() {
        let c = d.packet(i as u64, 1_000 * i as u64, &frame);
        // The kernel's test run refuses a frame this short (EINVAL): the
        // VM test above covers it.
        if what == "truncated ipv4" && matches!(c, Comparison::NotComparable(_)) {
            continue;
        }
        assert!(matches!(c, Comparison::Same), "{what}: {c:?}");
    }
}
