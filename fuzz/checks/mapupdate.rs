//! Any text as a `--map-update NAME KEY VALUE` key or value (the first
//! byte chooses the size and whether it is an LPM trie key): parsing never
//! panics, and what parses is exactly the map's size and reads back
//! from its hex form (`hex:...`).

#[path = "../../crates/engine/src/mapfmt.rs"]
#[allow(dead_code)]
mod mapfmt;

use maps::MapType;

const SIZES: [usize; 8] = [1, 2, 4, 8, 16, 0, 20, 3];

pub fn check(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let size = SIZES[usize::from(sel & 7)];
    let map_type = if sel & 8 != 0 {
        MapType::LpmTrie
    } else {
        MapType::Hash
    };
    let is_key = sel & 16 != 0;
    if let Ok(bytes) = mapfmt::parse(text, size, map_type, is_key) {
        assert_eq!(bytes.len(), size, "{text:?}");
        let hex = format!("hex:{}", mapfmt::hex(&bytes));
        assert_eq!(
            mapfmt::parse(&hex, size, map_type, is_key).as_ref(),
            Ok(&bytes)
        );
    }
    let _ = mapfmt::hex_bytes(text);
}
