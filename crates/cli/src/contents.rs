//! What goes into a program's maps before a run, shared by every command
//! that runs one: `--map-update NAME KEY VALUE` entries, and `--routes
//! FILE|synthetic:N`, a route table loaded into a forwarding program's
//! maps (`fwd_radix`, `fwd_lctrie`) in the layout they ask for
//! (`lpm::Layout`).

use lpm::{Layout, RouteTable, Synth};
use runtime::Hook;

use crate::mapfmt;

#[derive(clap::Args, Clone, Default)]
pub struct MapContents {
    /// Add a map entry before the run: NAME KEY VALUE (KEY/VALUE: integer, IP address, ADDR/LEN for LPM keys, or hex:BYTES)
    #[arg(long = "map-update", num_args = 3, value_names = ["NAME", "KEY", "VALUE"])]
    pub map_update: Vec<String>,
    /// Route table for a forwarding program's maps (fwd_radix, fwd_lctrie,
    /// fwd_lpm_trie):
    /// a file of `ip route` output or a RIB dump (`PREFIX NEXTHOP`, `bgpdump
    /// -m`), or synthetic:N[,seed=S][,hops=H][,no-default] (N prefixes with
    /// a BGP table's length mix)
    #[arg(long, value_name = "FILE|synthetic:N")]
    pub routes: Option<String>,
    /// The security association of an ESP program (esp_3des: a 24-byte
    /// key, esp_aes: 16 bytes): SPI:KEY, the SPI a number, the key in hex
    #[arg(long, value_name = "SPI:KEY")]
    pub sa: Option<String>,
}

impl MapContents {
    /// Writes the routes, then the entries, into `hook`'s maps.
    pub fn fill(&self, hook: &Hook) -> Result<(), String> {
        if let Some(spec) = &self.routes {
            load(hook, spec)?;
        }
        if let Some(spec) = &self.sa {
            set_sa(hook, spec)?;
        }
        for u in self.map_update.chunks(3) {
            let [name, key, value] = u else {
                unreachable!("clap gives three values")
            };
            let i = hook
                .object()
                .map_index(name)
                .ok_or_else(|| format!("--map-update {name}: no such map"))?;
            let map = &hook.maps()[i];
            let spec = map.spec().clone();
            if let Some(why) = spec.map_type.absent_reason() {
                return Err(format!("--map-update {name}: {why}"));
            }
            let k = mapfmt::parse(key, spec.key_size as usize, spec.map_type, true)
                .map_err(|e| format!("--map-update {name}: key {e}"))?;
            let v = mapfmt::parse(value, map.user_value_len(), spec.map_type, false)
                .map_err(|e| format!("--map-update {name}: value {e}"))?;
            map.user_update(&k, &v, maps::update::ANY)
                .map_err(|e| format!("--map-update {name} {key} {value}: {e}"))?;
        }
        Ok(())
    }
}

/// The table `spec` names: `ip route` output or a RIB dump in a file, or
/// a synthetic table with a BGP table's prefix-length mix.
fn table(spec: &str) -> Result<RouteTable, String> {
    let Some(rest) = spec.strip_prefix("synthetic:") else {
        let text =
            crate::files::text(std::path::Path::new(spec)).map_err(|e| format!("--routes {e}"))?;
        return RouteTable::parse_text(&text).map_err(|e| format!("--routes {spec}: {e}"));
    };
    let bad = |what: &str| {
        format!("--routes {spec}: {what} (synthetic:N[,seed=S][,hops=H][,no-default])")
    };
    let mut s = Synth::default();
    let mut fields = rest.split(',').map(str::trim);
    s.prefixes = fields
        .next()
        .and_then(|n| n.replace('_', "").parse().ok())
        .filter(|&n| n > 0)
        .ok_or_else(|| bad("the number of prefixes first"))?;
    for f in fields {
        match f.split_once('=') {
            Some(("seed", v)) => s.seed = v.parse().map_err(|_| bad("seed: not a number"))?,
            Some(("hops", v)) => {
                s.nexthops = v
                    .parse()
                    .ok()
                    .filter(|&h| h > 0)
                    .ok_or_else(|| bad("hops: a number from 1"))?
            }
            None if f == "no-default" => s.default_route = false,
            _ => return Err(bad(&format!("unknown field `{f}`"))),
        }
    }
    Ok(RouteTable::synthetic(&s))
}

