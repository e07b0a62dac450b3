//! How programs see maps: an opaque, kernel-looking pointer per map.

/// Map `i`'s handle is `BASE + i * STRIDE`: high, never a mapped address,
/// never null.
const BASE: u64 = 0xffff_a000_0000_0000;
const STRIDE: u64 = 0x100;

pub fn map_handle(index: usize) -> u64 {
    BASE + index as u64 * STRIDE
}

/// The map index behind a handle, if it is one of `count`.
pub fn map_index(handle: u64, count: usize) -> Option<usize> {
    let off = handle.checked_sub(BASE)?;
    if off % STRIDE != 0 {
        return None;
    }
    let i = (off / STRIDE) as usize;
    (i < count).then_some(i)
}

#[cfg(test)]
mod tests {
    #[test]
    fn handles_roundtrip_and_reject_others() {
        for i in [0, 1, 77] {
            assert_eq!(super::map_index(super::map_handle(i), 100), Some(i));
        }
        assert_eq!(super::map_index(super::map_handle(5), 5), None);
        assert_eq!(super::map_index(super::map_handle(1) + 8, 5), None);
        assert_eq!(super::map_index(0, 5), None);
        assert_eq!(super::map_index(0x7fff_0000_0000, 5), None);
    }
}
