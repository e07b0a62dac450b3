//! What the kernel tests share: a network namespace of the test's own,
//! varied frames, and sending them into a veth.
#![allow(dead_code)]

use std::process::Command;

/// Deletes the namespace however the test ends.
pub struct Netns(pub String);

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// Whether the test may run: root, or else a loud skip (a failure with
/// SLUICE_REQUIRE_KERNEL=1).
pub fn root_or_skip(what: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    if std::env::var("SLUICE_REQUIRE_KERNEL").as_deref() == Ok("1") {
        panic!("{what} needs root (SLUICE_REQUIRE_KERNEL=1)");
    }
    eprintln!("\n**** SKIPPED: needs root ({what}) ****\n");
    false
}

impl Netns {
    /// A namespace `sluice-TAG-PID` with two veth pairs up, va-vb and
    /// vc-vd, and no IPv6 (no router solicitations among the frames).
    pub fn with_veths(tag: &str) -> Netns {
        let ns = Netns(format!("sluice-{tag}-{}", std::process::id()));
        let ok = Command::new("ip")
            .args(["netns", "add", &ns.0])
            .status()
            .unwrap();
        assert!(ok.success(), "ip netns add");
        ns.must(&[
            "sysctl",
            "-qw",
            "net.ipv6.conf.all.disable_ipv6=1",
            "net.ipv6.conf.default.disable_ipv6=1",
        ]);
        for (a, b) in [("va", "vb"), ("vc", "vd")] {
            ns.must(&["ip", "link", "add", a, "type", "veth", "peer", "name", b]);
        }
        for d in ["va", "vb", "vc", "vd"] {
            ns.must(&["ip", "link", "set", d, "up"]);
        }
        ns
    }

    pub fn run(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new("ip")
            .args(["netns", "exec", &self.0])
            .args(args)
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    pub fn must(&self, args: &[&str]) -> String {
        self.run(args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    pub fn ifindex(&self, dev: &str) -> u32 {
        let j: serde_json::Value =
            serde_json::from_str(&self.must(&["ip", "-j", "link", "show", dev])).unwrap();
        j[0]["ifindex"].as_u64().unwrap() as u32
    }
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

/// Sends `frames` out of interface `dev_index` of namespace `ns`, a few
/// dozen at a time so that the peer's backlog never overflows.
pub fn send(ns: &str, dev_index: u32, frames: &[Vec<u8>]) {
    std::thread::scope(|s| {
        s.spawn(|| {
            kernel::netdev::enter_netns(ns).unwrap();
            let sock = kernel::PacketSocket::through_qdisc(dev_index).unwrap();
            for (i, f) in frames.iter().enumerate() {
                assert!(sock.send(f).unwrap(), "frame {i} refused by the link");
                if i % 50 == 49 {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
            }
        });
    });
    std::thread::sleep(std::time::Duration::from_millis(500));
}
