//! The paper's classifier benchmark as data: rule sets of 1 to N exact
//! rules over 1 tuple (the destination address) or 5 (addresses,
//! protocol, ports), for u32 and flower, in one filter (the kernel's usual
//! shape: u32 nodes in table `800:`, flower rules under one mask) or a
//! filter per rule (one priority each); the frame that matches the first
//! rule (best case) or the last (worst case); the u32 trie of 64K leaves
//! as tc lines; and [`rate`], which runs frames through a configuration
//! as `sluice run --tc` does and times it. `sluice bench tc` prints and
//! plots them beside the kernel's.

use std::time::{Duration, Instant};

use runtime::{PacketHook, PacketMeta};

use crate::config::{ClsactHook, Config};
use crate::error::TcError;
use crate::runner::Runner;

/// Which classifier a rule set uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    U32,
    Flower,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::U32 => "u32",
            Kind::Flower => "flower",
        }
    }
}

/// How the rules are spread over filters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Every rule in one filter (one priority).
    OneFilter,
    /// A filter (a priority) per rule.
    FilterPerRule,
}

/// One rule set and the frame that hits it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Case {
    pub kind: Kind,
    pub layout: Layout,
    pub rules: u32,
    /// 1 (the destination address) or 5 (the five tuple).
    pub tuples: u8,
    /// The frame matches the last rule (else the first).
    pub worst: bool,
}

/// Rule `i`'s five tuple (1-based): addresses, UDP ports.
fn tuple(i: u32) -> ([u8; 4], [u8; 4], u16, u16) {
    let (top, hi, lo) = ((i >> 16) as u8, (i >> 8) as u8, i as u8);
    (
        [10, 1 + top, hi, lo],
        [10, 128 + top, hi, lo],
        1024 + (i % 30000) as u16,
        2000 + (i % 20000) as u16,
    )
}

/// Rule `i`'s class: `1:i`, then `2:(i - 65536)`, ... past 16 bits.
fn class_of(i: u32) -> u32 {
    ((1 + (i >> 16)) << 16) | (i & 0xffff)
}

fn dotted(a: [u8; 4]) -> String {
    format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3])
}

/// A UDP frame over IPv4 with the given tuple, to a MAC address that is
/// not the receiver's (the kernel's stack drops it right after tc).
pub fn udp_frame(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 20 + 8 + 22];
    f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0xbe, 0x01]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0xbe, 0x02]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip = &mut f[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&50u16.to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&src);
    ip[16..20].copy_from_slice(&dst);
    f[34..36].copy_from_slice(&sport.to_be_bytes());
    f[36..38].copy_from_slice(&dport.to_be_bytes());
    f[38..40].copy_from_slice(&30u16.to_be_bytes());
    f
}

impl Case {
    pub fn label(&self) -> String {
        format!(
            "{}{} {} tuple{}",
            self.kind.name(),
            match self.layout {
                Layout::OneFilter => "",
                Layout::FilterPerRule => " (filter per rule)",
            },
            self.tuples,
            if self.tuples == 1 { "" } else { "s" }
        )
    }

    /// The rule the frame matches (1-based).
    pub fn target(&self) -> u32 {
        if self.worst { self.rules } else { 1 }
    }

    /// The class the matching rule gives.
    pub fn classid(&self) -> u32 {
        class_of(self.target())
    }

    /// The tc lines: a clsact qdisc on `dev`, the rules at its ingress.
    pub fn lines(&self, dev: &str) -> String {
        let mut out = format!("qdisc add dev {dev} clsact\n");
        for i in 1..=self.rules {
            let prio = match self.layout {
                Layout::OneFilter => 1,
                Layout::FilterPerRule => i,
            };
            let (src, dst, sport, dport) = tuple(i);
            let keys = match (self.kind, self.tuples) {
                (Kind::U32, 1) => format!("match ip dst {}/32", dotted(dst)),
                (Kind::U32, _) => format!(
                    "match ip src {}/32 match ip dst {}/32 match ip protocol 17 0xff \
                     match ip sport {sport} 0xffff match ip dport {dport} 0xffff",
                    dotted(src),
                    dotted(dst)
                ),
                (Kind::Flower, 1) => format!("dst_ip {}", dotted(dst)),
                (Kind::Flower, _) => format!(
                    "src_ip {} dst_ip {} ip_proto udp src_port {sport} dst_port {dport}",
                    dotted(src),
                    dotted(dst)
                ),
            };
            let class = class_of(i);
            out += &format!(
                "filter add dev {dev} ingress prio {prio} protocol ip {} {keys} classid {:x}:{:x}\n",
                self.kind.name(),
                class >> 16,
                class & 0xffff
            );
        }
        out
    }

    /// The frame that matches the target rule.
    pub fn frame(&self) -> Vec<u8> {
        let (src, dst, sport, dport) = tuple(self.target());
        udp_frame(src, dst, sport, dport)
    }
}

