//! What a port's description says of its interface, read as Open vSwitch's
//! netdev-linux reads it: the administrative state (`IFF_UP`), the carrier,
//! and the link's features and speeds from `ETHTOOL_GSET`. A veth says
//! 10 Gb/s full duplex over twisted pair and supports nothing, so
//! `ovs-ofctl show` prints `current: 10GB-FD COPPER` and
//! `speed: 10000 Mbps now, 0 Mbps max` for it, as for OVS.

use std::ffi::CString;

use openflow::{Port, port_bits};

/// `ofp_port_features` bits (OpenFlow 1.3).
pub mod features {
    pub const F_10MB_HD: u32 = 1 << 0;
    pub const F_10MB_FD: u32 = 1 << 1;
    pub const F_100MB_HD: u32 = 1 << 2;
    pub const F_100MB_FD: u32 = 1 << 3;
    pub const F_1GB_HD: u32 = 1 << 4;
    pub const F_1GB_FD: u32 = 1 << 5;
    pub const F_10GB_FD: u32 = 1 << 6;
    pub const F_40GB_FD: u32 = 1 << 7;
    pub const F_100GB_FD: u32 = 1 << 8;
    pub const F_1TB_FD: u32 = 1 << 9;
    pub const COPPER: u32 = 1 << 11;
    pub const FIBER: u32 = 1 << 12;
    pub const AUTONEG: u32 = 1 << 13;
    pub const PAUSE: u32 = 1 << 14;
    pub const PAUSE_ASYM: u32 = 1 << 15;
}

use features::*;

/// `SIOCETHTOOL` and `ETHTOOL_GSET` (linux/sockios.h, linux/ethtool.h).
const SIOCETHTOOL: libc::c_ulong = 0x8946;
const ETHTOOL_GSET: u32 = 0x1;
/// `ethtool_cmd.port` for twisted pair and fibre.
const PORT_TP: u8 = 0x00;
const PORT_FIBRE: u8 = 0x03;

/// `struct ethtool_cmd` (the legacy settings call OVS 3.1 uses).
#[repr(C)]
#[derive(Default)]
struct EthtoolCmd {
    cmd: u32,
    supported: u32,
    advertising: u32,
    speed: u16,
    duplex: u8,
    port: u8,
    phy_address: u8,
    transceiver: u8,
    autoneg: u8,
    mdio_support: u8,
    maxtxpkt: u32,
    maxrxpkt: u32,
    speed_hi: u16,
    eth_tp_mdix: u8,
    eth_tp_mdix_ctrl: u8,
    lp_advertising: u32,
    reserved: [u32; 2],
}

/// A link's features as OpenFlow's port description carries them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkFeatures {
    pub curr: u32,
    pub advertised: u32,
    pub supported: u32,
    /// kb/s.
    pub curr_speed: u32,
    pub max_speed: u32,
}

/// `dev`'s description as port `port_no` named `name`: its address, config
/// (`PORT_DOWN` when not up), state (`LINK_DOWN` without carrier, `LIVE`
/// when up with carrier, as OVS marks a port fit for fast failover) and
/// features. What cannot be read is left out (no features, config and
/// state 0), never an error. Everything is asked of the kernel through a
/// socket, not sysfs: a switch started in another namespace (`--netns`)
/// still sees the sysfs of the one it came from.
pub fn interface_port(dev: &str, port_no: u32, name: &str) -> Port {
    let mut p = Port {
        port_no,
        hw_addr: hw_addr(dev).unwrap_or([0x02, 0, 0, 0, 0, port_no as u8]),
        name: name.into(),
        ..Port::default()
    };
    (p.config, p.state) = interface_state(dev).unwrap_or_default();
    let f = read_features(dev).unwrap_or_default();
    p.curr = f.curr;
    p.advertised = f.advertised;
    p.supported = f.supported;
    p.curr_speed = f.curr_speed;
    p.max_speed = f.max_speed;
    p
}

