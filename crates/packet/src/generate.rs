//! Synthetic traffic from a specification such as
//! `udp,flows=1000,size=64,count=1000000`.
//!
//! Fields: a protocol (`udp`, `tcp`, `icmp`), `v6` for IPv6, `flows=N`
//! (distinct 5-tuples, visited round-robin), `size=BYTES` (frame length),
//! `count=N`, `rate=PPS` (spacing of timestamps, default 1,000,000),
//! `src=PREFIX` and `dst=ADDR[/LEN]` (sources are drawn from the prefix
//! in order; with a prefix, each flow's destination is spread over it by
//! a bijective hash of the flow number, as route lookups want),
//! `sport=N`, `dport=N`, `start=NS` (first timestamp). The same spec always
//! gives the same packets.
//!
//! Packets of one flow differ as real traffic does: packet `n` (counted
//! from 0 over the whole stream) carries `n` in its IPv4 identification
//! (low 16 bits), in its first payload bytes (the low-order bytes of `n` as
//! a big-endian 32-bit number, as many as the payload holds) and, for TCP,
//! in its sequence number (the template's plus `n`); the checksums are
//! updated incrementally (RFC 1624), so the frames stay valid and cheap.

use std::net::IpAddr;

use crate::build::{Builder, L4};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenSpec {
    pub proto: Proto,
    pub v6: bool,
    pub flows: u32,
    pub size: usize,
    pub count: u64,
    pub rate: u64,
    pub src: (IpAddr, u8),
    pub dst: IpAddr,
    /// The destination prefix's length: flows spread over it when shorter
    /// than the address.
    pub dst_len: u8,
    pub sport: u16,
    pub dport: u16,
    pub start_ns: u64,
    /// `tcp-conv`: TCP conversations with known RTTs (conversation.rs).
    pub conv: Option<crate::conversation::Conversation>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Proto {
    Udp,
    Tcp,
    Icmp,
}

/// Why a `--gen` spec cannot be generated; each names the field or the
/// spec at fault.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum GenSpecError {
    /// One `field` (`key=value` or a flag) is wrong for `reason`.
    #[error("--gen `{field}`: {reason}")]
    Field { field: String, reason: &'static str },
    /// The addresses are not all of the family the spec asks for.
    #[error("--gen {spec}: addresses must all be IPv{version} (add or drop `v6`)")]
    MixedFamilies { spec: String, version: u8 },
    /// `size` is below the headers of the chosen packet.
    #[error("--gen {spec}: size {size} is below the {min} bytes of the headers")]
    TooSmall {
        spec: String,
        size: usize,
        min: usize,
    },
    /// `size` is above the largest frame generated.
    #[error("--gen {spec}: size {size} is above 9000")]
    TooBig { spec: String, size: usize },
    /// The last packet's time is past what a u64 of nanoseconds holds.
    #[error("--gen {spec}: start and count run past 2^64 ns")]
    PastTime { spec: String },
    /// A `tcp-conv` spec asks for more flows than it keeps state for.
    #[error("--gen {spec}: tcp-conv keeps state per flow: at most {max} flows")]
    TooManyFlows { spec: String, max: u32 },
}

impl GenSpec {
    pub fn parse(spec: &str) -> Result<GenSpec, GenSpecError> {
        if spec.split(',').any(|f| f.trim() == "tcp-conv") {
            let mut g = GenSpec::parse(&crate::conversation::Conversation::common_fields(spec))?;
            g.conv = Some(crate::conversation::Conversation::parse(spec, &g)?);
            return Ok(g);
        }
        let mut g = GenSpec {
            proto: Proto::Udp,
            v6: false,
            flows: 1,
            size: 64,
            count: 1000,
            rate: 1_000_000,
            src: ("10.0.0.0".parse().expect("literal"), 16),
            dst: "10.255.0.1".parse().expect("literal"),
            dst_len: 32,
            sport: 1024,
            dport: 80,
            start_ns: 1_000_000_000,
            conv: None,
        };
        let mut src_given = false;
        let mut size_given = false;
        let mut dst_given = false;
        for field in spec.split(',').map(str::trim).filter(|f| !f.is_empty()) {
            let bad = |reason: &'static str| GenSpecError::Field {
                field: field.to_string(),
                reason,
            };
            let num = |v: &str| {
                v.replace('_', "")
                    .parse::<u64>()
                    .map_err(|_| bad("not a number"))
            };
            match field.split_once('=') {
                None => match field {
                    "udp" => g.proto = Proto::Udp,
                    "tcp" => g.proto = Proto::Tcp,
                    "icmp" => g.proto = Proto::Icmp,
                    "v6" | "ipv6" => g.v6 = true,
                    "v4" | "ipv4" => g.v6 = false,
                    _ => {
                        return Err(bad(
                            "unknown field (udp, tcp, icmp, v6, flows=, size=, count=, rate=, src=, dst=, sport=, dport=, start=)",
                        ));
                    }
                },
                Some((k, v)) => match k {
                    "flows" => {
                        g.flows = u32::try_from(num(v)?)
                            .ok()
                            .filter(|&f| f > 0)
                            .ok_or_else(|| bad("flows must be 1 to 2^32-1"))?
                    }
                    "size" => {
                        g.size = num(v)? as usize;
                        size_given = true;
                    }
                    "count" => g.count = num(v)?,
                    "rate" => g.rate = num(v)?.max(1),
                    "sport" => {
                        g.sport = u16::try_from(num(v)?).map_err(|_| bad("ports are 0-65535"))?
                    }
                    "dport" => {
                        g.dport = u16::try_from(num(v)?).map_err(|_| bad("ports are 0-65535"))?
                    }
                    "start" => g.start_ns = num(v)?,
                    "src" => {
                        let (a, l) = v.split_once('/').unwrap_or((v, ""));
                        let addr: IpAddr = a.parse().map_err(|_| bad("not an address"))?;
                        let max = if addr.is_ipv4() { 32 } else { 128 };
                        let len = if l.is_empty() {
                            max
                        } else {
                            l.parse().map_err(|_| bad("bad prefix length"))?
                        };
                        if len > max {
                            return Err(bad("prefix too long"));
                        }
                        g.src = (addr, len);
                        src_given = true;
                    }
                    "dst" => {
                        let (a, l) = v.split_once('/').unwrap_or((v, ""));
                        g.dst = a.parse().map_err(|_| bad("not an address"))?;
                        let max = if g.dst.is_ipv4() { 32 } else { 128 };
                        g.dst_len = if l.is_empty() {
                            max
                        } else {
                            l.parse().map_err(|_| bad("bad prefix length"))?
                        };
                        if g.dst_len > max {
                            return Err(bad("prefix too long"));
                        }
                        dst_given = true;
                    }
                    _ => return Err(bad("unknown field")),
                },
            }
        }
        if g.v6 {
            if !src_given {
                g.src = ("2001:db8::".parse().expect("literal"), 64);
            }
            if !dst_given {
                g.dst = "2001:db8:ffff::1".parse().expect("literal");
                g.dst_len = 128;
            }
        }
        if g.src.0.is_ipv4() != g.dst.is_ipv4() || g.src.0.is_ipv6() != g.v6 {
            return Err(GenSpecError::MixedFamilies {
                spec: spec.to_string(),
                version: if g.v6 { 6 } else { 4 },
            });
        }
        let min = Builder::new(&g.src.0.to_string(), &g.dst.to_string(), g.l4(0))
            .build()
            .len();
        if !size_given {
            g.size = g.size.max(min);
        }
        if g.size < min {
            return Err(GenSpecError::TooSmall {
                spec: spec.to_string(),
                size: g.size,
                min,
            });
        }
        // The last packet's time must be a u64 of nanoseconds.
        let span = u128::from(g.count.saturating_sub(1)) * 1_000_000_000 / u128::from(g.rate);
        if u128::from(g.start_ns) + span > u128::from(u64::MAX) {
            return Err(GenSpecError::PastTime {
                spec: spec.to_string(),
            });
        }
        if g.size > 9000 {
            return Err(GenSpecError::TooBig {
                spec: spec.to_string(),
                size: g.size,
            });
        }
        Ok(g)
    }

    fn l4(&self, flow: u32) -> L4 {
        let sport = self.sport.wrapping_add((flow / self.pool()) as u16);
        match self.proto {
            Proto::Udp => L4::Udp {
                sport,
                dport: self.dport,
            },
            Proto::Tcp => L4::Tcp {
                sport,
                dport: self.dport,
                syn: true,
            },
            Proto::Icmp => L4::Icmp,
        }
    }

    /// Source addresses the prefix offers (at most 2^24).
    fn pool(&self) -> u32 {
        let bits = if self.v6 { 128 } else { 32 } - u32::from(self.src.1);
        1u32 << bits.min(24)
    }

    fn source(&self, flow: u32) -> IpAddr {
        let i = flow % self.pool();
        match self.src.0 {
            IpAddr::V4(a) => IpAddr::V4((u32::from(a).wrapping_add(i)).into()),
            IpAddr::V6(a) => IpAddr::V6((u128::from(a).wrapping_add(u128::from(i))).into()),
        }
    }

    /// The destination of flow `flow`: the address, or with a prefix an
    /// address in it picked by a bijective 32-bit mix of the flow number
    /// (the low 32 host bits vary at most).
    fn destination(&self, flow: u32) -> IpAddr {
        let host = |max: u32| {
            let bits = max - u32::from(self.dst_len);
            let h = u128::from(mix32(flow));
            if bits >= 32 { h } else { h & ((1 << bits) - 1) }
        };
        match self.dst {
            IpAddr::V4(a) if self.dst_len < 32 => {
                let keep = if self.dst_len == 0 {
                    0
                } else {
                    u32::MAX << (32 - u32::from(self.dst_len))
                };
                IpAddr::V4(((u32::from(a) & keep) | host(32) as u32).into())
            }
            IpAddr::V6(a) if self.dst_len < 128 => {
                let keep = if self.dst_len == 0 {
                    0
                } else {
                    u128::MAX << (128 - u32::from(self.dst_len))
                };
                IpAddr::V6(((u128::from(a) & keep) | host(128)).into())
            }
            a => a,
        }
    }

    /// Frame of flow `flow`.
    pub fn frame(&self, flow: u32) -> Vec<u8> {
        let b = Builder::new(
            &self.source(flow).to_string(),
            &self.destination(flow).to_string(),
            self.l4(flow),
        );
        let headers = b.build().len();
        b.payload(&vec![0x5a; self.size - headers]).build()
    }

    /// The packets: `(timestamp in ns, frame)`.
    pub fn packets(&self) -> Generator {
        Generator {
            spec: self.clone(),
            templates: Vec::new(),
            next: 0,
            conv: self.conv.as_ref().map(|c| c.packets()),
        }
    }
}