/// The paper's scripted u32 trie on `dev`'s ingress: hashed on the third
/// octet of the source (10.0.C.D), then on the fourth, 64K leaves each with
/// its class `C+1:D+1`.
pub fn trie_lines(dev: &str) -> String {
    let pre = format!("filter add dev {dev} ingress prio 1 protocol ip");
    let mut out = format!("qdisc add dev {dev} clsact\n{pre} handle 1: u32 divisor 256\n");
    out += &format!("{pre} u32 match ip src 10.0.0.0/16 hashkey mask 0x0000ff00 at 12 link 1:\n");
    for c in 0..256u32 {
        let t = format!("{:x}:", 0x100 + c);
        out += &format!("{pre} handle {t} u32 divisor 256\n");
        out += &format!(
            "{pre} u32 ht 1:{c:x}: match ip src 10.0.{c}.0/24 hashkey mask 0x000000ff at 12 link {t}\n"
        );
        for d in 0..256u32 {
            out += &format!(
                "{pre} u32 ht {t}{d:x}: match ip src 10.0.{c}.{d}/32 flowid {:x}:{:x}\n",
                c + 1,
                d + 1
            );
        }
    }
    out
}

/// `n` frames from sources spread over the trie's 64K leaves.
pub fn trie_frames(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let leaf = (i as u32).wrapping_mul(40503) & 0xffff;
            udp_frame([10, 0, (leaf >> 8) as u8, leaf as u8], [10, 9, 9, 9], 7, 7)
        })
        .collect()
}

/// What [`rate`] measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate {
    pub packets: u64,
    pub ns_per_packet: f64,
    /// The class the first frame got (to check the rule set matched).
    pub classid: u32,
}

/// Runs `frames` round and round into `dev`'s ingress under `config`, for
/// about `time`, as `sluice run --tc` runs them (a [`Runner`]: the frame
/// copied into an skb, classified, its actions run).
pub fn rate(
    config: Config,
    dev: &str,
    frames: &[Vec<u8>],
    time: Duration,
) -> Result<Rate, TcError> {
    if frames.is_empty() {
        return Err(TcError::NoFrames);
    }
    let mut runner = Runner::new(config, dev, ClsactHook::Ingress);
    let meta = PacketMeta::default();
    let first = runner.run(&frames[0], &meta)?;
    let classid = first.skb.map_or(0, |s| s.tc_classid);
    let start = Instant::now();
    let mut packets = 0u64;
    // A pass of a few thousand packets between looks at the clock.
    let reps = (4096 / frames.len()).max(1);
    while start.elapsed() < time {
        for _ in 0..reps {
            for f in frames {
                runner.run(f, &meta)?;
            }
        }
        packets += (reps * frames.len()) as u64;
    }
    let ns = start.elapsed().as_nanos() as f64 / packets as f64;
    Ok(Rate {
        packets,
        ns_per_packet: ns,
        classid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ShowOptions;

    fn config(lines: &str) -> Config {
        let mut c = Config::default();
        c.run_batch(lines, ShowOptions::default()).unwrap();
        c
    }

    #[test]
    fn every_case_matches_its_target_rule() {
        for kind in [Kind::U32, Kind::Flower] {
            for layout in [Layout::OneFilter, Layout::FilterPerRule] {
                for tuples in [1, 5] {
                    for worst in [false, true] {
                        let case = Case {
                            kind,
                            layout,
                            rules: 300,
                            tuples,
                            worst,
                        };
                        let r = rate(
                            config(&case.lines("b0")),
                            "b0",
                            &[case.frame()],
                            Duration::ZERO,
                        )
                        .unwrap();
                        assert_eq!(r.classid, case.classid(), "{}", case.label());
                    }
                }
            }
        }
    }

    #[test]
    fn a_large_flower_set_past_16_bits_of_class_matches_its_last_rule() {
        let case = Case {
            kind: Kind::Flower,
            layout: Layout::OneFilter,
            rules: 70_000,
            tuples: 5,
            worst: true,
        };
        assert_eq!(case.classid(), 0x2_0000 | (70_000 - 0x1_0000));
        let r = rate(
            config(&case.lines("b0")),
            "b0",
            &[case.frame()],
            Duration::ZERO,
        )
        .unwrap();
        assert_eq!(r.classid, case.classid());
    }

    #[test]
    fn trie_frames_reach_their_leaves() {
        let c = config(&trie_lines("b0"));
        let frames = trie_frames(3);
        for f in &frames {
            let r = rate(
                Config::default(),
                "none",
                std::slice::from_ref(f),
                Duration::ZERO,
            )
            .unwrap();
            assert_eq!(r.classid, 0);
        }
        let (c3, c4) = (frames[1][14 + 14], frames[1][14 + 15]);
        let r = rate(c, "b0", &frames[1..2], Duration::ZERO).unwrap();
        assert_eq!(r.classid, (u32::from(c3) + 1) << 16 | (u32::from(c4) + 1));
    }
}