/// (config, state) bits of `dev` now, from its flags as OVS reads them
/// (`IFF_UP`; `IFF_RUNNING` for the carrier); None when unreadable.
pub fn interface_state(dev: &str) -> Option<(u32, u32)> {
    // SAFETY: SIOCGIFFLAGS only writes `ifr_flags` of the ifreq it is given.
    let ifr = unsafe { ifreq_ioctl(dev, libc::SIOCGIFFLAGS, |_| {})? };
    // SAFETY: SIOCGIFFLAGS filled the flags member of the union.
    let flags = unsafe { ifr.ifr_ifru.ifru_flags } as i32;
    let up = flags & libc::IFF_UP != 0;
    let carrier = flags & libc::IFF_RUNNING != 0;
    let config = if up { 0 } else { port_bits::CONFIG_PORT_DOWN };
    let state = match (up, carrier) {
        (_, false) => port_bits::STATE_LINK_DOWN,
        (true, true) => port_bits::STATE_LIVE,
        (false, true) => 0,
    };
    Some((config, state))
}

/// `dev`'s MAC address (`SIOCGIFHWADDR`).
pub fn hw_addr(dev: &str) -> Option<[u8; 6]> {
    // SAFETY: SIOCGIFHWADDR only writes `ifr_hwaddr` of the ifreq.
    let ifr = unsafe { ifreq_ioctl(dev, libc::SIOCGIFHWADDR, |_| {})? };
    // SAFETY: SIOCGIFHWADDR filled the hwaddr member of the union.
    let data = unsafe { ifr.ifr_ifru.ifru_hwaddr.sa_data };
    let mut mac = [0u8; 6];
    for (m, d) in mac.iter_mut().zip(data) {
        *m = d as u8;
    }
    Some(mac)
}

/// An ifreq naming `dev`, prepared by `prepare`, through `ioctl(request)`
/// on a datagram socket of this namespace; None on any failure.
///
/// # Safety
/// `request` must be an interface ioctl that reads and writes no more
/// than the ifreq and what `prepare` points it at, which must outlive the
/// call.
unsafe fn ifreq_ioctl(
    dev: &str,
    request: libc::c_ulong,
    prepare: impl FnOnce(&mut libc::ifreq),
) -> Option<libc::ifreq> {
    let name = CString::new(dev).ok()?;
    if name.as_bytes().len() >= libc::IFNAMSIZ {
        return None;
    }
    // SAFETY: an all-zero ifreq is valid; the name fits (checked above)
    // and stays NUL-terminated; the caller vouches for `request`; the
    // socket is closed on every path.
    unsafe {
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (d, s) in ifr.ifr_name.iter_mut().zip(name.as_bytes()) {
            *d = *s as libc::c_char;
        }
        prepare(&mut ifr);
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return None;
        }
        let r = libc::ioctl(fd, request as _, &mut ifr);
        libc::close(fd);
        (r == 0).then_some(ifr)
    }
}

/// `dev`'s features by `ETHTOOL_GSET`, mapped as OVS maps them; None when
/// the device does not answer.
pub fn read_features(dev: &str) -> Option<LinkFeatures> {
    let mut cmd = EthtoolCmd {
        cmd: ETHTOOL_GSET,
        ..EthtoolCmd::default()
    };
    let at = (&mut cmd as *mut EthtoolCmd).cast();
    // SAFETY: ETHTOOL_GSET writes one ethtool_cmd at `ifr_data`, which
    // points at `cmd`, alive past the call.
    unsafe { ifreq_ioctl(dev, SIOCETHTOOL, |ifr| ifr.ifr_ifru.ifru_data = at)? };
    Some(features_of(&cmd))
}