/// Fills `hook`'s forwarding maps with the table `spec` names; returns
/// how many routes it has.
fn load(hook: &Hook, spec: &str) -> Result<usize, String> {
    let object = hook.object();
    let layout = Layout::of_maps(object.maps.iter().map(|m| m.name())).ok_or_else(|| {
        format!(
            "--routes: program {} has no route-table map (radix_nodes, lc_nodes or lpm_routes, as fwd_radix, fwd_lctrie and fwd_lpm_trie)",
            hook.program().name
        )
    })?;
    let t = table(spec)?;
    let entries = layout
        .entries(&t)
        .map_err(|e| format!("--routes {spec}: {e}"))?;
    for (name, k, v) in &entries {
        let i = object
            .map_index(name)
            .ok_or_else(|| format!("--routes: the program has no map {name}"))?;
        hook.maps()[i]
            .user_update(k, v, maps::update::ANY)
            .map_err(|e| format!("--routes: map {name}: {e}"))?;
    }
    Ok(t.len())
}

/// Writes an ESP SA (`esp_sa` entry 0: the SPI big-endian at byte 0, the
/// key at byte 16, as `struct sa_3des` and `struct sa_aes` declare; the
/// program expands the key on its first packet).
fn set_sa(hook: &Hook, spec: &str) -> Result<(), String> {
    let bad = |what: &str| format!("--sa {spec}: {what} (SPI:KEY, the key in hex)");
    let (spi, key) = spec.split_once(':').ok_or_else(|| bad("no `:`"))?;
    let spi = crate::settings::parse_int(spi)
        .ok()
        .and_then(|s| u32::try_from(s).ok())
        .filter(|&s| s != 0)
        .ok_or_else(|| bad("the SPI is a number from 1 to 2^32-1"))?;
    let key = mapfmt::hex_bytes(key).ok_or_else(|| bad("the key is not hex"))?;
    let i = hook.object().map_index("esp_sa").ok_or_else(|| {
        format!(
            "--sa: program {} has no esp_sa map (esp_3des, esp_aes)",
            hook.program().name
        )
    })?;
    let map = &hook.maps()[i];
    let mut value = vec![0u8; map.spec().value_size as usize];
    // The key fills the bytes from 16 up to the first schedule word.
    let want = if value.len() > 16 + 24 + 48 * 8 - 8 {
        24
    } else {
        16
    };
    if key.len() != want {
        return Err(bad(&format!(
            "this program's key is {want} bytes, not {}",
            key.len()
        )));
    }
    value[..4].copy_from_slice(&spi.to_be_bytes());
    value[16..16 + want].copy_from_slice(&key);
    map.user_update(&0u32.to_le_bytes(), &value, maps::update::ANY)
        .map_err(|e| format!("--sa: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_specs() {
        assert_eq!(table("synthetic:1000").unwrap().len(), 1000);
        let t = table("synthetic:500,seed=3,hops=2,no-default").unwrap();
        assert_eq!(t.len(), 500);
        assert_eq!(t.nexthops().len(), 2);
        for bad in [
            "synthetic:",
            "synthetic:0",
            "synthetic:10,seed=x",
            "synthetic:10,hops=0",
            "synthetic:10,color=red",
        ] {
            let e = table(bad).unwrap_err();
            assert!(e.starts_with("--routes synthetic:"), "{e}");
        }
        assert!(
            table("/nonexistent/routes")
                .unwrap_err()
                .contains("No such file")
        );
    }
}
