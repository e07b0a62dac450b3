//! Value storage: `slots x cpus` elements of `round_up(value_size, 8)`
//! bytes in one arena, the kernel's per-element stride. Per-CPU copies are
//! laid out CPU by CPU, each CPU's values in a region of its own aligned to
//! a cache line, as the kernel's per-CPU areas are: workers on different
//! CPUs updating their own copies never share a cache line.

use std::sync::atomic::{AtomicU32, Ordering};

use crate::arena::Arena;

/// A value's spin lock, held; released when dropped.
pub struct SpinGuard<'a>(&'a AtomicU32);

impl Drop for SpinGuard<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::Release);
    }
}

pub struct Values {
    pub arena: Arena,
    pub value_size: usize,
    /// Bytes per element (value size rounded up to 8).
    pub elem: usize,
    /// Copies per slot: the CPU count for per-CPU maps, else 1.
    pub copies: usize,
    /// Bytes between one CPU's copy of a slot and the next CPU's.
    stride: usize,
    slots: usize,
}

const CACHE_LINE: usize = 64;

impl Values {
    pub fn new(slots: usize, value_size: usize, copies: usize) -> Values {
        let elem = value_size.div_ceil(8) * 8;
        let stride = if copies > 1 {
            (slots * elem).div_ceil(CACHE_LINE) * CACHE_LINE
        } else {
            slots * elem
        };
        Values {
            arena: Arena::new(stride * copies),
            value_size,
            elem,
            copies,
            stride,
            slots,
        }
    }

    /// The slot whose value (any CPU's copy) holds arena byte `off`, if any
    /// (the padding after a CPU's values belongs to none).
    pub fn slot_at(&self, off: usize) -> Option<u32> {
        if self.stride == 0 {
            return None;
        }
        let slot = (off % self.stride) / self.elem;
        (slot < self.slots).then_some(slot as u32)
    }

    /// The slots that may hold a non-zero value, in order: the ones with a
    /// non-zero 8-byte word in a page ever written (see `Arena::touched`).
    pub fn maybe_nonzero_slots(&self) -> Vec<u32> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 4096];
        let zeros = vec![0u8; 4096];
        for range in self.arena.touched() {
            let mut at = range.start;
            while at < range.end {
                let n = (range.end - at).min(buf.len());
                self.arena.read_into(at, &mut buf[..n]);
                if buf[..n] == zeros[..n] {
                    at += n;
                    continue;
                }
                for (i, w) in buf[..n].chunks(8).enumerate() {
                    if w != &zeros[..w.len()]
                        && let Some(s) = self.slot_at(at + i * 8)
                        && out.last() != Some(&s)
                    {
                        out.push(s);
                    }
                }
                at += n;
            }
        }
        // Per-CPU copies come CPU by CPU: merge them.
        if self.copies > 1 {
            out.sort_unstable();
            out.dedup();
        }
        out
    }

    fn off(&self, slot: u32, copy: usize) -> usize {
        copy * self.stride + slot as usize * self.elem
    }

    /// Program address of a slot's value for `cpu`.
    pub fn addr(&self, slot: u32, cpu: u32) -> u64 {
        self.arena.addr(self.off(slot, cpu as usize % self.copies))
    }

    pub fn get(&self, slot: u32, cpu: u32) -> Vec<u8> {
        self.arena
            .read(self.off(slot, cpu as usize % self.copies), self.value_size)
    }

    /// All copies as user space sees them: each rounded up to 8 bytes.
    pub fn get_all(&self, slot: u32) -> Vec<u8> {
        let mut all = Vec::with_capacity(self.elem * self.copies);
        for c in 0..self.copies {
            all.extend(self.arena.read(self.off(slot, c), self.elem));
        }
        all
    }

    pub fn set(&self, slot: u32, cpu: u32, value: &[u8]) {
        let off = self.off(slot, cpu as usize % self.copies);
        self.arena.write(off, &value[..self.value_size]);
    }

    /// Sets every copy from user-space layout (`copies` values of `elem` bytes).
    pub fn set_all(&self, slot: u32, values: &[u8]) {
        for c in 0..self.copies {
            let src = &values[c * self.elem..c * self.elem + self.value_size];
            let off = self.off(slot, c);
            self.arena.write(off, src);
        }
    }

    /// A program's update of a per-CPU element: its CPU gets the value; a
    /// new element's other copies are zeroed, as the kernel does.
    pub fn set_from_prog(&self, slot: u32, cpu: u32, value: &[u8], fresh: bool) {
        if fresh {
            self.clear(slot);
        }
        self.set(slot, cpu, value);
    }

    /// Writes a slot's only copy from `value`, but for the 4 bytes at
    /// `lock` (the spin lock's word, which updates leave alone).
    pub fn set_around(&self, slot: u32, value: &[u8], lock: usize) {
        let off = self.off(slot, 0);
        self.arena.write(off, &value[..lock]);
        self.arena
            .write(off + lock + 4, &value[lock + 4..self.value_size]);
    }

    /// Takes the spin lock at byte `lock` of a slot's value, as
    /// `bpf_spin_lock` does (the same word, the same atomics), until the
    /// guard goes.
    pub fn spin(&self, slot: u32, lock: usize) -> SpinGuard<'_> {
        let word = self.arena.atomic_u32(self.off(slot, 0) + lock);
        while word
            .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            while word.load(Ordering::Relaxed) != 0 {
                std::hint::spin_loop();
            }
        }
        SpinGuard(word)
    }

    /// Frees the spin lock at byte `lock` of a slot's value.
    pub fn unlock(&self, slot: u32, lock: usize) {
        self.arena
            .atomic_u32(self.off(slot, 0) + lock)
            .store(0, Ordering::Release);
    }

    /// The little-endian u32 at the start of a slot's value (reference maps).
    pub fn get_u32(&self, slot: u32) -> u32 {
        self.arena.read_u32(self.off(slot, 0))
    }

    pub fn clear(&self, slot: u32) {
        for c in 0..self.copies {
            self.arena.zero(self.off(slot, c), self.elem);
        }
    }

    /// Bytes user space passes for one element: all copies for per-CPU maps.
    pub fn user_len(&self) -> usize {
        if self.copies > 1 {
            self.elem * self.copies
        } else {
            self.value_size
        }
    }
}