/// The packets of a [`GenSpec`], built once per flow.
pub struct Generator {
    spec: GenSpec,
    templates: Vec<Vec<u8>>,
    next: u64,
    conv: Option<crate::conversation::ConvPackets>,
}

impl Iterator for Generator {
    type Item = (u64, Vec<u8>);
    fn next(&mut self) -> Option<Self::Item> {
        if let Some(c) = &mut self.conv {
            return c.next();
        }
        if self.next >= self.spec.count {
            return None;
        }
        let flow = (self.next % u64::from(self.spec.flows)) as u32;
        if self.templates.len() <= flow as usize && self.templates.len() < 65_536 {
            self.templates.push(self.spec.frame(flow));
        }
        let mut frame = match self.templates.get(flow as usize) {
            Some(t) => t.clone(),
            None => self.spec.frame(flow),
        };
        vary(&mut frame, self.spec.proto, self.spec.v6, self.next as u32);
        // In range: GenSpec::parse checked the last packet's time.
        let ts = self.spec.start_ns
            + (u128::from(self.next) * 1_000_000_000 / u128::from(self.spec.rate)) as u64;
        self.next += 1;
        Some((ts, frame))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = (self.spec.count - self.next) as usize;
        (left, Some(left))
    }
}

/// Murmur3's 32-bit finaliser: a bijection that scatters consecutive
/// numbers over the whole word.
fn mix32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x85eb_ca6b);
    x ^= x >> 13;
    x = x.wrapping_mul(0xc2b2_ae35);
    x ^ (x >> 16)
}

