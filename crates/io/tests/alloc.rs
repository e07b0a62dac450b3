//! Reading through `read_into` into a reused buffer allocates nothing per
//! frame. A test binary of its own: the allocator counts every thread.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use io::{PcapSink, PcapSource};

struct Counting;

static ALLOCS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator, only counting calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is System's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is System's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is System's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn reading_100k_frames_into_a_reused_buffer_allocates_o_1_times() {
    let dir = std::env::temp_dir().join(format!("sluice-io-alloc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["many.pcap", "many.pcapng"] {
        let path = dir.join(name);
        let mut sink = PcapSink::create(&path).unwrap();
        for i in 0..100_000u64 {
            sink.write_parts(&[i as u8; 50], &[1; 14], i * 1000)
                .unwrap();
        }
        sink.finish().unwrap();

        let mut src = PcapSource::open(&path).unwrap();
        let mut buf = Vec::with_capacity(64 * 64);
        let before = ALLOCS.load(Ordering::Relaxed);
        let mut n = 0;
        loop {
            buf.clear();
            let mut batch = 0;
            while batch < 64 {
                match src.read_into(&mut buf) {
                    Some(r) => {
                        r.unwrap();
                        batch += 1;
                    }
                    None => break,
                }
            }
            n += batch;
            if batch < 64 {
                break;
            }
        }
        let allocs = ALLOCS.load(Ordering::Relaxed) - before;
        assert_eq!(n, 100_000);
        assert!(allocs < 16, "{name}: {allocs} allocations for {n} frames");
        println!("{name}: {allocs} allocations for {n} frames");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
