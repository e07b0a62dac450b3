//! Map helpers.

use maps::MapType;
use vm::HelperFn;

use super::{Ctx, Ret, err, map_arg, read};
use crate::Env;
use crate::handles::map_handle;

pub const HELPERS: &[(&str, HelperFn<Env>)] = &[
    ("map_lookup_elem", lookup),
    ("map_update_elem", update),
    ("map_delete_elem", delete),
    ("map_push_elem", push),
    ("map_pop_elem", pop),
    ("map_peek_elem", peek),
];

// Keys and values are read in place from the program's memory: no copy
// or allocation per call (lookups run once per packet in most programs).

fn lookup(c: &mut Ctx) -> Ret {
    let m = map_arg(c, c.args[0])?;
    let cpu = c.env.cpu();
    let map = &c.env.maps[m];
    let k = c.mem.read(c.args[1], map.spec().key_size as usize)?;
    Ok(match map.map_type() {
        // A map of maps gives the inner map.
        MapType::ArrayOfMaps | MapType::HashOfMaps => {
            map.ref_at(k).map_or(0, |inner| map_handle(inner as usize))
        }
        MapType::ProgArray
        | MapType::PerfEventArray
        | MapType::Ringbuf
        | MapType::Queue
        | MapType::Stack => 0,
        _ => map.lookup_addr(k, cpu).unwrap_or(0),
    })
}

fn update(c: &mut Ctx) -> Ret {
    let m = map_arg(c, c.args[0])?;
    let cpu = c.env.cpu();
    let map = &c.env.maps[m];
    let k = c.mem.read(c.args[1], map.spec().key_size as usize)?;
    // The value may sit in the very element it updates: copied first (on
    // the stack when small).
    let size = map.spec().value_size as usize;
    let (mut small, large);
    let v: &[u8] = if size <= 256 {
        small = [0u8; 256];
        small[..size].copy_from_slice(c.mem.read(c.args[2], size)?);
        &small[..size]
    } else {
        large = c.mem.read(c.args[2], size)?.to_vec();
        &large
    };
    // The VM evicts the least recently used entry exactly; the kernel's
    // per-CPU LRU lists only approximately.
    let evicts = matches!(map.map_type(), MapType::LruHash | MapType::LruPercpuHash)
        && map.len() >= map.spec().max_entries as usize
        && map.user_lookup(k).is_err();
    let ret = map
        .prog_update(k, v, c.args[3], cpu)
        .map_or_else(err, |()| 0);
    if evicts {
        c.env.unreproducible.push(crate::LRU_EVICTION);
    }
    Ok(ret)
}

fn delete(c: &mut Ctx) -> Ret {
    let m = map_arg(c, c.args[0])?;
    let map = &c.env.maps[m];
    let k = c.mem.read(c.args[1], map.spec().key_size as usize)?;
    Ok(map.delete(k).map_or_else(err, |()| 0))
}

fn push(c: &mut Ctx) -> Ret {
    let m = map_arg(c, c.args[0])?;
    let v = read(c, c.args[1], c.env.maps[m].spec().value_size as usize)?;
    Ok(c.env.maps[m].push(&v, c.args[2]).map_or_else(err, |()| 0))
}

fn pop_or_peek(c: &mut Ctx, remove: bool) -> Ret {
    let m = map_arg(c, c.args[0])?;
    match c.env.maps[m].pop(remove) {
        Ok(v) => {
            c.mem.write(c.args[1], v.len())?.copy_from_slice(&v);
            Ok(0)
        }
        Err(e) => Ok(err(e)),
    }
}

fn pop(c: &mut Ctx) -> Ret {
    pop_or_peek(c, true)
}

fn peek(c: &mut Ctx) -> Ret {
    pop_or_peek(c, false)
}
