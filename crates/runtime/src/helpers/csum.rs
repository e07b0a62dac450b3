//! Checksum helpers: the incremental updates of RFC 1624 the kernel uses,
//! on checksum fields as they are in memory (network order).

use maps::Errno;
use vm::HelperFn;

use super::{Ctx, Ret, err, read};
use crate::Env;

pub const COMMON: &[(&str, HelperFn<Env>)] = &[("csum_diff", csum_diff)];
pub const SKB: &[(&str, HelperFn<Env>)] = &[
    ("l3_csum_replace", l3_csum_replace),
    ("l4_csum_replace", l4_csum_replace),
];

/// Adds with end-around carry, 32 bits.
pub fn add32(a: u32, b: u32) -> u32 {
    let (s, carry) = a.overflowing_add(b);
    s.wrapping_add(u32::from(carry))
}

/// Folds a 32-bit ones'-complement sum to 16 bits and complements it.
pub fn fold(sum: u32) -> u16 {
    let s = (sum & 0xffff) + (sum >> 16);
    let s = (s & 0xffff) + (s >> 16);
    !(s as u16)
}

/// The 32-bit sum of 4-byte words (in memory order), plus `seed`, folded
/// from 64 bits as x86's `csum_partial` does.
pub fn partial(words: &[u8], seed: u32) -> u32 {
    let mut sum = u64::from(seed);
    for w in words.chunks(4) {
        let mut b = [0u8; 4];
        b[..w.len()].copy_from_slice(w);
        sum += u64::from(u32::from_le_bytes(b));
    }
    while sum >> 32 != 0 {
        sum = (sum & 0xffff_ffff) + (sum >> 32);
    }
    sum as u32
}

/// `bpf_csum_diff(from, from_size, to, to_size, seed)`: the checksum
/// difference of replacing `from` by `to` (sizes multiples of 4).
fn csum_diff(c: &mut Ctx) -> Ret {
    let (from, from_size, to, to_size, seed) =
        (c.args[0], c.args[1], c.args[2], c.args[3], c.args[4] as u32);
    if from_size % 4 != 0 || to_size % 4 != 0 || from_size + to_size > 512 {
        return Ok(err(Errno::EINVAL));
    }
    let mut buf: Vec<u8> = read(c, from, from_size as usize)?
        .iter()
        .map(|b| !b)
        .collect();
    buf.extend_from_slice(&read(c, to, to_size as usize)?);
    Ok(u64::from(partial(&buf, seed)))
}

const HDR_FIELD_MASK: u64 = 0xf;
const F_PSEUDO_HDR: u64 = 1 << 4;
const F_MARK_MANGLED_0: u64 = 1 << 5;
const F_MARK_ENFORCE: u64 = 1 << 6;
const F_IPV6: u64 = 1 << 7;
const CSUM_MANGLED_0: u16 = 0xffff;

/// Replaces `from` by `to` in the checksum at `sum` (16-bit, memory order).
fn replace(sum: u16, from: u64, to: u64, size: u64) -> Option<u16> {
    let unfolded = u32::from(!sum);
    let updated = match size {
        // `to` is already a checksum difference.
        0 if from == 0 => add32(to as u32, unfolded),
        2 => add32(
            add32(unfolded, u32::from(!(from as u16))),
            u32::from(to as u16),
        ),
        4 => add32(add32(unfolded, !(from as u32)), to as u32),
        _ => return None,
    };
    Some(fold(updated))
}

fn field(c: &Ctx, offset: u64) -> Result<Option<u64>, vm::HelperError> {
    let p = c.env.packet;
    if offset > 0xffff || offset & 1 != 0 || offset + 2 > p.len() {
        return Ok(None);
    }
    Ok(Some(p.data + offset))
}

fn l3_csum_replace(c: &mut Ctx) -> Ret {
    let (offset, from, to, flags) = (c.args[1], c.args[2], c.args[3], c.args[4]);
    if flags & !HDR_FIELD_MASK != 0 {
        return Ok(err(Errno::EINVAL));
    }
    let Some(at) = field(c, offset)? else {
        return Ok(err(Errno::EFAULT));
    };
    let old = u16::from_le_bytes(read(c, at, 2)?.try_into().expect("2 bytes"));
    let Some(new) = replace(old, from, to, flags & HDR_FIELD_MASK) else {
        return Ok(err(Errno::EINVAL));
    };
    c.mem.write(at, 2)?.copy_from_slice(&new.to_le_bytes());
    Ok(0)
}

