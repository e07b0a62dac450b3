//! What the kernel tests share: a network namespace of the test's own
//! with two veth pairs (testkit's) and varied frames (testkit's
//! `Netns::send_frames` sends them into a veth).
#![allow(dead_code)]

use testkit::Netns;

/// A namespace `sluice-TAG-PID` with two veth pairs up, va-vb and vc-vd
/// (testkit's namespace: no IPv6, so no router solicitations among the
/// frames).
pub fn two_veths(tag: &str) -> Netns {
    let ns = Netns::with_veth(tag, "va", "vb");
    ns.veth("vc", "vd");
    ns
}

/// A deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.next() as usize % from.len()]
    }
}

fn l4(r: &mut Rng, proto: u8) -> Vec<u8> {
    const PORTS: [u16; 9] = [80, 443, 21, 22, 53, 5353, 1024, 1500, 60000];
    let mut h = match proto {
        6 => vec![0u8; 20],
        17 | 1 | 58 => vec![0u8; 8],
        _ => vec![0u8; 4],
    };
    if proto == 6 || proto == 17 {
        h[0..2].copy_from_slice(&r.pick(&PORTS).to_be_bytes());
        h[2..4].copy_from_slice(&r.pick(&PORTS).to_be_bytes());
    } else if proto == 1 {
        h[0] = r.pick(&[8, 0, 3]);
        h[1] = r.pick(&[0, 1]);
    } else if proto == 58 {
        h[0] = r.pick(&[128, 129, 135]);
        h[1] = r.pick(&[0, 1]);
    }
    let pad = r.next() as usize % 20;
    h.extend((0..pad).map(|i| i as u8));
    h
}

fn ipv4(r: &mut Rng) -> Vec<u8> {
    let proto = r.pick(&[6, 17, 1, 47, 89]);
    let ihl = r.pick(&[5u8, 5, 6]);
    let mut ip = vec![0u8; usize::from(ihl) * 4];
    ip[0] = 0x40 | ihl;
    ip[1] = r.pick(&[0, 0x10, 0xb8, 0x20, 0x2e << 2]);
    ip[6..8].copy_from_slice(
        &r.pick(&[0u16, 0x4000, 0x2000, 0x2005, 0x0010])
            .to_be_bytes(),
    );
    ip[8] = r.pick(&[64, 1]);
    ip[9] = proto;
    ip[12..16].copy_from_slice(&r.pick(&[
        [10, 0, 0, 1],
        [10, 0, 0, 2],
        [192, 168, 1, 1],
        [10, 1, 2, 3],
        [172, 16, 0, 1],
    ]));
    ip[16..20].copy_from_slice(&r.pick(&[[10, 1, 0, 1], [10, 2, 0, 1], [8, 8, 8, 8]]));
    ip.extend(l4(r, proto));
    ip
}

fn ipv6(r: &mut Rng) -> Vec<u8> {
    let proto = r.pick(&[6, 17, 58]);
    let mut ip = vec![0u8; 40];
    let class: u32 = r.pick(&[0, 0x10]);
    let label: u32 = r.pick(&[0, 0x12345]);
    ip[0..4].copy_from_slice(&(6 << 28 | class << 20 | label).to_be_bytes());
    ip[6] = proto;
    ip[7] = 64;
    let src: std::net::Ipv6Addr = r
        .pick(&["2001:db8::1", "2001:db8::2", "fe80::1"])
        .parse()
        .unwrap();
    let dst: std::net::Ipv6Addr = r.pick(&["2001:db8:1::5", "2001:db8:2::1"]).parse().unwrap();
    ip[8..24].copy_from_slice(&src.octets());
    ip[24..40].copy_from_slice(&dst.octets());
    ip.extend(l4(r, proto));
    ip
}

/// IPv4 and IPv6 (TCP, UDP, ICMP, others), with and without a VLAN tag,
/// ARP, and IPv4 cut short.
pub fn frames() -> Vec<Vec<u8>> {
    let mut r = Rng(0x5eed);
    let mut out = Vec::new();
    for _ in 0..400 {
        let (ty, mut body): (u16, Vec<u8>) = match r.next() % 20 {
            0..=8 => (0x0800, ipv4(&mut r)),
            9..=15 => (0x86dd, ipv6(&mut r)),
            16 => (0x0806, vec![0u8; 28]),
            _ => {
                // Cut short: header reads past the end fail.
                let mut ip = ipv4(&mut r);
                ip.truncate(r.next() as usize % 24);
                (0x0800, ip)
            }
        };
        let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1];
        if r.next().is_multiple_of(8) {
            f.extend([0x81, 0x00, 0x00, 0x05]);
        }
        f.extend(ty.to_be_bytes());
        f.append(&mut body);
        out.push(f);
    }
    out
}
