//! `bpf_loop` and `bpf_for_each_map_elem`: helpers that call a BPF function
//! repeatedly, through the VM's callback protocol.

use maps::Errno;
use vm::{Callback, HelperFn};

use super::{Ctx, Ret, err, map_arg};
use crate::Env;
use crate::env::{SCRATCH_LEVELS, SCRATCH_SLOT};

pub const HELPERS: &[(&str, HelperFn<Env>)] =
    &[("loop", bpf_loop), ("for_each_map_elem", for_each_map_elem)];

/// Most iterations `bpf_loop` allows (`BPF_MAX_LOOPS`).
const MAX_LOOPS: u64 = 1 << 23;

/// `bpf_loop(nr_loops, callback, ctx, flags)`: calls `callback(i, ctx)`
/// until it returns 1 or `nr_loops` calls; returns the calls made.
fn bpf_loop(c: &mut Ctx) -> Ret {
    let (n, func, ctx_arg, flags) = (c.args[0], c.args[1], c.args[2], c.args[3]);
    let next = match c.resume {
        None => {
            if flags != 0 {
                return Ok(err(Errno::EINVAL));
            }
            if n > MAX_LOOPS {
                return Ok(err(Errno::E2BIG));
            }
            0
        }
        Some(r) if r.ret != 0 => return Ok(r.state + 1),
        Some(r) => r.state + 1,
    };
    if next >= n {
        return Ok(n);
    }
    c.callback = Some(Callback {
        func,
        args: [next, ctx_arg, 0, 0, 0],
        state: next,
    });
    Ok(0)
}

/// `bpf_for_each_map_elem(map, callback, ctx, flags)`: calls
/// `callback(map, &key, &value, ctx)` for each element, in `get_next_key`
/// order, until it returns 1; returns the elements visited.
fn for_each_map_elem(c: &mut Ctx) -> Ret {
    let (handle, func, ctx_arg, flags) = (c.args[0], c.args[1], c.args[2], c.args[3]);
    let m = map_arg(c, handle)?;
    let (level, index) = match c.resume {
        None => {
            if flags != 0 {
                return Ok(err(Errno::EINVAL));
            }
            if c.env.iterations.len() >= SCRATCH_LEVELS {
                return Ok(err(Errno::E2BIG));
            }
            let keys: Vec<Vec<u8>> = c.env.maps[m]
                .entries()
                .into_iter()
                .map(|(k, _)| k)
                .collect();
            c.env.iterations.push(keys);
            (c.env.iterations.len() - 1, 0usize)
        }
        Some(r) => {
            let (level, visited) = ((r.state >> 32) as usize, (r.state & 0xffff_ffff) as usize);
            if r.ret != 0 {
                c.env.iterations.truncate(level);
                return Ok(visited as u64);
            }
            (level, visited)
        }
    };
    let cpu = c.env.cpu();
    // Elements deleted during the walk are skipped, as the kernel skips them.
    let mut i = index;
    loop {
        let Some(key) = c.env.iterations[level].get(i).cloned() else {
            c.env.iterations.truncate(level);
            return Ok(i as u64);
        };
        if let Some(value) = c.env.maps[m].lookup_addr(&key, cpu) {
            let slot = &mut c.env.scratch[level * SCRATCH_SLOT..(level + 1) * SCRATCH_SLOT];
            slot[..key.len()].copy_from_slice(&key);
            let key_addr = c.env.scratch_addr + (level * SCRATCH_SLOT) as u64;
            c.callback = Some(Callback {
                func,
                args: [handle, key_addr, value, ctx_arg, 0],
                state: ((level as u64) << 32) | (i as u64 + 1),
            });
            return Ok(0);
        }
        i += 1;
    }
}
