//! The interpreter's edge cases, with the kernel's semantics.

use cbpf::{Meta, assemble, run};

fn ret(text: &str, packet: &[u8], meta: &Meta) -> u32 {
    let p = assemble(text).unwrap();
    cbpf::check(&p).unwrap();
    run(&p, packet, meta).unwrap().ret
}

#[test]
fn loads_outside_the_packet_and_division_by_zero_end_with_zero() {
    let pkt = [1u8, 2, 3, 4, 5, 6];
    let m = Meta::default();
    assert_eq!(ret("ld [2]\nret a", &pkt, &m), 0x0304_0506);
    assert_eq!(ret("ld [3]\nret #7", &pkt, &m), 0, "a word past the end");
    assert_eq!(ret("ldh [5]\nret #7", &pkt, &m), 0);
    assert_eq!(ret("ldx #1\nldb [x + 5]\nret #7", &pkt, &m), 0);
    assert_eq!(
        ret("ldx #0xffffffff\nldb [x + 1]\nret a", &pkt, &m),
        1,
        "X + k wraps"
    );
    assert_eq!(ret("ld #10\nldx #0\ndiv x\nret #7", &pkt, &m), 0);
    assert_eq!(ret("ld #10\nldx #0\nmod x\nret #7", &pkt, &m), 0);
    assert_eq!(ret("ld #10\nldx #3\nmod x\nret a", &pkt, &m), 1);
    assert_eq!(ret("ldxb 4*([0]&0xf)\ntxa\nret a", &pkt, &m), 4);
    assert_eq!(
        ret("ld #1\nldx #33\nlsh x\nret a", &pkt, &m),
        2,
        "shift by X's low bits"
    );
    assert_eq!(ret("ld #0\nsub #1\nret a", &pkt, &m), u32::MAX);
    assert_eq!(ret("ld #5\nneg\nret a", &pkt, &m), 5u32.wrapping_neg());
    assert_eq!(
        ret(
            "ld #pktlen\nret a",
            &pkt,
            &Meta {
                len: Some(1500),
                ..m.clone()
            }
        ),
        1500
    );
    assert_eq!(ret("ld #pktlen\nret a", &pkt, &m), 6);
}

#[test]
fn ancillary_fields_and_negative_windows() {
    let mut pkt = vec![0u8; 40];
    pkt[14] = 0x45;
    pkt[23] = 17;
    let m = Meta {
        protocol: 0x0800,
        ifindex: 7,
        vlan: Some((0x8100, 0x2005)),
        network_offset: 14,
        cpu: 1,
        ..Meta::default()
    };
    assert_eq!(ret("ld #proto\nret a", &pkt, &m), 0x800);
    assert_eq!(
        ret("ldb #proto\nret a", &pkt, &m),
        0x800,
        "any size reads the field"
    );
    assert_eq!(ret("ld #ifidx\nret a", &pkt, &m), 7);
    assert_eq!(ret("ld #vlan_avail\nret a", &pkt, &m), 1);
    assert_eq!(ret("ld #vlan_tci\nret a", &pkt, &m), 0x2005);
    assert_eq!(ret("ld #vlan_tpid\nret a", &pkt, &m), 0x8100);
    assert_eq!(ret("ld #cpu\nret a", &pkt, &m), 1);
    assert_eq!(ret("ld #3\nldx #5\nld #xor_x\nret a", &pkt, &m), 6);
    assert_eq!(ret("ld #vlan_avail\nret a", &pkt, &Meta::default()), 0);
    // SKF_NET_OFF + 9: the IPv4 protocol byte; SKF_LL_OFF + 14: the
    // first network byte.
    assert_eq!(ret("ldb [-1048567]\nret a", &pkt, &m), 17);
    assert_eq!(ret("ldb [-2097138]\nret a", &pkt, &m), 0x45);
    // Below SKF_LL_OFF there is nothing.
    assert_eq!(ret("ldb [-2097153]\nret #9", &pkt, &m), 0);
}