/// OVS's netdev_linux_read_features: the link modes, port type, autoneg
/// and pause bits, and the current speed as one feature bit.
fn features_of(c: &EthtoolCmd) -> LinkFeatures {
    // ethtool's SUPPORTED_*/ADVERTISED_* bits to OpenFlow's.
    const MODES: [(u32, u32); 12] = [
        (1 << 0, F_10MB_HD),
        (1 << 1, F_10MB_FD),
        (1 << 2, F_100MB_HD),
        (1 << 3, F_100MB_FD),
        (1 << 4, F_1GB_HD),
        (1 << 5, F_1GB_FD),
        (1 << 12, F_10GB_FD),
        (1 << 7, COPPER),
        (1 << 10, FIBER),
        (1 << 6, AUTONEG),
        (1 << 13, PAUSE),
        (1 << 14, PAUSE_ASYM),
    ];
    let map = |bits: u32| {
        MODES
            .iter()
            .filter(|(e, _)| bits & e != 0)
            .fold(0, |a, (_, f)| a | f)
    };
    let speed = u32::from(c.speed_hi) << 16 | u32::from(c.speed);
    let full = c.duplex != 0;
    let mut curr = match speed {
        10 if full => F_10MB_FD,
        10 => F_10MB_HD,
        100 if full => F_100MB_FD,
        100 => F_100MB_HD,
        1000 if full => F_1GB_FD,
        1000 => F_1GB_HD,
        10_000 => F_10GB_FD,
        40_000 => F_40GB_FD,
        100_000 => F_100GB_FD,
        1_000_000 => F_1TB_FD,
        _ => 0,
    };
    curr |= match c.port {
        PORT_TP => COPPER,
        PORT_FIBRE => FIBER,
        _ => 0,
    };
    if c.autoneg != 0 {
        curr |= AUTONEG;
    }
    let supported = map(c.supported);
    LinkFeatures {
        curr,
        advertised: map(c.advertising),
        supported,
        curr_speed: kbps(curr),
        max_speed: kbps(supported),
    }
}

/// The fastest speed among `features` in kb/s, 0 for none (OVS's
/// `netdev_features_to_bps(features, 0) / 1000`).
pub fn kbps(features: u32) -> u32 {
    const SPEEDS: [(u32, u64); 7] = [
        (F_1TB_FD, 1_000_000_000),
        (F_100GB_FD, 100_000_000),
        (F_40GB_FD, 40_000_000),
        (F_10GB_FD, 10_000_000),
        (F_1GB_HD | F_1GB_FD, 1_000_000),
        (F_100MB_HD | F_100MB_FD, 100_000),
        (F_10MB_HD | F_10MB_FD, 10_000),
    ];
    SPEEDS
        .iter()
        .find(|(f, _)| features & f != 0)
        .map_or(0, |(_, k)| (*k).min(u64::from(u32::MAX)) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_veth_is_10g_copper_and_supports_nothing() {
        let veth = EthtoolCmd {
            speed: 10_000,
            duplex: 1,
            port: PORT_TP,
            ..EthtoolCmd::default()
        };
        let f = features_of(&veth);
        assert_eq!(f.curr, F_10GB_FD | COPPER);
        assert_eq!((f.supported, f.advertised), (0, 0));
        assert_eq!((f.curr_speed, f.max_speed), (10_000_000, 0));
    }

    #[test]
    fn a_1g_nic_with_autoneg() {
        let nic = EthtoolCmd {
            speed: 1000,
            duplex: 1,
            port: PORT_TP,
            autoneg: 1,
            supported: 0b11_1111 | 1 << 6 | 1 << 7,
            advertising: 0b10_1010 | 1 << 6 | 1 << 7,
            ..EthtoolCmd::default()
        };
        let f = features_of(&nic);
        assert_eq!(f.curr, F_1GB_FD | COPPER | AUTONEG);
        assert_eq!(f.supported & F_1GB_HD, F_1GB_HD);
        assert_eq!(f.advertised & F_1GB_HD, 0);
        assert_eq!((f.curr_speed, f.max_speed), (1_000_000, 1_000_000));
    }
}
