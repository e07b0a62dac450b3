//! Building Ethernet frames of common shapes.

use std::net::IpAddr;

use etherparse::PacketBuilder;

/// The transport of a built packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum L4 {
    Udp {
        sport: u16,
        dport: u16,
    },
    Tcp {
        sport: u16,
        dport: u16,
        syn: bool,
    },
    /// An echo request: ICMP over IPv4, ICMPv6 over IPv6.
    Icmp,
}

/// A frame to build: addresses, TTL, TOS/traffic class, transport, payload.
#[derive(Clone, Debug)]
pub struct Builder {
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    pub src: IpAddr,
    pub dst: IpAddr,
    pub ttl: u8,
    pub tos: u8,
    pub l4: L4,
    pub payload: Vec<u8>,
}

impl Builder {
    pub fn udp(src: &str, dst: &str, sport: u16, dport: u16) -> Builder {
        Builder::new(src, dst, L4::Udp { sport, dport })
    }

    pub fn tcp(src: &str, dst: &str, sport: u16, dport: u16) -> Builder {
        Builder::new(
            src,
            dst,
            L4::Tcp {
                sport,
                dport,
                syn: true,
            },
        )
    }

    pub fn new(src: &str, dst: &str, l4: L4) -> Builder {
        Builder {
            src_mac: [0x02, 0, 0, 0, 0, 0x01],
            dst_mac: [0x02, 0, 0, 0, 0, 0x02],
            src: src.parse().expect("a source IP address"),
            dst: dst.parse().expect("a destination IP address"),
            ttl: 64,
            tos: 0,
            l4,
            payload: Vec::new(),
        }
    }

    pub fn payload(mut self, bytes: &[u8]) -> Builder {
        self.payload = bytes.to_vec();
        self
    }

    pub fn ttl(mut self, ttl: u8) -> Builder {
        self.ttl = ttl;
        self
    }

    pub fn tos(mut self, tos: u8) -> Builder {
        self.tos = tos;
        self
    }

    pub fn macs(mut self, src: [u8; 6], dst: [u8; 6]) -> Builder {
        self.src_mac = src;
        self.dst_mac = dst;
        self
    }

    /// The frame's bytes, checksums filled in.
    pub fn build(&self) -> Vec<u8> {
        let eth = PacketBuilder::ethernet2(self.src_mac, self.dst_mac);
        let ip = match (self.src, self.dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                let mut hdr = etherparse::Ipv4Header::new(
                    0,
                    self.ttl,
                    etherparse::IpNumber(0),
                    s.octets(),
                    d.octets(),
                )
                .expect("a valid IPv4 header");
                hdr.dscp = etherparse::IpDscp::try_new(self.tos >> 2).expect("6-bit DSCP");
                hdr.ecn = etherparse::IpEcn::try_new(self.tos & 3).expect("2-bit ECN");
                eth.ip(etherparse::IpHeaders::Ipv4(hdr, Default::default()))
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => eth.ip(etherparse::IpHeaders::Ipv6(
                etherparse::Ipv6Header {
                    traffic_class: self.tos,
                    flow_label: Default::default(),
                    payload_length: 0,
                    next_header: etherparse::IpNumber(0),
                    hop_limit: self.ttl,
                    source: s.octets(),
                    destination: d.octets(),
                },
                Default::default(),
            )),
            _ => panic!("source and destination of different IP versions"),
        };
        let mut out = Vec::new();
        match self.l4 {
            L4::Udp { sport, dport } => ip.udp(sport, dport).write(&mut out, &self.payload),
            L4::Tcp { sport, dport, syn } => {
                let t = ip.tcp(sport, dport, 1000, 64240);
                let t = if syn { t.syn() } else { t.ack(1) };
                t.write(&mut out, &self.payload)
            }
            // An echo request of the IP version's ICMP (ICMPv6 over IPv6).
            L4::Icmp if self.src.is_ipv6() => {
                ip.icmpv6_echo_request(1, 1).write(&mut out, &self.payload)
            }
            L4::Icmp => ip.icmpv4_echo_request(1, 1).write(&mut out, &self.payload),
        }
        .expect("writing into a Vec cannot fail");
        out
    }
}
