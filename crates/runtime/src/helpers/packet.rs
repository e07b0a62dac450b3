//! XDP packet helpers: moving the head, tail and metadata, loading and
//! storing bytes; and keeping the program's view (its memory window and
//! context fields) in step with the packet.

use maps::Errno;
use vm::{HelperError, HelperFn};

use super::{Ctx, Ret, err, read};
use crate::env::CtxKind;
use crate::{Env, FRAG_SIZE};

pub const XDP: &[(&str, HelperFn<Env>)] = &[
    ("xdp_adjust_head", xdp_adjust_head),
    ("xdp_adjust_meta", xdp_adjust_meta),
    ("xdp_adjust_tail", xdp_adjust_tail),
    ("xdp_load_bytes", xdp_load_bytes),
    ("xdp_store_bytes", xdp_store_bytes),
    ("xdp_get_buff_len", xdp_get_buff_len),
];

/// `sizeof(struct xdp_frame)`, kept free at the start of the buffer.
pub const XDP_FRAME_SIZE: u64 = 40;
pub const ETH_HLEN: u64 = 14;
/// Most metadata an XDP program may keep (and it must be 4-byte aligned).
const META_MAX: u64 = 32;

/// Applies `env.packet` to the program's view: the packet window and the
/// context's `data`, `data_end`, `data_meta` (and `len` for skbs).
pub fn sync(c: &mut Ctx) -> Result<(), HelperError> {
    let p = c.env.packet;
    c.env.touch_headroom(p.meta.min(p.data));
    c.mem.set_window(p.region, p.meta, p.data_end - p.meta);
    let fields: &[(u64, u64)] = match p.kind {
        CtxKind::Xdp => &[(0, p.data), (4, p.data_end), (8, p.meta)],
        CtxKind::Skb => &[
            (76, p.data),
            (80, p.data_end),
            (140, p.meta),
            (0, p.data_end - p.data),
        ],
    };
    for &(off, value) in fields {
        let v = u32::try_from(value).expect("packets live below 4 GiB");
        c.mem
            .helper_write(p.ctx + off, 4)?
            .copy_from_slice(&v.to_le_bytes());
    }
    Ok(())
}

/// Moves `len` bytes of packet memory (within the buffer) from `src` to `dst`.
pub fn move_bytes(c: &mut Ctx, src: u64, dst: u64, len: u64) -> Result<(), HelperError> {
    if len == 0 {
        return Ok(());
    }
    let p = c.env.packet;
    c.env.touch_headroom(dst);
    // Temporarily open the whole buffer so both ranges are reachable.
    c.mem
        .set_window(p.region, p.hard_start, p.hard_end - p.hard_start);
    let bytes = c.mem.read(src, len as usize)?.to_vec();
    c.mem.write(dst, len as usize)?.copy_from_slice(&bytes);
    c.mem.set_window(p.region, p.meta, p.data_end - p.meta);
    Ok(())
}

/// Zeroes `[at, at + len)` of the buffer.
pub fn zero_bytes(c: &mut Ctx, at: u64, len: u64) -> Result<(), HelperError> {
    if len == 0 {
        return Ok(());
    }
    let p = c.env.packet;
    c.mem
        .set_window(p.region, p.hard_start, p.hard_end - p.hard_start);
    c.mem.write(at, len as usize)?.fill(0);
    c.mem.set_window(p.region, p.meta, p.data_end - p.meta);
    Ok(())
}

fn xdp_adjust_head(c: &mut Ctx) -> Ret {
    let delta = c.args[1] as i32 as i64;
    let p = c.env.packet;
    let data = p.data.wrapping_add_signed(delta);
    let meta_len = p.data - p.meta;
    if data < p.hard_start + XDP_FRAME_SIZE + meta_len || data.wrapping_add(ETH_HLEN) > p.data_end {
        return Ok(err(Errno::EINVAL));
    }
    // The metadata moves with the head.
    move_bytes(c, p.meta, data - meta_len, meta_len)?;
    c.env.packet.data = data;
    c.env.packet.meta = data - meta_len;
    sync(c)?;
    Ok(0)
}

