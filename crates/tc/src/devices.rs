//! Interface names and indexes. Rules name devices (`mirred ... dev v1`,
//! `indev v0`) where programs and packets carry indexes (`bpf_redirect`,
//! `skb->ifindex`): a configuration keeps one table between them. A name
//! gets the index it is given (the kernel's, when sluice runs beside it),
//! or else the next free one from 2 in the order names first appear
//! (1 is the default arrival interface of a replay).

use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Devices {
    by_name: BTreeMap<String, u32>,
}

impl Devices {
    /// `name`'s index, given one now if it had none.
    pub fn index(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.by_name.get(name) {
            return i;
        }
        let used: std::collections::BTreeSet<u32> = self.by_name.values().copied().collect();
        let i = (2..).find(|i| !used.contains(i)).unwrap_or(u32::MAX);
        self.by_name.insert(name.to_string(), i);
        i
    }

    /// `name`'s index, if it has one.
    pub fn get(&self, name: &str) -> Option<u32> {
        self.by_name.get(name).copied()
    }

    /// Gives `name` the index `ifindex` (another name holding it loses it).
    pub fn set(&mut self, name: &str, ifindex: u32) {
        self.by_name.retain(|_, i| *i != ifindex);
        self.by_name.insert(name.to_string(), ifindex);
    }

    /// The name of `ifindex` (`if<N>` for an index no name has).
    pub fn name(&self, ifindex: u32) -> String {
        self.by_name
            .iter()
            .find(|(_, i)| **i == ifindex)
            .map_or_else(|| format!("if{ifindex}"), |(n, _)| n.clone())
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, u32)> {
        self.by_name.iter().map(|(n, i)| (n.as_str(), *i))
    }

    /// Whether a rule may name `name`, as tc needs the device to exist:
    /// the configuration has it (a clsact qdisc, or an index it was
    /// given), or it is an interface of the network namespace sluice runs
    /// in (as tc looks it up there).
    pub(crate) fn exists(&self, name: &str) -> bool {
        self.by_name.contains_key(name) || host_has(name)
    }

    /// tc's refusal of the first device `words` name for mirred (`mirred
    /// ... dev DEV`) that does not [exist](Devices::exists).
    pub(crate) fn missing_mirred_target(&self, words: &[&str]) -> Option<String> {
        words.windows(5).find_map(|w| match w {
            ["mirred", _, _, "dev", d] if !self.exists(d) => Some(format!(
                "Cannot find device \"{d}\" (sluice knows the devices with a clsact \
                 qdisc in the configuration and the interfaces of this namespace)"
            )),
            _ => None,
        })
    }
}

/// Whether this network namespace has an interface `name` (looked up in
/// the namespace the thread is in, as tc does: `--netns` moves it, which
/// `/sys/class/net` would not see).
fn host_has(name: &str) -> bool {
    host_flags(name).is_some()
}

/// Whether `name` is an interface of this namespace whose link is down
/// (not up, or no carrier): the kernel's mirred sends it nothing
/// (`tcf_mirred_act`: "device is down", an overlimit; a redirect drops).
pub(crate) fn link_down(name: &str) -> bool {
    host_flags(name).is_some_and(|f| f & libc::IFF_UP == 0 || f & libc::IFF_RUNNING == 0)
}

/// The flags of interface `name` (`SIOCGIFFLAGS`), if it exists here.
fn host_flags(name: &str) -> Option<i32> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
        return None;
    }
    // SAFETY: an all-zero ifreq is valid; the name fits with its NUL (checked
    // above); SIOCGIFFLAGS writes only the flags of the ifreq it is given;
    // the socket is closed on every path.
    unsafe {
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (d, s) in ifr.ifr_name.iter_mut().zip(bytes) {
            *d = *s as libc::c_char;
        }
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return None;
        }
        let r = libc::ioctl(fd, libc::SIOCGIFFLAGS as _, &mut ifr);
        libc::close(fd);
        (r == 0).then(|| i32::from(ifr.ifr_ifru.ifru_flags))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_get_indexes_in_order_and_given_ones_win() {
        let mut d = Devices::default();
        assert_eq!((d.index("v0"), d.index("v1"), d.index("v0")), (2, 3, 2));
        d.set("eth0", 2);
        assert_eq!(
            (d.get("v0"), d.name(2), d.name(9)),
            (None, "eth0".into(), "if9".into())
        );
        assert_eq!(d.index("v0"), 4);
    }

    #[test]
    fn a_device_exists_in_the_configuration_or_the_namespace() {
        let mut d = Devices::default();
        d.index("v0");
        assert!(d.exists("v0") && d.exists("lo"));
        assert!(!d.exists("nonexist") && !d.exists("..") && !d.exists(""));
        let e = d
            .missing_mirred_target(&["action", "mirred", "egress", "redirect", "dev", "nonexist"])
            .unwrap();
        assert!(e.starts_with("Cannot find device \"nonexist\""), "{e}");
        assert_eq!(
            d.missing_mirred_target(&["mirred", "egress", "mirror", "dev", "v0"]),
            None
        );
    }
}