#[test]
fn unchecked_programs_fail_without_panicking() {
    use cbpf::Insn;
    let m = Meta::default();
    for prog in [
        vec![Insn::stmt(0x15, 0)],                       // a jeq with nowhere to go
        vec![Insn::stmt(0x05, 9), Insn::stmt(0x06, 0)],  // ja out
        vec![Insn::stmt(0x02, 99), Insn::stmt(0x06, 0)], // st M[99]
        vec![Insn::stmt(0xff, 0)],                       // unknown
        vec![Insn::stmt(0x0e, 0)],                       // ret x
        vec![],
    ] {
        assert!(run(&prog, &[0; 20], &m).is_err(), "{prog:?}");
    }
}

/// An Ethernet frame carrying IPv6 whose next headers are `chain`, each
/// extension header 8 bytes, then 20 bytes of payload.
fn ipv6_frame(chain: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 12];
    f.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0]);
    let payload = 8 * (chain.len() - 1) + 20;
    f.extend_from_slice(&(payload as u16).to_be_bytes());
    f.extend_from_slice(&[chain[0], 64]);
    f.extend_from_slice(&[0u8; 32]);
    for next in &chain[1..] {
        f.extend_from_slice(&[*next, 0, 0, 0, 0, 0, 0, 0]);
    }
    f.extend_from_slice(&[0u8; 20]);
    f
}

#[test]
fn libpcaps_protochain_loop_runs_backward_as_bpf_filter_does() {
    // libpcap's `ip6 protochain 6` jumps back (`ja` with a negative k):
    // the kernel refuses it, libpcap's interpreter (and so tcpdump) runs it.
    let prog = cbpf::compile_expr("ip6 protochain 6", cbpf::ETHERNET, 65535).unwrap();
    let err = cbpf::check(&prog).unwrap_err().to_string();
    assert!(err.contains("jumps backward"), "{err}");
    let m = Meta::default();
    let f = cbpf::Filter::new(&prog);
    let verdict = |chain: &[u8]| f.run(&ipv6_frame(chain), &m).unwrap().ret;
    assert_eq!(verdict(&[6]), 65535, "TCP right after IPv6");
    // Hop-by-hop, destination options, routing, then TCP: three loops.
    assert_eq!(verdict(&[0, 60, 43, 6]), 65535);
    assert_eq!(verdict(&[0, 60, 43, 17]), 0, "UDP at the end");
    // A chain that runs off the packet ends with 0.
    let mut cut = ipv6_frame(&[0, 60, 6]);
    cut.truncate(60);
    assert_eq!(f.run(&cut, &m).unwrap().ret, 0);
}

#[test]
fn a_backward_loop_that_never_ends_is_stopped() {
    use cbpf::Insn;
    // ja -1: itself, forever.
    let prog = [Insn::stmt(0x05, u32::MAX), Insn::stmt(0x06, 0)];
    let err = run(&prog, &[0; 20], &Meta::default()).unwrap_err();
    assert!(err.why.contains("still looping"), "{err}");
}

#[test]
fn a_negative_offset_naming_no_field_is_outside_the_packet() {
    // libpcap's `ip[0]` on JUNIPER_ES (link type 132) reads `ldb [-2]`:
    // libpcap's `bpf_filter` finds it past the packet and rejects; it is no
    // ancillary field (which would read 0 and keep the packet here).
    let prog = cbpf::compile_expr("ip[0] & 0xf != 5", 132, 6).unwrap();
    assert!(prog.iter().any(|i| i.k == (-2i32) as u32));
    let juniper = *b"MGC000";
    assert_eq!(run(&prog, &juniper, &Meta::default()).unwrap().ret, 0);
    let m = Meta::default();
    let run_text = |text: &str| run(&assemble(text).unwrap(), &[7; 8], &m).unwrap().ret;
    assert_eq!(run_text("ldb [-2]\nret #9"), 0);
    assert_eq!(
        run_text("ld [-4096]\nret #9"),
        9,
        "SKF_AD_OFF + 0: the protocol"
    );
    assert_eq!(run_text("ldx #-2\nldb [x + 0]\nret #9"), 0, "indirect too");
}