fn l4_csum_replace(c: &mut Ctx) -> Ret {
    let (offset, from, to, flags) = (c.args[1], c.args[2], c.args[3], c.args[4]);
    if flags & !(HDR_FIELD_MASK | F_PSEUDO_HDR | F_MARK_MANGLED_0 | F_MARK_ENFORCE | F_IPV6) != 0 {
        return Ok(err(Errno::EINVAL));
    }
    let Some(at) = field(c, offset)? else {
        return Ok(err(Errno::EFAULT));
    };
    let old = u16::from_le_bytes(read(c, at, 2)?.try_into().expect("2 bytes"));
    let mangled0 = flags & F_MARK_MANGLED_0 != 0;
    // A zero UDP checksum means "none": leave it alone.
    if mangled0 && old == 0 {
        return Ok(0);
    }
    let Some(mut new) = replace(old, from, to, flags & HDR_FIELD_MASK) else {
        return Ok(err(Errno::EINVAL));
    };
    if mangled0 && new == 0 {
        new = CSUM_MANGLED_0;
    }
    c.mem.write(at, 2)?.copy_from_slice(&new.to_le_bytes());
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The full IPv4 header checksum of `hdr` (checksum field included).
    fn full(hdr: &[u8]) -> u16 {
        let mut sum = 0u32;
        for w in hdr.chunks(2) {
            sum = add32(sum, u32::from(u16::from_le_bytes([w[0], w[1]])));
        }
        fold(sum)
    }

    #[test]
    fn incremental_updates_match_a_full_recomputation() {
        let mut hdr = [
            0x45u8, 0, 0, 0x54, 0x12, 0x34, 0x40, 0, 64, 1, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        let c = full(&hdr);
        hdr[10..12].copy_from_slice(&c.to_le_bytes());
        assert_eq!(full(&hdr), 0, "a correct header sums to zero");
        // Decrement the TTL (the ttl/protocol half-word changes).
        let old = u16::from_le_bytes([hdr[8], hdr[9]]);
        hdr[8] -= 1;
        let new = u16::from_le_bytes([hdr[8], hdr[9]]);
        let sum = u16::from_le_bytes([hdr[10], hdr[11]]);
        let updated = replace(sum, u64::from(old), u64::from(new), 2).unwrap();
        hdr[10..12].copy_from_slice(&updated.to_le_bytes());
        assert_eq!(full(&hdr), 0);
        // Replace the destination address (4 bytes).
        let old = u32::from_le_bytes(hdr[16..20].try_into().unwrap());
        hdr[16..20].copy_from_slice(&[192, 168, 7, 9]);
        let new = u32::from_le_bytes(hdr[16..20].try_into().unwrap());
        let sum = u16::from_le_bytes([hdr[10], hdr[11]]);
        hdr[10..12].copy_from_slice(
            &replace(sum, u64::from(old), u64::from(new), 4)
                .unwrap()
                .to_le_bytes(),
        );
        assert_eq!(full(&hdr), 0);
    }

    #[test]
    fn csum_diff_of_a_replacement_updates_a_checksum() {
        let from = [10u8, 0, 0, 1];
        let to = [172u8, 16, 0, 1];
        let mut buf: Vec<u8> = from.iter().map(|b| !b).collect();
        buf.extend_from_slice(&to);
        let diff = partial(&buf, 0);
        let mut hdr = [
            0x45u8, 0, 0, 20, 0, 0, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        let c = full(&hdr);
        hdr[10..12].copy_from_slice(&c.to_le_bytes());
        hdr[12..16].copy_from_slice(&to);
        let sum = u16::from_le_bytes([hdr[10], hdr[11]]);
        hdr[10..12].copy_from_slice(&replace(sum, 0, u64::from(diff), 0).unwrap().to_le_bytes());
        assert_eq!(full(&hdr), 0);
    }
}
