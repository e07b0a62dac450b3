//! sluice's u32 against the kernel's: a rule set using every u32 construct
//! is added with the real `tc` to a veth in a network namespace of this
//! test's own and parsed by sluice; what sluice shows for each rule must be
//! what `tc filter show` prints (less the per-filter header line, which is
//! the block's, not a rule's); then a few hundred varied frames are sent
//! into the veth and classified by sluice, and every mirred action must
//! have counted the same packets in both. Needs root (skips loudly
//! without, unless SLUICE_REQUIRE_KERNEL=1, then fails).

use std::collections::BTreeMap;
use std::process::Command;

use tc::{Block, Classifier, ETH_P_ALL, Filter, Skb, U32};

/// Deletes the namespace however the test ends.
struct Netns(String);

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

impl Netns {
    fn run(&self, args: &[&str]) -> Result<String, String> {
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

    fn must(&self, args: &[&str]) -> String {
        self.run(args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    fn ifindex(&self, dev: &str) -> u32 {
        let j: serde_json::Value =
            serde_json::from_str(&self.must(&["ip", "-j", "link", "show", dev])).unwrap();
        j[0]["ifindex"].as_u64().unwrap() as u32
    }
}

/// (handle, the words after `u32`).
const RULES: &[(Option<&str>, &str)] = &[
    (Some("10:"), "divisor 1"),
    (Some("11:"), "divisor 1"),
    (Some("12:"), "divisor 16"),
    (Some("13:"), "divisor 1"),
    (None, "divisor 4"),
    // The root: by EtherType (read below the network header), and a
    // catch-all at a high order.
    (None, "match u16 0x0800 0xffff at -2 link 10:"),
    (None, "match u16 0x86dd 0xffff at -2 link 11:"),
    (
        None,
        "order 4000 match u32 0 0 classid 1:ff action mirred egress mirror dev vc",
    ),
    (
        None,
        "order 2 match u32 0 0 indev va action mirred egress mirror dev vc",
    ),
    // IPv4.
    (
        None,
        "ht 10: match ip src 10.0.0.1/32 match ip protocol 17 0xff flowid 1:1 action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 10: match ip dst 10.1.0.0/16 match ip tos 0x10 0xff classid 1:2 action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 10: match ip nofrag match ip df match ip ihl 6 0xf match ip protocol 6 0xff action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 10: match ip firstfrag match ip dsfield 0x2e 0x3f action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 10: match ip mf action mirred egress mirror dev vd",
    ),
    (
        None,
        "ht 10: match ip precedence 0x20 0xe0 match ip sport 1024 0xff00 action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 10: match ip dport 53 0xffff match ip icmp_type 0 0 action mirred egress mirror dev vc",
    ),
    (None, "ht 10: match ip src 192.168.0.0/16 flowid 1:3"),
    (
        None,
        "ht 10: match mark 0 0xff match ip protocol 47 0xff action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 10: match u32 0x45000000 0xff000000 at 0 match u16 0x0040 0x00ff at 8 match u8 1 0xff at 8 indev vb action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 10: match ip protocol 6 0xff offset at 0 mask 0f00 shift 6 eat hashkey mask 0x0000ffff at 20 link 12:",
    ),
    (
        None,
        "ht 10: match ip protocol 17 0xff offset plus 20 hashkey mask 0x00000003 at 12 link 801:",
    ),
    (
        None,
        "ht 10: match ip protocol 1 0xff offset at 0 mask 0f00 shift 6 eat link 13:",
    ),
    (
        None,
        "ht 10: match ip src 10.0.0.0/8 skip_hw action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 10: order 1 match u32 0 0 skip_sw action mirred egress mirror dev vc",
    ),
    // TCP, hashed on the destination port.
    (
        None,
        "ht 12: sample tcp dst 80 0xffff divisor 16 match tcp dst 80 0xffff action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 12: sample tcp dst 443 0xffff divisor 16 match tcp dst 443 0xffff match tcp src 1024 0xfc00 action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 12:5: match tcp dst 21 0xffff action mirred egress mirror dev vc",
    ),
    (
        Some("12::20"),
        "ht 12:6: match tcp dst 22 0xffff action mirred egress mirror dev vc",
    ),
    // UDP at a fixed offset, hashed on the source's low bits.
    (
        None,
        "ht 801: match udp dst 53 0xffff action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 801:1: match udp src 5353 0xffff action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 801:2: match u8 0 0 at nexthdr+0 action mirred egress mirror dev vc action mirred egress mirror dev vd",
    ),
    // ICMP after eating the IP header.
    (
        None,
        "ht 13: match icmp type 8 0xff match icmp code 0 0xff action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 13: match icmp type 3 0xff action mirred egress mirror dev vc",
    ),
    // IPv6.
    (
        None,
        "ht 11: order 5 match ip6 protocol 58 0xff indev va action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 11: match ip6 src 2001:db8::1/128 action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 11: match ip6 dst 2001:db8:1::/48 match ip6 protocol 17 0xff action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 11: match ip6 priority 0x10 0xff match ip6 flowlabel 0x12345 0xfffff action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 11: match ip6 sport 22 0xffff match ip6 protocol 6 0xff action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 11: match ip6 dport 80 0xffff action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 11: match ip6 icmp_type 128 0xff match ip6 icmp_code 0 0xff match ip6 protocol 58 0xff action mirred egress mirror dev vc",
    ),
];

/// Rules both must refuse, changing nothing.
const BAD: &[(Option<&str>, &str)] = &[
    (None, "match u32 0 0 bogus"),
    (None, "match u8 0x1ff 0xff at 0"),
    (None, "match u32 0 0 link 7:"),
    (None, "match u32 0 0 link 800:"),
    (None, "ht 7: match u32 0 0"),
    (None, "ht 12:10: match u32 0 0"),
    (None, "flowid 1:1"),
    (Some("5:"), "divisor 3"),
    (Some("1000:"), "divisor 2"),
    (Some("12::20"), "ht 12:6: match u32 0 0"),
    (None, "match u32 0 0 indev nosuch"),
];

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
fn frames() -> Vec<Vec<u8>> {
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

/// Sends `frames` out of interface `dev_index` of namespace `ns`.
fn send(ns: &str, dev_index: u32, frames: &[Vec<u8>]) {
    let path = format!("/var/run/netns/{ns}");
    let frames = frames.to_vec();
    std::thread::spawn(move || {
        use std::os::fd::AsRawFd;
        let f = std::fs::File::open(&path).unwrap();
        // SAFETY: plain syscalls on descriptors this thread owns, with
        // buffers that outlive them.
        unsafe {
            assert_eq!(libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET), 0, "setns");
            let s = libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0);
            assert!(s >= 0, "socket");
            let mut addr: libc::sockaddr_ll = std::mem::zeroed();
            addr.sll_family = libc::AF_PACKET as u16;
            addr.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
            addr.sll_ifindex = dev_index as i32;
            let len = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            let sa = &addr as *const libc::sockaddr_ll as *const libc::sockaddr;
            assert_eq!(libc::bind(s, sa, len), 0, "bind");
            for (i, fr) in frames.iter().enumerate() {
                let n = libc::send(s, fr.as_ptr() as *const libc::c_void, fr.len(), 0);
                assert_eq!(n, fr.len() as isize, "send");
                if i % 50 == 49 {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
            }
            libc::close(s);
        }
    })
    .join()
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
}

/// The kernel's rule entries: each `filter ...` line's text after the
/// filter header, with its following lines, as tc printed them before the
/// newline that ends each filter; the header-only entry (the filter
/// itself, not a rule) left out.
fn kernel_entries(show: &str) -> Vec<String> {
    let header = "filter protocol all pref 5 u32 chain 0 ";
    let show = show.strip_suffix('\n').unwrap_or(show);
    let mut out: Vec<String> = Vec::new();
    for line in show.split('\n') {
        if line.starts_with("filter ") {
            let text = line
                .strip_prefix(header)
                .unwrap_or_else(|| panic!("unexpected: {line}"));
            out.push(text.to_string());
        } else if let Some(e) = out.last_mut() {
            e.push('\n');
            e.push_str(line);
        }
    }
    out.retain(|e| !e.is_empty());
    out
}

#[test]
fn u32_agrees_with_the_kernel() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        if std::env::var("SLUICE_REQUIRE_KERNEL").as_deref() == Ok("1") {
            panic!("u32_kernel needs root (SLUICE_REQUIRE_KERNEL=1)");
        }
        eprintln!("\n**** SKIPPED: needs root (u32 against the kernel) ****\n");
        return;
    }
    let ns = Netns(format!("sluice-u32-{}", std::process::id()));
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
    ns.must(&[
        "ip", "link", "add", "va", "type", "veth", "peer", "name", "vb",
    ]);
    ns.must(&[
        "ip", "link", "add", "vc", "type", "veth", "peer", "name", "vd",
    ]);
    for d in ["va", "vb", "vc", "vd"] {
        ns.must(&["ip", "link", "set", d, "up"]);
    }
    ns.must(&["tc", "qdisc", "add", "dev", "vb", "clsact"]);
    let tc_add = |handle: Option<&str>, words: &str| -> Result<String, String> {
        let mut a = vec![
            "tc", "filter", "add", "dev", "vb", "ingress", "prio", "5", "protocol", "all",
        ];
        if let Some(h) = handle {
            a.extend(["handle", h]);
        }
        a.push("u32");
        a.extend(words.split_whitespace());
        ns.run(&a)
    };
    for (h, w) in RULES {
        tc_add(*h, w).unwrap_or_else(|e| panic!("tc refused {w}: {e}"));
    }
    let show = ns.must(&["tc", "filter", "show", "dev", "vb", "ingress"]);
    // This kernel may lack CONFIG_CLS_U32_MARK: then it neither matches
    // nor shows `mark`, and sluice is told so.
    let mut u = if show.contains("\n  mark 0x") {
        U32::new()
    } else {
        U32::new().without_mark()
    };
    for d in ["va", "vb", "vc", "vd"] {
        u.set_device(d, ns.ifindex(d));
    }
    let mut block = Block::default();
    let mut actions = tc::Actions::default();
    for (h, w) in RULES {
        let words: Vec<&str> = w.split_whitespace().collect();
        u.add(*h, &words, &mut actions)
            .unwrap_or_else(|e| panic!("sluice refused {w}: {e}"));
    }
    // Refusals: both refuse, and sluice changes nothing.
    for (h, w) in BAD {
        assert!(tc_add(*h, w).is_err(), "the kernel took {w}");
        let words: Vec<&str> = w.split_whitespace().collect();
        let before = (u.show(&actions, false), actions.clone());
        assert!(u.add(*h, &words, &mut actions).is_err(), "sluice took {w}");
        assert_eq!((u.show(&actions, false), actions.clone()), before, "{w}");
    }
    assert_eq!(
        ns.must(&["tc", "filter", "show", "dev", "vb", "ingress"]),
        show
    );
    // The rules as both show them.
    let want = kernel_entries(&show);
    let got = u.show(&actions, false);
    for (k, s) in want.iter().zip(&got) {
        assert_eq!(s, k, "\nsluice: {s:?}\nkernel: {k:?}");
    }
    assert_eq!(got.len(), want.len());
    // The same frames through both.
    let filter = Filter {
        prio: 5,
        protocol: ETH_P_ALL,
        classifier: Box::new(u),
    };
    block.add(0, filter).unwrap();
    let frames = frames();
    let vb = ns.ifindex("vb");
    for f in &frames {
        let mut skb = Skb::from_frame(f, vb);
        let n = skb.len() as u64;
        block.classify(&mut skb, n, &mut actions);
    }
    send(&ns.0, ns.ifindex("va"), &frames);
    // `tc -s -j` is no JSON once a rule has an offset (6.1 prints a bare
    // string there), so the counters are read from the text.
    let stats = ns.must(&["tc", "-s", "filter", "show", "dev", "vb", "ingress"]);
    let mut kernel = BTreeMap::new();
    let mut index = None;
    for line in stats.lines() {
        if let Some(rest) = line.strip_prefix("\tindex ") {
            index = rest.split(' ').next().and_then(|i| i.parse::<u32>().ok());
        } else if let Some(rest) = line.strip_prefix("\tSent ") {
            let w: Vec<&str> = rest.split(' ').collect();
            let packets: u64 = w[2].parse().unwrap();
            kernel.insert(index.take().expect("an index before its counters"), packets);
        }
    }
    let sluice: BTreeMap<u32, u64> = actions.iter().map(|a| (a.index, a.stats.packets)).collect();
    eprintln!("per action packets: {sluice:?}");
    assert_eq!(sluice, kernel);
    let declared: usize = RULES
        .iter()
        .map(|(_, w)| w.matches("action ").count())
        .sum();
    assert_eq!(sluice.len(), declared);
    let busy = sluice.values().filter(|&&p| p > 0).count();
    assert!(busy >= 15, "only {busy} actions saw packets");
}
