//! Reading through `read_into` into a reused buffer allocates nothing per
//! frame. A test binary of its own: the allocator counts every thread.

use capture::{PcapSink, PcapSource};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

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
        let region = Region::new(GLOBAL);
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
        let change = region.change();
        let allocs = change.allocations + change.reallocations;
        assert_eq!(n, 100_000);
        assert!(allocs < 16, "{name}: {allocs} allocations for {n} frames");
        println!("{name}: {allocs} allocations for {n} frames");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
