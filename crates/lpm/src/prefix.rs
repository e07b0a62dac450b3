//! An IPv4 prefix: an address and a length, host bits clear.

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

/// An IPv4 prefix `addr/len` with the bits past `len` zero. Addresses are
/// host-order `u32`s throughout the crate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Prefix {
    addr: u32,
    len: u8,
}

/// The netmask of a prefix length (`0` for `/0`).
pub fn mask(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(len.min(32)))
    }
}

impl Prefix {
    /// `addr/len`, or `None` when `len > 32` or host bits are set.
    pub fn new(addr: u32, len: u8) -> Option<Prefix> {
        (len <= 32 && addr & !mask(len) == 0).then_some(Prefix { addr, len })
    }

    /// `addr/len` with the host bits cleared.
    pub fn truncating(addr: u32, len: u8) -> Prefix {
        let len = len.min(32);
        Prefix {
            addr: addr & mask(len),
            len,
        }
    }

    /// The default route, `0.0.0.0/0`.
    pub const DEFAULT: Prefix = Prefix { addr: 0, len: 0 };

    pub fn addr(self) -> u32 {
        self.addr
    }

    pub fn len(self) -> u8 {
        self.len
    }

    /// Whether this is `/0` (it has no bits; not "empty" as a set).
    pub fn is_empty(self) -> bool {
        self.len == 0
    }

    pub fn mask(self) -> u32 {
        mask(self.len)
    }

    pub fn contains(self, addr: u32) -> bool {
        (addr ^ self.addr) & self.mask() == 0
    }

    /// Whether `self` is a prefix of `other` (itself included).
    pub fn covers(self, other: Prefix) -> bool {
        self.len <= other.len && self.contains(other.addr)
    }

    /// The first address of the prefix.
    pub fn first(self) -> u32 {
        self.addr
    }

    /// The last address of the prefix.
    pub fn last(self) -> u32 {
        self.addr | !self.mask()
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.addr), self.len)
    }
}

impl FromStr for Prefix {
    type Err = String;

    /// `a.b.c.d/len`, or `a.b.c.d` for a host route; host bits must be clear.
    fn from_str(s: &str) -> Result<Prefix, String> {
        let (a, len) = match s.split_once('/') {
            Some((a, l)) => (
                a,
                l.parse::<u8>()
                    .ok()
                    .filter(|&l| l <= 32)
                    .ok_or_else(|| format!("bad prefix length in {s:?}"))?,
            ),
            None => (s, 32),
        };
        let addr: Ipv4Addr = a
            .parse()
            .map_err(|_| format!("{a:?} is not an IPv4 address"))?;
        Prefix::new(u32::from(addr), len).ok_or_else(|| format!("{s:?} has host bits set"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_print() {
        let p: Prefix = "10.1.0.0/16".parse().unwrap();
        assert_eq!((p.addr(), p.len()), (0x0a01_0000, 16));
        assert_eq!(p.to_string(), "10.1.0.0/16");
        assert_eq!(p.last(), 0x0a01_ffff);
        assert_eq!("1.2.3.4".parse::<Prefix>().unwrap().len(), 32);
        assert!(
            "10.1.0.1/16"
                .parse::<Prefix>()
                .unwrap_err()
                .contains("host bits")
        );
        assert!("10.1.0.0/33".parse::<Prefix>().is_err());
        assert!("10.1.0/8".parse::<Prefix>().is_err());
        assert_eq!(Prefix::DEFAULT.last(), u32::MAX);
        assert!(Prefix::DEFAULT.contains(0xffff_ffff));
        assert!(p.covers("10.1.2.0/24".parse().unwrap()));
        assert!(!p.covers("10.0.0.0/8".parse().unwrap()));
    }
}
