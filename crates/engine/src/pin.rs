//! Pinned maps (`--pin DIR`): maps pinned by name (LIBBPF_PIN_BY_NAME)
//! keep their contents across runs, in one file per map.

use std::io::Write;
use std::path::Path;

use runtime::Hook;

use crate::Error;

const MAGIC: &[u8; 8] = b"SLUICEM1";

fn is_pinned(hook: &Hook, i: usize) -> bool {
    hook.object().maps.get(i).is_some_and(|d| d.pin_by_name)
}

/// Restores every pinned map that has a file in `dir`.
pub(crate) fn load(hook: &mut Hook, dir: &Path) -> Result<(), Error> {
    for i in 0..hook.maps().len() {
        if !is_pinned(hook, i) {
            continue;
        }
        let name = hook.maps()[i].name().to_string();
        let path = dir.join(&name);
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let bad = |why: &str| Error::Pin {
            path: path.clone(),
            reason: why.to_string(),
        };
        let map = &hook.maps()[i];
        let (ks, vs) = (map.spec().key_size as usize, map.user_value_len());
        let body = bytes
            .strip_prefix(&MAGIC[..])
            .ok_or_else(|| bad("not a sluice map file"))?;
        if body.len() < 8
            || u32::from_le_bytes(body[..4].try_into().expect("4")) as usize != ks
            || u32::from_le_bytes(body[4..8].try_into().expect("4")) as usize != vs
        {
            return Err(bad("key or value size differs from the map's"));
        }
        let entries = &body[8..];
        if entries.len() % (ks + vs) != 0 {
            return Err(bad("truncated"));
        }
        for e in entries.chunks(ks + vs) {
            map.user_update(&e[..ks], &e[ks..], maps::update::ANY)
                .map_err(|err| bad(&format!("restoring an entry: {err}")))?;
        }
    }
    Ok(())
}

/// Saves every pinned map into `dir`.
pub(crate) fn save(hook: &Hook, dir: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(|e| Error::Pin {
        path: dir.to_path_buf(),
        reason: e.to_string(),
    })?;
    for (i, map) in hook.maps().iter().enumerate() {
        if !is_pinned(hook, i) {
            continue;
        }
        let path = dir.join(map.name());
        let mut out = MAGIC.to_vec();
        out.extend((map.spec().key_size).to_le_bytes());
        out.extend((map.user_value_len() as u32).to_le_bytes());
        // Array entries left out are zeros, as a fresh map's are.
        let entries = if matches!(
            map.map_type(),
            maps::MapType::Array | maps::MapType::PercpuArray
        ) {
            map.entries_skipping_zeros().0
        } else {
            map.entries()
        };
        for (k, v) in entries {
            out.extend(k);
            out.extend(v);
        }
        std::fs::File::create(&path)
            .and_then(|mut f| f.write_all(&out))
            .map_err(|e| Error::Pin {
                path: path.clone(),
                reason: e.to_string(),
            })?;
    }
    Ok(())
}
