//! What a run of verified code may skip, given facts only the verifier and
//! the embedder know: the stack bytes below the verifier's depth are never
//! touched (so need no zeroing), and an array map lookup whose map is known
//! at the call site is an index computation (so native code does it
//! inline, as the kernel's `map_gen_lookup` rewrites it, without calling
//! the helper).
//!
//! Both apply to trusted runs only ([`Vm::trust_verified`]); checked and
//! counting runs keep zeroing the whole frame and calling the helper, and
//! every run gives the same results, costs and statistics either way.

use crate::op::{Op, Slot};
use crate::{STACK_SIZE, Vm};

/// How native code does one `bpf_map_lookup_elem` without the helper.
#[derive(Copy, Clone, Debug)]
pub enum Lookup {
    /// An array map's values indexed in place.
    Array(ArrayLookup),
    /// The map's own lookup called directly: `func(data, key address,
    /// cpu)` returns the value's address or 0, as the helper would (the
    /// kernel's rewrite of hash map lookups to `__htab_map_lookup_elem`).
    Direct {
        func: DirectLookup,
        data: u64,
        cpu: u32,
    },
}

/// Equal lookups need no new code. Functions compare by address: two
/// copies of one function may differ (code is compiled again, harmlessly);
/// two different functions never share an address.
impl PartialEq for Lookup {
    fn eq(&self, other: &Lookup) -> bool {
        match (self, other) {
            (Lookup::Array(a), Lookup::Array(b)) => a == b,
            (
                Lookup::Direct { func, data, cpu },
                Lookup::Direct {
                    func: f,
                    data: d,
                    cpu: c,
                },
            ) => *func as usize == *f as usize && (data, cpu) == (d, c),
            _ => false,
        }
    }
}

/// A map's lookup for native code: `(data, key address, cpu) -> value
/// address or 0`. The key address holds the map's key size of bytes.
pub type DirectLookup = extern "sysv64" fn(data: u64, key: u64, cpu: u64) -> u64;

/// An array map's values as native code may index them: value `i` (for
/// `i < max_entries`) is at `base + i * stride`, for the CPU the VM runs as.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct ArrayLookup {
    pub base: u64,
    pub stride: u32,
    pub max_entries: u32,
}

impl<E> Vm<E> {
    /// Trusted runs zero only the top `bytes` of the entry frame (rounded
    /// up to 16): the deepest stack use, at any access, of every program
    /// the VM may run from the entry frame (the entry and its tail-call
    /// targets), as the verifier found it. Bytes below it stay as earlier
    /// runs left them, and no verified program reaches them.
    pub fn set_stack_depth(&mut self, bytes: usize) {
        self.stack_depth = bytes.min(STACK_SIZE);
    }

    /// What [`Vm::set_stack_depth`] set (a whole frame unless it was).
    pub fn stack_depth(&self) -> usize {
        self.stack_depth
    }

    /// The bytes of the entry frame a run starts with zeroed.
    pub(crate) fn zeroed_stack(&self) -> usize {
        if self.trusted {
            self.stack_depth.next_multiple_of(16)
        } else {
            STACK_SIZE
        }
    }

    /// Native code of trusted runs does these `bpf_map_lookup_elem` calls
    /// of program `program` without the helper: `(pc, how)` where r1 can
    /// only hold one map. Replaces any earlier sites of the program; the
    /// code is compiled again before the next run.
    ///
    /// # Safety
    /// At each site, r1 must hold that map whenever the call runs; an
    /// array's values must live at the addresses given, and a direct
    /// lookup's function must be safe to call with its data and any key
    /// address the verifier allows, for as long as the VM runs.
    pub unsafe fn inline_lookups(&mut self, program: usize, sites: Vec<(usize, Lookup)>) {
        if self.array_lookups.len() <= program {
            self.array_lookups.resize_with(program + 1, Vec::new);
        }
        if self.array_lookups[program] == sites {
            return;
        }
        self.array_lookups[program] = sites;
        #[cfg(target_arch = "x86_64")]
        self.forget_fast_code();
    }

    /// The `bpf_map_lookup_elem` calls of program `program` whose r1 can
    /// only be one constant: `(pc, r1)` where an `lddw r1, CONST` before the
    /// call reaches it on every path (no jump lands in between, nothing in
    /// between writes r1). Clang loads the map right before the call, so
    /// this finds nearly every lookup.
    pub fn constant_map_lookups(&self, program: usize) -> Vec<(usize, u64)> {
        let slots = self.programs[program].slots();
        let targets = entered_from_elsewhere(slots);
        let mut sites = Vec::new();
        for (pc, s) in slots.iter().enumerate() {
            if s.op != Op::CallHelper || s.imm != 1 || targets[pc] {
                continue;
            }
            for j in (0..pc).rev() {
                let s = slots[j];
                if s.op == Op::Lddw && s.dst == 1 {
                    sites.push((pc, s.imm as u64));
                    break;
                }
                if may_write_r1(&s) || targets[j] {
                    break;
                }
            }
        }
        sites
    }

    /// The inline lookups of program `program`, by slot.
    pub(crate) fn lookups_of(&self, program: usize) -> &[(usize, Lookup)] {
        self.array_lookups.get(program).map_or(&[], Vec::as_slice)
    }
}

/// Slots control may reach other than from the slot before: jump and call
/// targets, and functions whose address is taken.
fn entered_from_elsewhere(slots: &[Slot]) -> Vec<bool> {
    let mut targets = vec![false; slots.len() + 1];
    for s in slots {
        let jumps = (Op::Ja as u8..=Op::Jsle32Reg as u8).contains(&(s.op as u8));
        if jumps || s.op == Op::CallLocal {
            targets[(s.off as usize).min(slots.len())] = true;
        }
        if s.op == Op::Lddw
            && let Some(t) = crate::func_slot(s.imm as u64)
        {
            targets[t.min(slots.len())] = true;
        }
    }
    targets
}

/// Whether control passing through `s` to the next slot may leave r1
/// changed (or not come from `s` at all): anything but stores, conditional
/// jumps and the second half of an `lddw` (writing another register) is
/// suspect unless it names another destination and cannot clobber r1.
fn may_write_r1(s: &Slot) -> bool {
    let op = s.op as u8;
    let conditional = (Op::Jeq64Imm as u8..=Op::Jsle32Reg as u8).contains(&op);
    let store = (Op::StB as u8..=Op::StxDW as u8).contains(&op);
    match s.op {
        _ if conditional || store => false,
        Op::LddwHigh => false,
        // Fetching atomics write their source register.
        Op::Atomic32 | Op::Atomic64 => s.src == 1,
        // Calls clobber r1-r5; legacy loads too; `ja` and `exit` do not
        // fall through.
        Op::CallHelper
        | Op::TailCall
        | Op::CallLocal
        | Op::Callx
        | Op::Exit
        | Op::Ja
        | Op::LdAbsB
        | Op::LdAbsH
        | Op::LdAbsW
        | Op::LdIndB
        | Op::LdIndH
        | Op::LdIndW
        | Op::Poisoned
        | Op::FellOff => true,
        // Arithmetic, byte order, loads and `lddw`.
        _ => s.dst == 1,
    }
}