fn xdp_adjust_meta(c: &mut Ctx) -> Ret {
    let delta = c.args[1] as i32 as i64;
    let p = c.env.packet;
    let meta = p.meta.wrapping_add_signed(delta);
    if meta < p.hard_start + XDP_FRAME_SIZE || meta > p.data {
        return Ok(err(Errno::EINVAL));
    }
    let len = p.data - meta;
    if len > META_MAX || !len.is_multiple_of(4) {
        return Ok(err(Errno(13))); // EACCES
    }
    c.env.packet.meta = meta;
    sync(c)?;
    Ok(0)
}

fn xdp_adjust_tail(c: &mut Ctx) -> Ret {
    let delta = c.args[1] as i32 as i64;
    if !c.env.frags.is_empty() {
        return Ok(frags_adjust_tail(c, delta));
    }
    let p = c.env.packet;
    let end = p.data_end.wrapping_add_signed(delta);
    if end > p.hard_end || end < p.data + ETH_HLEN {
        return Ok(err(Errno::EINVAL));
    }
    if end > p.data_end {
        // Grown bytes are zeroed, as the kernel does.
        zero_bytes(c, p.data_end, end - p.data_end)?;
    }
    c.env.packet.data_end = end;
    sync(c)?;
    Ok(0)
}

/// `bpf_xdp_adjust_tail` on a multi-buffer frame: growing fills the last
/// fragment's page, shrinking frees fragments from the end and, once none
/// is left, continues into the linear part.
fn frags_adjust_tail(c: &mut Ctx, delta: i64) -> u64 {
    let frags = c.env.frags.len();
    if delta >= 0 {
        let used = (frags - 1) % FRAG_SIZE + 1;
        if delta as usize > FRAG_SIZE - used {
            return err(Errno::EINVAL);
        }
        c.env.frags.resize(frags + delta as usize, 0);
        return 0;
    }
    let shrink = delta.unsigned_abs();
    let total = c.env.packet.len() + frags as u64;
    if shrink > total - ETH_HLEN {
        return err(Errno::EINVAL);
    }
    let from_frags = shrink.min(frags as u64);
    c.env.frags.truncate(frags - from_frags as usize);
    let rest = shrink - from_frags;
    if rest > 0 {
        c.env.packet.data_end -= rest;
        if sync(c).is_err() {
            return err(Errno::EINVAL);
        }
    }
    0
}

/// The packet's bytes `[off, off + len)` across the linear part and the
/// fragments: (linear address and length, fragment range).
fn span(c: &Ctx, off: u64, len: u64) -> Option<((u64, u64), std::ops::Range<usize>)> {
    let p = c.env.packet;
    let linear = p.len();
    let end = off.checked_add(len)?;
    if len == 0 || end > linear + c.env.frags.len() as u64 {
        return None;
    }
    let in_linear = if off < linear {
        (p.data + off, end.min(linear) - off)
    } else {
        (p.data, 0)
    };
    let frag_start = off.max(linear) - linear;
    let frag_end = end.max(linear) - linear;
    Some((in_linear, frag_start as usize..frag_end as usize))
}

fn xdp_load_bytes(c: &mut Ctx) -> Ret {
    let (off, buf, len) = (c.args[1] & 0xffff_ffff, c.args[2], c.args[3] & 0xffff_ffff);
    let Some(((at, n), frags)) = span(c, off, len) else {
        return Ok(err(Errno::EINVAL));
    };
    let mut bytes = if n > 0 {
        read(c, at, n as usize)?
    } else {
        Vec::new()
    };
    bytes.extend_from_slice(&c.env.frags[frags]);
    c.mem.write(buf, len as usize)?.copy_from_slice(&bytes);
    Ok(0)
}

fn xdp_store_bytes(c: &mut Ctx) -> Ret {
    let (off, buf, len) = (c.args[1] & 0xffff_ffff, c.args[2], c.args[3] & 0xffff_ffff);
    let Some(((at, n), frags)) = span(c, off, len) else {
        return Ok(err(Errno::EINVAL));
    };
    let bytes = read(c, buf, len as usize)?;
    if n > 0 {
        c.mem
            .write(at, n as usize)?
            .copy_from_slice(&bytes[..n as usize]);
    }
    c.env.frags[frags].copy_from_slice(&bytes[n as usize..]);
    Ok(0)
}

fn xdp_get_buff_len(c: &mut Ctx) -> Ret {
    Ok(c.env.packet.len() + c.env.frags.len() as u64)
}
