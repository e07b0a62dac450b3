//! What is compared after each packet, and how differences are described.

use std::collections::BTreeMap;

use kernel::MapInfo;
use kernel::testrun::RunOutput;
use runtime::Outcome;
use serde::Serialize;

/// One way the VM and the kernel disagreed.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(tag = "what", rename_all = "snake_case")]
pub enum Difference {
    ReturnValue {
        vm: u32,
        kernel: u32,
    },
    /// The VM stopped with an error where the kernel ran to the end.
    VmError {
        error: String,
        kernel_retval: u32,
    },
    /// Output packets differ (XDP: metadata, packet and fragments).
    Packet {
        vm_len: usize,
        kernel_len: usize,
        /// First differing byte.
        offset: usize,
        /// Hex dump around the first difference, one line per side.
        diff: String,
    },
    /// A context field the kernel writes back differs.
    Context {
        field: String,
        vm: u64,
        kernel: u64,
    },
    /// A map entry differs (hex; `null` when the key is missing there).
    Map {
        map: String,
        key: String,
        vm: Option<String>,
        kernel: Option<String>,
    },
    /// More differing entries of one map than are listed.
    MapMore {
        map: String,
        entries: usize,
    },
    HelperCalls {
        detail: String,
    },
    /// The kernel's maps could not be brought back to the VM's state.
    Resync {
        error: String,
    },
}

/// Offsets in `struct __sk_buff`.
mod skb {
    pub const SIZE: usize = 192;
    pub const MARK: usize = 8;
    pub const PRIORITY: usize = 32;
    pub const INGRESS_IFINDEX: usize = 36;
    pub const IFINDEX: usize = 40;
    pub const CB: usize = 48;
    pub const TSTAMP: usize = 152;
    pub const WIRE_LEN: usize = 160;
    pub const GSO_SEGS: usize = 164;
}

/// `struct xdp_md` is six u32 fields.
const XDP_MD_SIZE: usize = 24;

