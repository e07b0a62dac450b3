//! Ring buffers and perf event arrays.

use maps::Errno;
use vm::HelperFn;

use super::{Ctx, Ret, err, map_arg, read};
use crate::Env;

pub const HELPERS: &[(&str, HelperFn<Env>)] = &[
    ("ringbuf_output", ringbuf_output),
    ("ringbuf_reserve", ringbuf_reserve),
    ("ringbuf_submit", ringbuf_submit),
    ("ringbuf_discard", ringbuf_discard),
    ("ringbuf_query", ringbuf_query),
    ("perf_event_output", perf_event_output),
];

/// `BPF_RB_NO_WAKEUP | BPF_RB_FORCE_WAKEUP`: the only flags of submit/output.
const RB_WAKEUP_FLAGS: u64 = 3;
const F_CURRENT_CPU: u64 = 0xffff_ffff;

fn ringbuf_output(c: &mut Ctx) -> Ret {
    let m = map_arg(c, c.args[0])?;
    if c.args[3] & !RB_WAKEUP_FLAGS != 0 {
        return Ok(err(Errno::EINVAL));
    }
    let data = read(c, c.args[1], c.args[2] as usize)?;
    let Some(mut rb) = c.env.maps[m].ringbuf() else {
        return Ok(err(Errno::EINVAL));
    };
    Ok(rb.output(&data).map_or_else(err, |()| 0))
}

fn ringbuf_reserve(c: &mut Ctx) -> Ret {
    let m = map_arg(c, c.args[0])?;
    let (size, flags) = (c.args[1], c.args[2]);
    let Some(mut rb) = c.env.maps[m].ringbuf() else {
        return Ok(0);
    };
    if flags != 0 {
        return Ok(0);
    }
    Ok(match rb.reserve(size as usize) {
        Some(off) => rb.arena.addr(off),
        None => 0,
    })
}

fn finish(c: &mut Ctx, discard: bool) -> Ret {
    let addr = c.args[0];
    for map in c.env.maps.iter() {
        // The record's address names its ring (no lock taken to find it).
        let inside = map
            .value_region()
            .is_some_and(|(start, len)| addr >= start && addr - start < len as u64);
        if inside
            && let Some(mut rb) = map.ringbuf()
            && let Some(off) = rb.arena.offset_of(addr)
        {
            rb.finish(off, discard).map_err(|_| {
                vm::HelperError(format!("{addr:#x} is not a reserved ring buffer record"))
            })?;
            return Ok(0);
        }
    }
    Err(vm::HelperError(format!(
        "{addr:#x} is not in any ring buffer"
    )))
}

fn ringbuf_submit(c: &mut Ctx) -> Ret {
    finish(c, false)
}

fn ringbuf_discard(c: &mut Ctx) -> Ret {
    finish(c, true)
}

fn ringbuf_query(c: &mut Ctx) -> Ret {
    let m = map_arg(c, c.args[0])?;
    let Some(rb) = c.env.maps[m].ringbuf() else {
        return Ok(0);
    };
    Ok(match c.args[1] {
        0 => rb.pending() as u64,
        1 => rb.size() as u64,
        _ => 0,
    })
}

/// `bpf_perf_event_output(ctx, map, flags, data, size)`; for packet programs
/// the upper 32 bits of `flags` ask for that many packet bytes appended.
fn perf_event_output(c: &mut Ctx) -> Ret {
    let m = map_arg(c, c.args[1])?;
    let flags = c.args[2];
    let index = match flags & 0xffff_ffff {
        F_CURRENT_CPU => u64::from(c.env.cpu()),
        i => i,
    };
    let ctx_len = ((flags >> 32) & 0xf_ffff) as usize;
    let mut record = read(c, c.args[3], c.args[4] as usize)?;
    if ctx_len > 0 {
        let p = c.env.packet;
        if ctx_len as u64 > p.len() {
            return Ok(err(Errno::EFAULT));
        }
        record.extend_from_slice(&read(c, p.data, ctx_len)?);
    }
    Ok(c.env.maps[m]
        .perf_output(index as u32, record)
        .map_or_else(err, |()| 0))
}
