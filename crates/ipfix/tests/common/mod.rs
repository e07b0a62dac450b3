//! Shared by the tests: random flows; the external tools and scratch
//! directories are testkit's.
#![allow(dead_code)]

use ipfix::{EndReason, Flow};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// SplitMix64: reproducible random numbers without a dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random flow: IPv4 or IPv6; TCP, UDP or ICMP; times around
/// `base_ms` (UNIX milliseconds) with sub-millisecond nanoseconds.
pub fn random_flow(rng: &mut Rng, base_ms: u64) -> Flow {
    let v6 = rng.below(2) == 1;
    let (src, dst) = if v6 {
        (
            IpAddr::V6(Ipv6Addr::from(
                (u128::from(rng.next()) << 64) | u128::from(rng.next()),
            )),
            IpAddr::V6(Ipv6Addr::from(
                (0x2001_0db8u128 << 96) | u128::from(rng.next()),
            )),
        )
    } else {
        (
            IpAddr::V4(Ipv4Addr::from(0x0a00_0000 | rng.below(1 << 24) as u32)),
            IpAddr::V4(Ipv4Addr::from(rng.next() as u32 | 1)),
        )
    };
    let kind = rng.below(3);
    let (protocol, icmp, sport, dport, flags) = match kind {
        0 => (
            6,
            None,
            1024 + rng.below(60000) as u16,
            rng.below(65536) as u16,
            rng.below(256) as u8,
        ),
        1 => (
            17,
            None,
            rng.below(65536) as u16,
            rng.below(65536) as u16,
            0,
        ),
        _ => {
            let code = ((rng.below(256) as u16) << 8) | rng.below(16) as u16;
            (if v6 { 58 } else { 1 }, Some(code), 0, 0, 0)
        }
    };
    let first_ns = (base_ms + rng.below(100_000)) * 1_000_000 + rng.below(1_000_000);
    let last_ns = first_ns + rng.below(300_000_000_000);
    let scale = rng.below(40);
    let packets = 1 + rng.below(1 << scale);
    Flow {
        src,
        dst,
        src_port: sport,
        dst_port: dport,
        protocol,
        icmp_type_code: icmp,
        packets,
        bytes: packets * (40 + rng.below(1460)),
        first_ns,
        last_ns,
        tcp_flags: flags,
        end_reason: EndReason::ALL[rng.below(5) as usize],
    }
}

pub fn random_flows(seed: u64, n: usize, base_ms: u64) -> Vec<Flow> {
    let mut rng = Rng(seed);
    (0..n).map(|_| random_flow(&mut rng, base_ms)).collect()
}

/// A fresh directory `sluice-ipfix-NAME-PID` under the system's temporary
/// directory.
pub fn temp_dir(name: &str) -> std::path::PathBuf {
    testkit::temp_dir(&format!("ipfix-{name}"))
}
