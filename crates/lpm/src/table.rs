//! A route table: unique IPv4 prefixes, each with a next hop from a table
//! of next hops.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use crate::Prefix;

/// A next hop's number: `1..=table.nexthops().len()`. The maps use `0` for
/// "no route", so the numbers start at 1.
pub type NextHopId = u32;

/// Where a route sends a packet, and the Ethernet addresses of the rewrite.
///
/// `ifindex` is the egress interface the forwarding programs redirect to;
/// `0` (or the ingress interface) sends the frame back out where it came
/// in (`XDP_TX`). Tables parsed from text give each distinct device name
/// the next ifindex from 1 in order of appearance (see
/// [`RouteTable::set_ifindex`] for the real ones) and next hops without a
/// device ifindex 0. The MACs are derived, locally administered and unique
/// per next hop until set ([`RouteTable::set_macs`]): source
/// `02:01:<ifindex, 4 bytes>`, destination `02:00:<gateway, 4 bytes>`
/// (`02:00:00:00:00:00` for a connected route: the real one would come
/// from ARP per host).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NextHop {
    /// The gateway (`via`), `None` for a directly connected route.
    pub gateway: Option<Ipv4Addr>,
    /// The device name (`dev`), when the source named one.
    pub dev: Option<String>,
    pub ifindex: u32,
    pub smac: [u8; 6],
    pub dmac: [u8; 6],
}

impl NextHop {
    /// A next hop with the derived MACs (see [`NextHop`]).
    pub fn new(gateway: Option<Ipv4Addr>, dev: Option<String>, ifindex: u32) -> NextHop {
        let [a, b, c, d] = ifindex.to_be_bytes();
        let [e, f, g, h] = gateway.map_or([0; 4], |g| g.octets());
        NextHop {
            gateway,
            dev,
            ifindex,
            smac: [2, 1, a, b, c, d],
            dmac: [2, 0, e, f, g, h],
        }
    }
}

/// IPv4 prefixes -> next hops. A prefix is held once: adding it again
/// keeps the first next hop (`ip route` lists a prefix's best route first;
/// a RIB dump lists one per peer).
#[derive(Clone, Debug, Default)]
pub struct RouteTable {
    routes: Vec<(Prefix, NextHopId)>,
    index: HashMap<Prefix, usize>,
    nexthops: Vec<NextHop>,
    by_hop: HashMap<(Option<Ipv4Addr>, Option<String>), NextHopId>,
    devices: HashMap<String, u32>,
}

impl RouteTable {
    pub fn new() -> RouteTable {
        RouteTable::default()
    }

    /// The next hop `(gateway, dev)`, added if new. Devices get ifindexes
    /// 1, 2, ... in order of appearance.
    pub fn nexthop(&mut self, gateway: Option<Ipv4Addr>, dev: Option<&str>) -> NextHopId {
        let key = (gateway, dev.map(str::to_string));
        if let Some(&id) = self.by_hop.get(&key) {
            return id;
        }
        let ifindex = match dev {
            Some(d) => {
                let next = self.devices.len() as u32 + 1;
                *self.devices.entry(d.to_string()).or_insert(next)
            }
            None => 0,
        };
        self.nexthops
            .push(NextHop::new(gateway, key.1.clone(), ifindex));
        let id = self.nexthops.len() as NextHopId;
        self.by_hop.insert(key, id);
        id
    }

    /// Adds a route; `false` (and no change) when the prefix is present.
    ///
    /// # Panics
    /// When `nh` is not a next hop of this table.
    pub fn insert(&mut self, prefix: Prefix, nh: NextHopId) -> bool {
        assert!(
            nh >= 1 && nh as usize <= self.nexthops.len(),
            "next hop {nh} is not in the table"
        );
        if self.index.contains_key(&prefix) {
            return false;
        }
        self.index.insert(prefix, self.routes.len());
        self.routes.push((prefix, nh));
        true
    }

    /// The routes in the order they were added.
    pub fn routes(&self) -> &[(Prefix, NextHopId)] {
        &self.routes
    }

    /// The next hop of exactly `prefix`.
    pub fn get(&self, prefix: Prefix) -> Option<NextHopId> {
        self.index.get(&prefix).map(|&i| self.routes[i].1)
    }

    pub fn len(&self) -> usize {
        self.routes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// Every next hop; next hop `id` is at `id - 1`.
    pub fn nexthops(&self) -> &[NextHop] {
        &self.nexthops
    }

    /// Next hop `id` (`1..=nexthops().len()`).
    pub fn hop(&self, id: NextHopId) -> Option<&NextHop> {
        id.checked_sub(1)
            .and_then(|i| self.nexthops.get(i as usize))
    }

    /// Sets the ifindex of every next hop through device `dev`; the source
    /// MACs derived from the old one follow. Returns how many changed.
    pub fn set_ifindex(&mut self, dev: &str, ifindex: u32) -> usize {
        let mut n = 0;
        for h in &mut self.nexthops {
            if h.dev.as_deref() == Some(dev) {
                let dmac = h.dmac;
                *h = NextHop {
                    dmac,
                    ..NextHop::new(h.gateway, h.dev.take(), ifindex)
                };
                n += 1;
            }
        }
        self.devices.insert(dev.to_string(), ifindex);
        n
    }

    /// Sets the MACs of next hop `id`; `false` when there is none.
    pub fn set_macs(&mut self, id: NextHopId, smac: [u8; 6], dmac: [u8; 6]) -> bool {
        match id
            .checked_sub(1)
            .and_then(|i| self.nexthops.get_mut(i as usize))
        {
            Some(h) => {
                h.smac = smac;
                h.dmac = dmac;
                true
            }
            None => false,
        }
    }

    /// The routes sorted by prefix (address, then length): the order of a
    /// depth-first walk of a binary trie, a prefix before its extensions.
    pub fn sorted(&self) -> Vec<(Prefix, NextHopId)> {
        let mut v = self.routes.clone();
        v.sort_unstable();
        v
    }

    /// The same table without its default route (for tests of both cases).
    pub fn without_default(&self) -> RouteTable {
        let mut t = self.clone();
        if let Some(i) = t.index.remove(&Prefix::DEFAULT) {
            t.routes.remove(i);
            t.index = t.routes.iter().enumerate().map(|(i, r)| (r.0, i)).collect();
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_hops_are_shared_and_numbered_from_one() {
        let mut t = RouteTable::new();
        let a = t.nexthop(Some(Ipv4Addr::new(10, 0, 0, 1)), Some("eth0"));
        let b = t.nexthop(None, Some("eth1"));
        assert_eq!((a, b), (1, 2));
        assert_eq!(t.nexthop(Some(Ipv4Addr::new(10, 0, 0, 1)), Some("eth0")), 1);
        assert_eq!(t.hop(1).unwrap().ifindex, 1);
        assert_eq!(t.hop(2).unwrap().ifindex, 2);
        assert_eq!(t.hop(1).unwrap().dmac, [2, 0, 10, 0, 0, 1]);
        assert!(t.hop(0).is_none() && t.hop(3).is_none());
        assert!(t.insert(Prefix::DEFAULT, a));
        assert!(!t.insert(Prefix::DEFAULT, b));
        assert_eq!(t.get(Prefix::DEFAULT), Some(a));
        assert_eq!(t.set_ifindex("eth1", 7), 1);
        assert_eq!(t.hop(2).unwrap().smac, [2, 1, 0, 0, 0, 7]);
        assert_eq!(t.without_default().len(), 0);
    }
}
