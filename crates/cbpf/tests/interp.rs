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
