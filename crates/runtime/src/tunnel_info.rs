//! The tunnel metadata a packet carries out of a run: what
//! `bpf_skb_set_tunnel_key` (and `_opt`) left, where an encapsulating
//! device would take it (the helpers are in `helpers/tunnel.rs`).

/// `BPF_F_TUNINFO_IPV6`: the key's remote address is IPv6.
pub(crate) const F_TUNINFO_IPV6: u64 = 1;

/// What `bpf_skb_set_tunnel_key` (and `_opt`) left on a packet.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct TunnelInfo {
    /// The `struct bpf_tunnel_key` as given, padded to its full size.
    pub key: Vec<u8>,
    pub flags: u64,
    pub options: Vec<u8>,
}

impl TunnelInfo {
    pub fn id(&self) -> u32 {
        u32::from_le_bytes(self.key[0..4].try_into().expect("44 bytes"))
    }

    pub fn remote(&self) -> std::net::IpAddr {
        let b = &self.key[4..20];
        if self.flags & F_TUNINFO_IPV6 != 0 {
            std::net::IpAddr::from(<[u8; 16]>::try_from(b).expect("16 bytes"))
        } else {
            // remote_ipv4 is in host order.
            let v = u32::from_le_bytes(b[..4].try_into().expect("4 bytes"));
            std::net::IpAddr::from(v.to_be_bytes())
        }
    }
}