/// The ones' complement sum of `b` as 16-bit big-endian words (an odd
/// last byte padded with a zero), not folded.
fn sum16(b: &[u8]) -> u32 {
    b.chunks(2)
        .map(|w| u32::from(w[0]) << 8 | u32::from(w.get(1).copied().unwrap_or(0)))
        .sum()
}

/// The checksum at `frame[at..at + 2]` after the bytes `old` (starting at
/// an even distance from the checksummed data's start) became `new`
/// (RFC 1624: HC' = ~(~HC + ~m + m')). `udp`: a checksum of 0 means none
/// (left alone), and a computed 0 is sent as 0xffff.
fn patch(frame: &mut [u8], at: usize, old: &[u8], new: &[u8], udp: bool) {
    let hc = u16::from_be_bytes([frame[at], frame[at + 1]]);
    if udp && hc == 0 {
        return; // IPv4 UDP without a checksum
    }
    // ~m is 0xffff - m per word; summing words of ~old is n*0xffff - sum(old).
    let words = old.len().div_ceil(2) as u32;
    let mut s = u32::from(!hc) + words * 0xffff - sum16(old) + sum16(new);
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    let mut c = !(s as u16);
    if udp && c == 0 {
        c = 0xffff;
    }
    frame[at..at + 2].copy_from_slice(&c.to_be_bytes());
}

