//! Sharding packets over workers as RSS spreads them over receive queues:
//! by a hash of the flow, so each flow's packets stay in order on one
//! worker. The symmetric hash puts both directions of a connection on the
//! same worker (what stateful programs such as connection trackers need).

/// How packets are spread over workers.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub enum Sharding {
    /// The 5-tuple (addresses and ports of TCP, UDP and SCTP; addresses
    /// alone for other IP protocols and fragments; MAC addresses for
    /// non-IP frames), the same for both directions.
    #[default]
    Symmetric,
    /// The same fields, in order (the two directions may part).
    Directional,
    /// Packet by packet in turn: for programs whose result does not depend
    /// on packet order within a flow.
    RoundRobin,
}

impl Sharding {
    /// The worker (of `workers`) that runs a packet: the dispatcher of
    /// `sluice run --threads N` and a flow-affine partition ask this one
    /// function. `seq` is the packet's number in the source, from 1
    /// (round robin goes by it); `frame` its Ethernet bytes.
    pub fn worker(self, workers: usize, seq: u64, frame: &[u8]) -> usize {
        let n = workers.max(1) as u64;
        match self {
            Sharding::Symmetric => (flow_hash(frame, true) % n) as usize,
            Sharding::Directional => (flow_hash(frame, false) % n) as usize,
            Sharding::RoundRobin => (seq % n) as usize,
        }
    }
}

/// A sharding `--shard` does not take.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown sharding `{0}` (symmetric, directional or round-robin)")]
pub struct UnknownSharding(pub String);

impl std::str::FromStr for Sharding {
    type Err = UnknownSharding;
    fn from_str(s: &str) -> Result<Sharding, UnknownSharding> {
        match s {
            "symmetric" => Ok(Sharding::Symmetric),
            "directional" => Ok(Sharding::Directional),
            "round-robin" => Ok(Sharding::RoundRobin),
            _ => Err(UnknownSharding(s.to_string())),
        }
    }
}

/// A 64-bit mix (the finaliser of SplitMix64): every input bit moves every
/// output bit, so `hash % workers` spreads evenly.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn be16(p: &[u8], at: usize) -> Option<u64> {
    Some(u64::from(u16::from_be_bytes(
        p.get(at..at + 2)?.try_into().ok()?,
    )))
}

fn word(p: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w[..p.len().min(8)].copy_from_slice(&p[..p.len().min(8)]);
    u64::from_le_bytes(w)
}

/// Combines the two endpoints, ordered when `symmetric` so that swapping
/// them gives the same value (no mixing here: one mix at the end).
#[inline]
fn pair(a: u64, b: u64, symmetric: bool) -> u64 {
    let (x, y) = if symmetric && b < a { (b, a) } else { (a, b) };
    x.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ y.rotate_left(29)
}

/// The flow hash of an Ethernet frame.
pub fn flow_hash(frame: &[u8], symmetric: bool) -> u64 {
    let mut at = 12;
    let mut ethertype = be16(frame, at).unwrap_or(0);
    // Up to two VLAN tags (802.1Q, 802.1ad).
    for _ in 0..2 {
        if ethertype == 0x8100 || ethertype == 0x88a8 {
            at += 4;
            ethertype = be16(frame, at).unwrap_or(0);
        }
    }
    let l3 = at + 2;
    let macs = || {
        let dst = frame.get(0..6).map_or(0, word);
        let src = frame.get(6..12).map_or(0, word);
        mix(pair(src, dst, symmetric))
    };
    let (addrs, proto, l4) = match ethertype {
        0x0800 => {
            let Some(ip) = frame.get(l3..l3 + 20) else {
                return macs();
            };
            let ihl = usize::from(ip[0] & 0x0f) * 4;
            let src = word(&ip[12..16]);
            let dst = word(&ip[16..20]);
            let fragment = u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0;
            let l4 = (!fragment && ihl >= 20).then_some(l3 + ihl);
            (pair(src, dst, symmetric), ip[9], l4)
        }
        0x86dd => {
            let Some(ip) = frame.get(l3..l3 + 40) else {
                return macs();
            };
            // Each address folded to 64 bits before the pair is ordered.
            let src = mix(word(&ip[8..16])) ^ word(&ip[16..24]);
            let dst = mix(word(&ip[24..32])) ^ word(&ip[32..40]);
            (pair(src, dst, symmetric), ip[6], Some(l3 + 40))
        }
        _ => return macs(),
    };
    let ports = match (proto, l4) {
        // TCP, UDP, SCTP, UDP-Lite: ports first.
        (6 | 17 | 132 | 136, Some(l4)) => match (be16(frame, l4), be16(frame, l4 + 2)) {
            (Some(s), Some(d)) => pair(s, d, symmetric),
            _ => 0,
        },
        _ => 0,
    };
    mix(addrs ^ ports.rotate_left(17) ^ u64::from(proto) << 56)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn udp(src: &str, dst: &str, sport: u16, dport: u16) -> Vec<u8> {
        packet::Builder::udp(src, dst, sport, dport).build()
    }

    #[test]
    fn both_directions_share_a_symmetric_hash() {
        let a = udp("10.0.0.1", "10.0.0.2", 1000, 53);
        let b = udp("10.0.0.2", "10.0.0.1", 53, 1000);
        assert_eq!(flow_hash(&a, true), flow_hash(&b, true));
        assert_ne!(flow_hash(&a, false), flow_hash(&b, false));
        let v6a = packet::Builder::tcp("2001:db8::1", "2001:db8::2", 5, 80).build();
        let v6b = packet::Builder::tcp("2001:db8::2", "2001:db8::1", 80, 5).build();
        assert_eq!(flow_hash(&v6a, true), flow_hash(&v6b, true));
    }

    #[test]
    fn flows_spread_evenly_and_odd_frames_hash() {
        let mut buckets = [0u32; 4];
        for i in 0..4000u16 {
            let p = udp("10.0.0.1", "10.0.0.2", 1024 + i, 53);
            buckets[(flow_hash(&p, true) % 4) as usize] += 1;
        }
        assert!(
            buckets.iter().all(|&n| (800..1200).contains(&n)),
            "{buckets:?}"
        );
        for len in 0..60 {
            let _ = flow_hash(&vec![0x08; len], true);
        }
    }
}