fn put32(buf: &mut [u8], off: usize, v: u32) {
    buf[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

fn get32(buf: &[u8], off: usize) -> Option<u32> {
    buf.get(off..off + 4)
        .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
}

fn get64(buf: &[u8], off: usize) -> Option<u64> {
    buf.get(off..off + 8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
}

/// The context the kernel's test run starts from, set to what the VM's
/// contexts hold for a packet arriving on `ifindex`.
pub fn ctx_in(xdp: bool, len: usize, ifindex: u32, tstamp: u64) -> Vec<u8> {
    if xdp {
        let mut c = vec![0u8; XDP_MD_SIZE];
        put32(&mut c, 4, len as u32); // data_end (data and data_meta 0)
        put32(&mut c, 12, ifindex); // ingress_ifindex
        c
    } else {
        let mut c = vec![0u8; skb::SIZE];
        put32(&mut c, skb::INGRESS_IFINDEX, ifindex);
        put32(&mut c, skb::IFINDEX, ifindex);
        put32(&mut c, skb::WIRE_LEN, len as u32);
        put32(&mut c, skb::GSO_SEGS, 1);
        c[skb::TSTAMP..skb::TSTAMP + 8].copy_from_slice(&tstamp.to_le_bytes());
        c
    }
}

/// Compares verdict, packet and context of one run.
pub fn outcome(xdp: bool, vm: &Outcome<'_>, k: &RunOutput, diffs: &mut Vec<Difference>) {
    let r0 = vm.r0 as u32;
    if r0 != k.retval {
        diffs.push(Difference::ReturnValue {
            vm: r0,
            kernel: k.retval,
        });
    }
    let vm_bytes: Vec<u8> = if xdp {
        [vm.meta, vm.packet, vm.frags].concat()
    } else {
        vm.packet.to_vec()
    };
    if vm_bytes != k.data {
        let offset = vm_bytes
            .iter()
            .zip(&k.data)
            .position(|(a, b)| a != b)
            .unwrap_or(vm_bytes.len().min(k.data.len()));
        diffs.push(Difference::Packet {
            vm_len: vm_bytes.len(),
            kernel_len: k.data.len(),
            offset,
            diff: hex_diff(&vm_bytes, &k.data, offset),
        });
    }
    let mut field = |name: &str, v: u64, kv: Option<u64>| {
        if let Some(kv) = kv
            && kv != v
        {
            diffs.push(Difference::Context {
                field: name.to_string(),
                vm: v,
                kernel: kv,
            });
        }
    };
    if xdp {
        // The kernel reports data - data_meta as `data`.
        field(
            "data_meta length",
            vm.meta.len() as u64,
            get32(&k.ctx, 0).map(u64::from),
        );
    } else if let Some(s) = &vm.skb {
        field(
            "mark",
            s.mark.into(),
            get32(&k.ctx, skb::MARK).map(u64::from),
        );
        field(
            "priority",
            s.priority.into(),
            get32(&k.ctx, skb::PRIORITY).map(u64::from),
        );
        for (i, cb) in s.cb.iter().enumerate() {
            let kv = get32(&k.ctx, skb::CB + 4 * i).map(u64::from);
            field(&format!("cb[{i}]"), (*cb).into(), kv);
        }
        field("tstamp", s.tstamp, get64(&k.ctx, skb::TSTAMP));
    }
}

/// The entries of one map that differ: the first few listed in full.
struct MapDiffs<'a> {
    map: &'a str,
    keys: Vec<Vec<u8>>,
}

/// Entries of one map listed in full; more are counted.
const LISTED: usize = 4;

impl MapDiffs<'_> {
    fn record(
        &mut self,
        key: &[u8],
        vm: Option<&[u8]>,
        k: Option<&[u8]>,
        diffs: &mut Vec<Difference>,
    ) {
        if vm == k {
            return;
        }
        if self.keys.len() < LISTED {
            diffs.push(Difference::Map {
                map: self.map.to_string(),
                key: hex(key),
                vm: vm.map(hex),
                kernel: k.map(hex),
            });
        }
        self.keys.push(key.to_vec());
    }

    fn finish(self, diffs: &mut Vec<Difference>) -> Vec<Vec<u8>> {
        if self.keys.len() > LISTED {
            diffs.push(Difference::MapMore {
                map: self.map.to_string(),
                entries: self.keys.len(),
            });
        }
        self.keys
    }
}

fn unreadable(vm: &maps::Map, e: impl std::fmt::Display, diffs: &mut Vec<Difference>) {
    diffs.push(Difference::Map {
        map: vm.name().to_string(),
        key: String::new(),
        vm: None,
        kernel: Some(format!("cannot read the kernel's map: {e}")),
    });
}

/// Compares the entries `keys` of a map (the ones the VM changed): one
/// kernel lookup each. Returns the keys that differ.
pub fn map_keys(
    vm: &maps::Map,
    k: &MapInfo,
    keys: &[Vec<u8>],
    diffs: &mut Vec<Difference>,
) -> Result<Vec<Vec<u8>>, ()> {
    let mut d = MapDiffs {
        map: vm.name(),
        keys: Vec::new(),
    };
    for key in keys {
        let theirs = match k.lookup(key) {
            Ok(v) => v,
            Err(e) => {
                unreadable(vm, e, diffs);
                return Err(());
            }
        };
        let ours = vm.user_lookup(key).ok();
        d.record(key, ours.as_deref(), theirs.as_deref(), diffs);
    }
    Ok(d.finish(diffs))
}

/// Compares a whole map. Returns every key that differs, or `Err` when
/// the kernel's map could not be read.
pub fn map(vm: &maps::Map, k: &MapInfo, diffs: &mut Vec<Difference>) -> Result<Vec<Vec<u8>>, ()> {
    let mut d = MapDiffs {
        map: vm.name(),
        keys: Vec::new(),
    };
    // Arrays: chunk by chunk of the kernel's batched reads, one comparison
    // of two buffers settling the usual case; entries are compared one by
    // one only to say what differs. No chunk is kept, so a huge array
    // costs no more memory than a chunk.
    if is_array(vm) {
        let vs = k.user_value_len();
        let walked = k.batched(|keys, values, n| {
            if n == 0 {
                return;
            }
            let first = u32::from_le_bytes(keys[..4].try_into().expect("4-byte keys"));
            let theirs = &values[..n * vs];
            let Some(ours) = vm.array_user_values_range(first, n as u32) else {
                return;
            };
            if ours == theirs {
                return;
            }
            for i in 0..n {
                let key = &keys[i * 4..i * 4 + 4];
                let b = &theirs[i * vs..(i + 1) * vs];
                let a = ours.get(i * vs..(i + 1) * vs);
                d.record(key, a, Some(b), diffs);
            }
        });
        match walked {
            Ok(true) => return Ok(d.finish(diffs)),
            Err(e) => {
                unreadable(vm, e, diffs);
                return Err(());
            }
            _ => {}
        }
    }
    let ours: BTreeMap<Vec<u8>, Vec<u8>> = vm.entries().into_iter().collect();
    let theirs: BTreeMap<Vec<u8>, Vec<u8>> = match k.entries() {
        Ok(e) => e.into_iter().collect(),
        Err(e) => {
            unreadable(vm, e, diffs);
            return Err(());
        }
    };
    let keys: std::collections::BTreeSet<&Vec<u8>> = ours.keys().chain(theirs.keys()).collect();
    for key in keys {
        d.record(
            key,
            ours.get(key).map(Vec::as_slice),
            theirs.get(key).map(Vec::as_slice),
            diffs,
        );
    }
    Ok(d.finish(diffs))
}

fn is_array(m: &maps::Map) -> bool {
    matches!(
        m.map_type(),
        maps::MapType::Array | maps::MapType::PercpuArray
    )
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Two lines of hex, 16 bytes from the row holding `offset`, with the
/// differing bytes in brackets.
pub fn hex_diff(vm: &[u8], kernel: &[u8], offset: usize) -> String {
    let start = offset / 16 * 16;
    let line = |name: &str, a: &[u8], b: &[u8]| {
        let mut s = format!("{name:>6} {start:04x}:");
        for i in start..start + 16 {
            match a.get(i) {
                Some(x) if b.get(i) == Some(x) => s.push_str(&format!(" {x:02x} ")),
                Some(x) => s.push_str(&format!("[{x:02x}]")),
                None => s.push_str("  .."),
            }
        }
        s
    };
    format!("{}\n{}", line("vm", vm, kernel), line("kernel", kernel, vm))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_diff_marks_the_differing_bytes() {
        let a = [1u8, 2, 3, 4];
        let b = [1u8, 9, 3];
        let d = hex_diff(&a, &b, 1);
        assert!(d.contains("[02]"), "{d}");
        assert!(d.contains("[09]"), "{d}");
        assert!(d.contains("[04]"), "{d}");
        assert!(d.lines().nth(1).unwrap().contains(" 03 "), "{d}");
    }

    #[test]
    fn contexts_carry_what_the_vm_sees() {
        let x = ctx_in(true, 60, 1, 0);
        assert_eq!(get32(&x, 4), Some(60));
        assert_eq!(get32(&x, 12), Some(1));
        let s = ctx_in(false, 60, 1, 5);
        assert_eq!(s.len(), 192);
        assert_eq!(get32(&s, skb::IFINDEX), Some(1));
        assert_eq!(get32(&s, skb::WIRE_LEN), Some(60));
    }
}
