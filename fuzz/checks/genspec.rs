//! Any text as a traffic specification (`--gen udp,flows=10,...`, also
//! `tcp-conv`) and as a sampling rate (`--rate 1/100`): parsing never
//! panics. A spec that parses generates its packets without panicking
//! (the first 64 of them), each of the spec's size (plain specs), with
//! timestamps that never go back, and each an IP datagram of the spec's
//! version and protocol as flow accounting reads it. A rate that parses is
//! B/A with B <= A and A >= 1.

pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok((a, b)) = monitor::parse_rate(text) {
        assert!(a >= 1 && b <= a, "{text:?} gave {b}/{a}");
    }
    let Ok(spec) = packet::GenSpec::parse(text) else {
        return;
    };
    let proto = match spec.proto {
        packet::Proto::Udp => 17,
        packet::Proto::Tcp => 6,
        packet::Proto::Icmp => {
            if spec.v6 {
                58
            } else {
                1
            }
        }
    };
    let mut last = 0;
    for (ts, frame) in spec.packets().take(64) {
        assert!(ts >= last, "{text:?}: time went back from {last} to {ts}");
        last = ts;
        let o = monitor::observe(&frame)
            .unwrap_or_else(|| panic!("{text:?}: a frame flow accounting cannot read"));
        assert_eq!(o.key.src.is_ipv6(), spec.v6, "{text:?}");
        if spec.conv.is_none() {
            assert_eq!(frame.len(), spec.size, "{text:?}");
            assert_eq!(o.key.protocol, proto, "{text:?}");
        }
    }
}