/// Makes a flow's template packet `n` of the stream (the module's rule).
fn vary(frame: &mut [u8], proto: Proto, v6: bool, n: u32) {
    let ip = 14;
    let l4 = if v6 { ip + 40 } else { ip + 20 };
    if !v6 {
        let old = [frame[ip + 4], frame[ip + 5]];
        let new = (n as u16).to_be_bytes();
        frame[ip + 4..ip + 6].copy_from_slice(&new);
        patch(frame, ip + 10, &old, &new, false);
    }
    let (header, csum, udp) = match proto {
        Proto::Udp => (8, 6, true),
        Proto::Tcp => (20, 16, false),
        Proto::Icmp => (8, 2, false),
    };
    if proto == Proto::Tcp {
        let at = l4 + 4;
        let old: [u8; 4] = frame[at..at + 4].try_into().expect("4 bytes");
        let new = u32::from_be_bytes(old).wrapping_add(n).to_be_bytes();
        frame[at..at + 4].copy_from_slice(&new);
        patch(frame, l4 + csum, &old, &new, false);
    }
    let at = l4 + header;
    let room = frame.len().saturating_sub(at).min(4);
    if room > 0 {
        let old: [u8; 4] = {
            let mut o = [0; 4];
            o[..room].copy_from_slice(&frame[at..at + room]);
            o
        };
        let new = n.to_be_bytes();
        frame[at..at + room].copy_from_slice(&new[4 - room..]);
        patch(frame, l4 + csum, &old[..room], &new[4 - room..], udp);
    }
}

