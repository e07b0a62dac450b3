//! A rewritten packet equals the packet built with the new values from
//! scratch (checksums computed by etherparse): the incremental checksum
//! updates are exact.

use packet::{Builder, L4};

use super::*;
use crate::flow::extract;

#[derive(Default)]
struct Sent(Vec<(u32, Vec<u8>)>);

impl Output for Sent {
    fn send(&mut self, port: u32, frame: &[u8]) {
        self.0.push((port, frame.to_vec()));
    }
    fn to_controller(&mut self, frame: &[u8], _: u32, _: &ToController) {
        self.0.push((u32::MAX, frame.to_vec()));
    }
}

fn run(frame: &[u8], actions: Vec<DpAction>) -> Vec<u8> {
    let (_, layout) = extract(frame, 1);
    let mut f = frame.to_vec();
    let mut out = Sent::default();
    let mut all = actions;
    all.push(DpAction::Output(2));
    execute(&mut f, layout, 1, &all, &mut out);
    out.0.pop().unwrap().1
}

fn ip(s: &str) -> u128 {
    match s.parse::<std::net::IpAddr>().unwrap() {
        std::net::IpAddr::V4(a) => u128::from(u32::from(a)),
        std::net::IpAddr::V6(a) => u128::from(a),
    }
}

#[test]
fn address_and_port_rewrites_keep_every_checksum_right() {
    let shapes = [
        L4::Tcp {
            sport: 1000,
            dport: 80,
            syn: true,
        },
        L4::Udp {
            sport: 53,
            dport: 5353,
        },
        L4::Icmp,
    ];
    for (src, dst, nsrc, ndst) in [
        ("10.0.0.1", "10.0.0.2", "192.168.7.9", "172.16.254.3"),
        ("2001:db8::1", "fe80::2", "2001:db8:ffff::9", "::1"),
    ] {
        for l4 in shapes {
            let b = Builder::new(src, dst, l4).payload(b"some payload bytes!");
            let (sf, df) = if src.contains(':') {
                (Field::Ipv6Src, Field::Ipv6Dst)
            } else {
                (Field::Ipv4Src, Field::Ipv4Dst)
            };
            let got = run(
                &b.build(),
                vec![DpAction::Set(sf, ip(nsrc)), DpAction::Set(df, ip(ndst))],
            );
            let mut want = b.clone();
            want.src = nsrc.parse().unwrap();
            want.dst = ndst.parse().unwrap();
            assert_eq!(got, want.build(), "{src} {l4:?}");
            if let L4::Tcp { .. } | L4::Udp { .. } = l4 {
                let (s, d) = match l4 {
                    L4::Tcp { .. } => (Field::TcpSrc, Field::TcpDst),
                    _ => (Field::UdpSrc, Field::UdpDst),
                };
                let got = run(
                    &b.build(),
                    vec![DpAction::Set(s, 4321), DpAction::Set(d, 9)],
                );
                let mut want = b.clone();
                want.l4 = match l4 {
                    L4::Tcp { syn, .. } => L4::Tcp {
                        sport: 4321,
                        dport: 9,
                        syn,
                    },
                    _ => L4::Udp {
                        sport: 4321,
                        dport: 9,
                    },
                };
                assert_eq!(got, want.build(), "{src} {l4:?} ports");
            }
        }
    }
}

#[test]
fn ttl_and_dscp_rewrites_keep_the_ip_checksum_right() {
    for src in ["10.1.2.3", "2001:db8::7"] {
        let dst = if src.contains(':') {
            "2001:db8::8"
        } else {
            "10.3.2.1"
        };
        let b = Builder::udp(src, dst, 1, 2).tos(0x03);
        let got = run(
            &b.build(),
            vec![DpAction::SetTtl(9), DpAction::Set(Field::IpDscp, 46)],
        );
        let want = b.clone().ttl(9).tos((46 << 2) | 0x03).build();
        assert_eq!(got, want, "{src}");
    }
}

#[test]
fn vlan_push_set_and_pop_round_trip() {
    let f = Builder::tcp("10.0.0.1", "10.0.0.2", 1, 2).build();
    let tagged = run(
        &f,
        vec![
            DpAction::PushVlan {
                tpid: 0x8100,
                tci: 0,
            },
            DpAction::Set(Field::VlanVid, 0x1000 | 42),
            DpAction::Set(Field::VlanPcp, 5),
        ],
    );
    assert_eq!(tagged.len(), f.len() + 4);
    assert_eq!(&tagged[12..16], &[0x81, 0x00, 0xa0, 42]);
    assert_eq!(&tagged[16..], &f[12..]);
    // A rewrite after the push finds the moved IP header.
    let (_, layout) = extract(&tagged, 1);
    assert_eq!(layout.l3, Some(18));
    let back = run(&tagged, vec![DpAction::PopVlan, DpAction::SetTtl(3)]);
    assert_eq!(
        back,
        Builder::tcp("10.0.0.1", "10.0.0.2", 1, 2).ttl(3).build()
    );
}

#[test]
fn a_clone_changes_only_its_copy() {
    let f = Builder::udp("10.0.0.1", "10.0.0.2", 1, 2).build();
    let (_, layout) = extract(&f, 1);
    let mut frame = f.clone();
    let mut out = Sent::default();
    let actions = vec![
        DpAction::Clone(vec![DpAction::SetTtl(1), DpAction::Output(3)]),
        DpAction::Output(4),
        DpAction::Controller(ToController {
            reason: 1,
            table_id: 0,
            cookie: 0,
            max_len: 0,
            metadata: 0,
        }),
    ];
    execute(&mut frame, layout, 1, &actions, &mut out);
    assert_eq!(out.0.len(), 3);
    assert_eq!(out.0[0].0, 3);
    assert_eq!(out.0[0].1[14 + 8], 1);
    assert_eq!(out.0[1], (4, f.clone()));
    assert_eq!(out.0[2], (u32::MAX, f));
}

#[test]
fn rewrites_of_frames_cut_short_never_panic() {
    let f = Builder::tcp("10.0.0.1", "10.0.0.2", 1, 2)
        .payload(&[7; 30])
        .build();
    let every = vec![
        DpAction::Set(Field::EthDst, 1),
        DpAction::Set(Field::Ipv4Src, 5),
        DpAction::Set(Field::TcpDst, 5),
        DpAction::Set(Field::SctpDst, 5),
        DpAction::Set(Field::Icmpv4Code, 5),
        DpAction::Set(Field::ArpTha, 5),
        DpAction::Set(Field::Ipv6NdTarget, 5),
        DpAction::SetTtl(1),
        DpAction::PopVlan,
        DpAction::PushVlan {
            tpid: 0x8100,
            tci: 1,
        },
        DpAction::Set(Field::VlanPcp, 1),
        DpAction::PopVlan,
    ];
    for n in 0..f.len() {
        let (_, layout) = extract(&f[..n], 1);
        let mut frame = f[..n].to_vec();
        execute(&mut frame, layout, 1, &every, &mut Sent::default());
    }
}
