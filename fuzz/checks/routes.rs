//! Any text as a route table (`ip -4 route` output or a RIB dump, told
//! apart as `--routes` does): parsing never panics; a table that parses
//! prints (as `ip route` lines, and as `PREFIX NEXTHOP` lines when every
//! route has a gateway and no device) and parses back to the same routes
//! and next hops; and the radix-tree and LC-trie layouts built from it
//! (when they fit their maps) find the same route as the reference
//! longest-prefix match at every route's first and last address and their
//! neighbours.

use lpm::{LcParams, Reference, RouteTable};

/// The LC-trie's parameters: a root of 2^8 entries rather than the
/// default 2^16, so that a run is quick (the layout is the same code).
const LCTRIE: LcParams = LcParams {
    fill_factor: 0.5,
    root_branch: 8,
};

fn ip_route(t: &RouteTable) -> String {
    let mut out = String::new();
    for (p, nh) in t.routes() {
        let hop = t.hop(*nh).expect("a route's next hop");
        out += &p.to_string();
        if let Some(g) = hop.gateway {
            out += &format!(" via {g}");
        }
        if let Some(d) = &hop.dev {
            out += &format!(" dev {d}");
        }
        out += "\n";
    }
    out
}

fn same(a: &RouteTable, b: &RouteTable, text: &str, printed: &str) {
    assert_eq!(a.routes(), b.routes(), "{text:?} printed as {printed:?}");
    assert_eq!(
        a.nexthops(),
        b.nexthops(),
        "{text:?} printed as {printed:?}"
    );
}

pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = RouteTable::parse_rib(text);
    let _ = RouteTable::parse_ip_route(text);
    let Ok(t) = RouteTable::parse_text(text) else {
        return;
    };
    let printed = ip_route(&t);
    let back = RouteTable::parse_ip_route(&printed)
        .unwrap_or_else(|e| panic!("{text:?} printed as {printed:?}: {e}"));
    same(&t, &back, text, &printed);
    if t.nexthops()
        .iter()
        .all(|h| h.gateway.is_some() && h.dev.is_none())
    {
        let rib: String = t
            .routes()
            .iter()
            .map(|(p, nh)| {
                format!(
                    "{p} {}\n",
                    t.hop(*nh).and_then(|h| h.gateway).expect("a gateway")
                )
            })
            .collect();
        let back = RouteTable::parse_text(&rib)
            .unwrap_or_else(|e| panic!("{text:?} as a RIB {rib:?}: {e}"));
        same(&t, &back, text, &rib);
    }

    let reference = Reference::new(&t);
    let mut addrs: Vec<u32> = vec![0, u32::MAX, 0x0a00_0001];
    for (p, _) in t.routes() {
        for a in [p.first(), p.last()] {
            addrs.extend([a, a.wrapping_sub(1), a.wrapping_add(1)]);
        }
    }
    addrs.truncate(3 * 64);
    let layouts = [
        ("radix", lpm::radix_entries(&t).map(|e| (e, true))),
        (
            "lctrie",
            lpm::lctrie_entries(&t, &LCTRIE).map(|e| (e, false)),
        ),
    ];
    for (name, entries) in layouts {
        let Ok((entries, radix)) = entries else {
            continue;
        };
        let mut all = lpm::nexthop_entries(&t).expect("next hops fit when the layout does");
        all.extend(entries);
        let maps = lpm::ArrayMaps::from_entries(&all);
        for &a in &addrs {
            let (got, _) = if radix {
                lpm::radix_walk(&maps, a)
            } else {
                lpm::lctrie_walk(&maps, a)
            };
            assert_eq!(
                got,
                reference.lookup(a),
                "{name} at {} for {text:?}",
                std::net::Ipv4Addr::from(a)
            );
        }
    }
}