/// Several streams merged in timestamp order.
pub fn merge(specs: &[GenSpec]) -> impl Iterator<Item = (u64, Vec<u8>)> + use<> {
    let mut streams: Vec<std::iter::Peekable<Generator>> =
        specs.iter().map(|s| s.packets().peekable()).collect();
    std::iter::from_fn(move || {
        let mut best: Option<(usize, u64)> = None;
        for (i, s) in streams.iter_mut().enumerate() {
            if let Some(&(ts, _)) = s.peek()
                && best.is_none_or(|(_, b)| ts < b)
            {
                best = Some((i, ts));
            }
        }
        streams[best?.0].next()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_generate() {
        let g = GenSpec::parse("udp,flows=3,size=100,count=7,rate=1000,src=10.1.0.0/24,dport=53")
            .unwrap();
        let pkts: Vec<_> = g.packets().collect();
        assert_eq!(pkts.len(), 7);
        assert!(pkts.iter().all(|(_, p)| p.len() == 100));
        assert_eq!(pkts[1].0 - pkts[0].0, 1_000_000, "1000 packets per second");
        // Three flows, round-robin: packets 0 and 3 differ only where
        // packets differ (identification, payload counter, checksums).
        assert_eq!(
            pkts[0].1[26..38],
            pkts[3].1[26..38],
            "three flows, round-robin"
        );
        assert_ne!(pkts[0].1[26..38], pkts[1].1[26..38]);
        assert_ne!(pkts[0].1, pkts[3].1, "packets of a flow differ");
        assert_eq!(&pkts[1].1[26..30], &[10, 1, 0, 1], "second source address");
        assert_eq!(&pkts[0].1[36..38], &53u16.to_be_bytes());
        // Destinations spread over a prefix, one per flow, all inside it.
        let spread = GenSpec::parse("udp,flows=64,count=64,dst=10.128.0.0/9").unwrap();
        let dsts: std::collections::HashSet<[u8; 4]> = spread
            .packets()
            .map(|(_, p)| p[30..34].try_into().unwrap())
            .collect();
        assert_eq!(dsts.len(), 64);
        assert!(dsts.iter().all(|d| d[0] == 10 && d[1] >= 128), "{dsts:?}");
        let anywhere = GenSpec::parse("udp,flows=16,count=16,dst=0.0.0.0/0").unwrap();
        let firsts: std::collections::HashSet<u8> =
            anywhere.packets().map(|(_, p)| p[30]).collect();
        assert!(firsts.len() > 8, "spread over the whole space: {firsts:?}");
        let v6 = GenSpec::parse("udp,v6,flows=2,count=2,dst=2001:db8::/32").unwrap();
        let d: Vec<Vec<u8>> = v6.packets().map(|(_, p)| p[38..54].to_vec()).collect();
        assert!(d[0] != d[1] && d[0][..4] == [0x20, 0x01, 0x0d, 0xb8]);
        let v6 = GenSpec::parse("tcp,v6,count=2").unwrap();
        assert_eq!(&v6.packets().next().unwrap().1[12..14], &[0x86, 0xdd]);
        for bad in [
            "udp,flows=0",
            "udp,size=20",
            "udp,bogus",
            "udp,src=10.0.0.0/40",
            "udp,v6,src=10.0.0.0/8",
            "udp,dport=70000",
            "udp,dst=10.0.0.0/33",
        ] {
            assert!(GenSpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn errors_name_the_bad_field() {
        let e = GenSpec::parse("udp,dport=70000").unwrap_err();
        assert_eq!(
            e,
            GenSpecError::Field {
                field: "dport=70000".into(),
                reason: "ports are 0-65535"
            }
        );
        assert_eq!(e.to_string(), "--gen `dport=70000`: ports are 0-65535");
        let e = GenSpec::parse("udp,size=20").unwrap_err();
        assert!(
            matches!(
                e,
                GenSpecError::TooSmall {
                    size: 20,
                    min: 42,
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "--gen udp,size=20: size 20 is below the 42 bytes of the headers"
        );
    }

    /// The ones' complement sum of the pseudo-header and segment (or of
    /// the IPv4 header) folded: 0xffff when the checksum in it is right.
    fn folded(parts: &[&[u8]]) -> u16 {
        let mut s: u32 = parts.iter().map(|p| sum16(p)).sum();
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        s as u16
    }

    fn checksums_hold(f: &[u8], v6: bool, proto: u8) -> bool {
        let (l4, pseudo) = if v6 {
            let len = (f.len() - 54) as u32;
            let mut p = f[22..54].to_vec();
            p.extend_from_slice(&len.to_be_bytes());
            p.extend_from_slice(&[0, 0, 0, f[20]]);
            (54, p)
        } else {
            assert_eq!(folded(&[&f[14..34]]), 0xffff, "IPv4 header checksum");
            let mut p = f[26..34].to_vec();
            p.extend_from_slice(&[0, f[23]]);
            p.extend_from_slice(&((f.len() - 34) as u16).to_be_bytes());
            (34, p)
        };
        if proto == 1 {
            folded(&[&f[l4..]]) == 0xffff
        } else {
            folded(&[&pseudo, &f[l4..]]) == 0xffff
        }
    }

    #[test]
    fn packets_of_a_flow_differ_and_keep_valid_checksums() {
        for (spec, proto) in [
            ("udp,flows=2,count=600", 17),
            ("udp,v6,flows=2,count=600", 17),
            ("udp,v6,flows=2,count=600,size=63", 17),
            ("tcp,flows=3,count=600", 6),
            ("tcp,v6,flows=3,count=600", 6),
            ("icmp,flows=1,count=600,size=100", 1),
            ("udp,flows=1,count=70000,size=42", 17),
        ] {
            let g = GenSpec::parse(spec).unwrap();
            let pkts: Vec<_> = g.packets().map(|p| p.1).collect();
            let distinct: std::collections::HashSet<&Vec<u8>> = pkts.iter().collect();
            // Without a payload, IPv4 UDP packets differ by their 16-bit
            // identification only; IPv6 with one payload byte, by it.
            let want = if spec.ends_with("size=42") {
                65_536
            } else if spec.ends_with("size=63") {
                256
            } else {
                pkts.len()
            };
            assert_eq!(distinct.len(), want, "{spec}");
            for (i, f) in pkts.iter().enumerate() {
                assert!(checksums_hold(f, g.v6, proto), "{spec}: packet {i}");
                if !g.v6 {
                    assert_eq!(&f[18..20], &(i as u16).to_be_bytes(), "{spec}");
                }
            }
        }
    }

    #[test]
    fn streams_merge_by_time() {
        let a = GenSpec::parse("udp,count=3,rate=10").unwrap();
        let b = GenSpec::parse("tcp,count=3,rate=20").unwrap();
        let ts: Vec<u64> = merge(&[a, b]).map(|p| p.0).collect();
        assert_eq!(ts.len(), 6);
        assert!(ts.windows(2).all(|w| w[0] <= w[1]));
    }
}
