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

fn key(c: &Ctx, m: usize, addr: u64) -> Result<Vec<u8>, vm::HelperError> {
    read(c, addr, c.env.maps[m].spec().key_size as usize)
}

fn lookup(c: &mut Ctx) -> Ret {
    let m = map_arg(c, c.args[0])?;
    let k = key(c, m, c.args[1])?;
    let cpu = c.env.cpu();
    let map = &c.env.maps[m];
    Ok(match map.map_type() {
        // A map of maps gives the inner map.
        MapType::ArrayOfMaps | MapType::HashOfMaps => {
            map.ref_at(&k).map_or(0, |inner| map_handle(inner as usize))
        }
        MapType::ProgArray
        | MapType::PerfEventArray
        | MapType::Ringbuf
        | MapType::Queue
        | MapType::Stack => 0,
        _ => map.lookup_addr(&k, cpu).unwrap_or(0),
    })
}

fn update(c: &mut Ctx) -> Ret {
    let m = map_arg(c, c.args[0])?;
    let k = key(c, m, c.args[1])?;
    let v = read(c, c.args[2], c.env.maps[m].spec().value_size as usize)?;
    let cpu = c.env.cpu();
    let map = &c.env.maps[m];
    if matches!(
        map.map_type(),
        ::maps::MapType::LruHash | ::maps::MapType::LruPercpuHash
    ) && map.len() >= map.spec().max_entries as usize
        && map.user_lookup(&k).is_err()
    {
        // The VM evicts the least recently used entry exactly; the
        // kernel's per-CPU LRU lists only approximately.
        c.env.unreproducible.push("an LRU eviction");
    }
    Ok(c.env.maps[m]
        .prog_update(&k, &v, c.args[3], cpu)
        .map_or_else(err, |()| 0))
}

fn delete(c: &mut Ctx) -> Ret {
    let m = map_arg(c, c.args[0])?;
    let k = key(c, m, c.args[1])?;
    Ok(c.env.maps[m].delete(&k).map_or_else(err, |()| 0))
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
