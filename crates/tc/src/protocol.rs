//! A filter's protocol as tc reads and prints it: `all` (`ETH_P_ALL`),
//! `ip`, `ipv6`, `802.1q`, ... or a number. The block's walk, the
//! classifiers, the command lines and the actions all use it.

/// `ETH_P_ALL`: a filter for every protocol.
pub const ETH_P_ALL: u16 = 0x0003;

/// A protocol that is neither a name tc knows nor a 16-bit number.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("Error: argument \"{0}\" is wrong: invalid protocol")]
pub struct InvalidProtocol(pub String);

/// A protocol name or number as tc reads it (`ip`, `ipv6`, `all`, `arp`,
/// `802.1q`, `0x88cc`).
pub fn parse_protocol(s: &str) -> Result<u16, InvalidProtocol> {
    Ok(match s.to_ascii_lowercase().as_str() {
        "all" => ETH_P_ALL,
        "ip" | "ipv4" => 0x0800,
        "ipv6" => 0x86dd,
        "arp" => 0x0806,
        "rarp" => 0x8035,
        "802.1q" => 0x8100,
        "802.1ad" => 0x88a8,
        "mpls_uc" => 0x8847,
        "mpls_mc" => 0x8848,
        "lldp" => 0x88cc,
        t => {
            let n = t.strip_prefix("0x").map_or_else(
                || t.parse::<u16>().ok(),
                |h| u16::from_str_radix(h, 16).ok(),
            );
            n.ok_or_else(|| InvalidProtocol(s.to_string()))?
        }
    })
}

/// How tc prints a protocol.
pub fn protocol_name(p: u16) -> String {
    match p {
        ETH_P_ALL => "all".into(),
        0x0800 => "ip".into(),
        0x86dd => "ipv6".into(),
        0x0806 => "arp".into(),
        0x8035 => "rarp".into(),
        0x8100 => "802.1Q".into(),
        0x88a8 => "802.1ad".into(),
        0x8847 => "mpls_uc".into(),
        0x8848 => "mpls_mc".into(),
        0x88cc => "lldp".into(),
        p => format!("[{p:04x}]"),
    }
}
