//! [`Contents`]: what goes into a program's maps before a run: entries
//! (`--map-update NAME KEY VALUE`), a route table loaded into a
//! forwarding program's maps (`fwd_radix`, `fwd_lctrie`) in the layout
//! they ask for (`lpm::Layout`), and an ESP program's security
//! association.

use std::sync::atomic::AtomicBool;

use lpm::{Layout, RouteTable, Synth};
use runtime::Hook;
use serde::{Deserialize, Serialize};

use crate::mapfmt;

/// One entry written into a map before the run; key and value as text
/// (an integer, an IP address, ADDR/LEN for LPM keys, or hex:BYTES).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapUpdate {
    pub map: String,
    pub key: String,
    pub value: String,
}

/// What the maps hold before the run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Contents {
    /// Entries, written after the routes and the SA.
    pub map_update: Vec<MapUpdate>,
    /// A route table for a forwarding program's maps: a file of `ip
    /// route` output or a RIB dump, or `synthetic:N[,seed=S][,hops=H][,no-default]`.
    pub routes: Option<String>,
    /// An ESP program's security association: `SPI:KEY`, the key in hex.
    pub sa: Option<String>,
}

/// Why the maps could not be filled.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ContentsError {
    /// `target`: the map's name, or name, key and value.
    #[error("--map-update {target}: {reason}")]
    MapUpdate { target: String, reason: String },
    /// `spec`: the table given, when the message names it.
    #[error("--routes{}: {reason}", spec.as_ref().map(|s| format!(" {s}")).unwrap_or_default())]
    Routes {
        spec: Option<String>,
        reason: String,
    },
    #[error("--sa{}: {reason}", spec.as_ref().map(|s| format!(" {s}")).unwrap_or_default())]
    Sa {
        spec: Option<String>,
        reason: String,
    },
}

fn update_error(target: &str, reason: impl ToString) -> ContentsError {
    ContentsError::MapUpdate {
        target: target.to_string(),
        reason: reason.to_string(),
    }
}

fn routes_error(spec: Option<&str>, reason: impl ToString) -> ContentsError {
    ContentsError::Routes {
        spec: spec.map(str::to_string),
        reason: reason.to_string(),
    }
}

fn sa_error(spec: Option<&str>, reason: impl ToString) -> ContentsError {
    ContentsError::Sa {
        spec: spec.map(str::to_string),
        reason: reason.to_string(),
    }
}

impl Contents {
    /// Writes the routes, the SA, then the entries, into `hook`'s maps; a
    /// route table's file is read no more once `stop` is set.
    pub fn fill(&self, hook: &Hook, stop: Option<&'static AtomicBool>) -> Result<(), crate::Error> {
        if let Some(spec) = &self.routes {
            load(hook, spec, stop)?;
        }
        if let Some(spec) = &self.sa {
            set_sa(hook, spec)?;
        }
        for MapUpdate {
            map: name,
            key,
            value,
        } in &self.map_update
        {
            let i = hook
                .object()
                .map_index(name)
                .ok_or_else(|| update_error(name, "no such map"))?;
            let map = &hook.maps()[i];
            let spec = map.spec().clone();
            if let Some(why) = spec.map_type.absent_reason() {
                return Err(update_error(name, why).into());
            }
            let k = mapfmt::parse(key, spec.key_size as usize, spec.map_type, true)
                .map_err(|e| update_error(name, format!("key {e}")))?;
            let v = mapfmt::parse(value, map.user_value_len(), spec.map_type, false)
                .map_err(|e| update_error(name, format!("value {e}")))?;
            map.user_update(&k, &v, maps::update::ANY)
                .map_err(|e| update_error(&format!("{name} {key} {value}"), e))?;
        }
        Ok(())
    }
}

/// The table `spec` names: `ip route` output or a RIB dump in a file, or
/// a synthetic table with a BGP table's prefix-length mix.
fn table(spec: &str, stop: Option<&'static AtomicBool>) -> Result<RouteTable, crate::Error> {
    let Some(rest) = spec.strip_prefix("synthetic:") else {
        let text = crate::files::text(std::path::Path::new(spec), stop)
            .map_err(|e| routes_error(Some(&e.path.display().to_string()), e.reason))?;
        return Ok(RouteTable::parse_text(&text).map_err(|e| routes_error(Some(spec), e))?);
    };
    let bad = |what: &str| {
        routes_error(
            Some(spec),
            format!("{what} (synthetic:N[,seed=S][,hops=H][,no-default])"),
        )
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
            _ => return Err(bad(&format!("unknown field `{f}`")).into()),
        }
    }
    Ok(RouteTable::synthetic(&s))
}

/// Fills `hook`'s forwarding maps with the table `spec` names; returns
/// how many routes it has.
fn load(hook: &Hook, spec: &str, stop: Option<&'static AtomicBool>) -> Result<usize, crate::Error> {
    let object = hook.object();
    let layout = Layout::of_maps(object.maps.iter().map(|m| m.name())).ok_or_else(|| {
        routes_error(None, format!(
            "program {} has no route-table map (radix_nodes, lc_nodes or lpm_routes, as fwd_radix, fwd_lctrie and fwd_lpm_trie)",
            hook.program().name
        ))
    })?;
    let t = table(spec, stop)?;
    let entries = layout
        .entries(&t)
        .map_err(|e| routes_error(Some(spec), e))?;
    for (name, k, v) in &entries {
        let i = object
            .map_index(name)
            .ok_or_else(|| routes_error(None, format!("the program has no map {name}")))?;
        hook.maps()[i]
            .user_update(k, v, maps::update::ANY)
            .map_err(|e| routes_error(None, format!("map {name}: {e}")))?;
    }
    Ok(t.len())
}

/// Writes an ESP SA (`esp_sa` entry 0: the SPI big-endian at byte 0, the
/// key at byte 16, as `struct sa_3des` and `struct sa_aes` declare; the
/// program expands the key on its first packet).
fn set_sa(hook: &Hook, spec: &str) -> Result<(), ContentsError> {
    let bad = |what: &str| sa_error(Some(spec), format!("{what} (SPI:KEY, the key in hex)"));
    let (spi, key) = spec.split_once(':').ok_or_else(|| bad("no `:`"))?;
    let spi = crate::settings::parse_int(spi)
        .ok()
        .and_then(|s| u32::try_from(s).ok())
        .filter(|&s| s != 0)
        .ok_or_else(|| bad("the SPI is a number from 1 to 2^32-1"))?;
    let key = mapfmt::hex_bytes(key).ok_or_else(|| bad("the key is not hex"))?;
    let i = hook.object().map_index("esp_sa").ok_or_else(|| {
        sa_error(
            None,
            format!(
                "program {} has no esp_sa map (esp_3des, esp_aes)",
                hook.program().name
            ),
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
        .map_err(|e| sa_error(None, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_specs() {
        assert_eq!(table("synthetic:1000", None).unwrap().len(), 1000);
        let t = table("synthetic:500,seed=3,hops=2,no-default", None).unwrap();
        assert_eq!(t.len(), 500);
        assert_eq!(t.nexthops().len(), 2);
        for bad in [
            "synthetic:",
            "synthetic:0",
            "synthetic:10,seed=x",
            "synthetic:10,hops=0",
            "synthetic:10,color=red",
        ] {
            let e = table(bad, None).unwrap_err().to_string();
            assert!(e.starts_with("--routes synthetic:"), "{e}");
        }
        assert!(
            table("/nonexistent/routes", None)
                .unwrap_err()
                .to_string()
                .contains("No such file")
        );
    }
}
