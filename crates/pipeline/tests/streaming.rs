//! A replay streams: a capture much larger than the heap the replay may
//! use goes through in constant memory (a counting allocator measures the
//! peak), and a capture cut short still gives every packet before the cut
//! and complete output files.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use pipeline::{Capture, PcapWriter, ReplayOptions, Route, Sinks};
use runtime::{Hook, Image, LoadOptions, Verdict, XdpAction};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: allocated by `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// A fresh directory `sluice-pipeline-NAME-PID` (testkit's).
fn scratch(name: &str) -> PathBuf {
    testkit::temp_dir(&format!("pipeline-{name}"))
}

fn hook(name: &str) -> Hook {
    let object = obj::Object::parse(programs::object(name).unwrap()).unwrap();
    let image = Image::load(object, &LoadOptions::default()).unwrap();
    let prog = image.find_program(None).unwrap();
    Hook::new(image, prog, 0).unwrap()
}

/// Writes `count` UDP packets of `size` bytes.
fn capture(path: &std::path::Path, count: u64, size: usize) {
    let spec = format!("udp,flows=100,size={size},count={count}");
    let mut sink = capture::PcapSink::create(path).unwrap();
    for (ts, p) in packet::GenSpec::parse(&spec).unwrap().packets() {
        sink.write(&p, ts).unwrap();
    }
    sink.finish().unwrap();
}

#[test]
fn a_capture_larger_than_the_memory_limit_streams() {
    let dir = scratch("big");
    let path = dir.join("big.pcap");
    // 96 MiB of packets; the replay may hold 8 MiB of heap at most.
    let (count, size) = (64_000u64, 1500usize);
    capture(&path, count, size);
    let file_size = std::fs::metadata(&path).unwrap().len();
    const LIMIT: usize = 8 << 20;
    assert!(file_size > 10 * LIMIT as u64);

    let mut h = hook("xdp_count");
    let mut source = Capture::open(&path).unwrap();
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let summary = pipeline::replay(
        &mut h,
        &mut source,
        Sinks::new(),
        &ReplayOptions::default(),
        None,
    )
    .unwrap();
    let grew = PEAK.load(Ordering::Relaxed) - before;
    assert_eq!(summary.counters.packets, count);
    assert_eq!(
        summary.counters.verdicts.get(Verdict::Xdp(XdpAction::Pass)),
        count
    );
    assert!(
        grew < LIMIT,
        "the replay of a {file_size}-byte capture grew the heap by {grew} bytes"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_capture_cut_short_keeps_every_packet_before_the_cut() {
    let dir = scratch("cut");
    let path = dir.join("in.pcap");
    capture(&path, 1000, 100);
    // Cut in the middle of the last record.
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 50]).unwrap();

    for threads in [1, 3] {
        let out = dir.join(format!("pass-{threads}.pcap"));
        let mut sinks = Sinks::new();
        sinks.add(&[Route::Pass], Box::new(PcapWriter::create(&out).unwrap()));
        let object = obj::Object::parse(programs::object("xdp_pass").unwrap()).unwrap();
        let opts = LoadOptions {
            ncpus: threads as u32,
            ..LoadOptions::default()
        };
        let image = Image::load(object, &opts).unwrap();
        let prog = image.find_program(None).unwrap();
        let mut h = Hook::new(image, prog, 0).unwrap();
        let mut source = Capture::open(&path).unwrap();
        let opts = ReplayOptions {
            threads,
            ..ReplayOptions::default()
        };
        let summary = pipeline::replay(&mut h, &mut source, sinks, &opts, None).unwrap();
        assert_eq!(summary.counters.packets, 999, "{threads} threads");
        let err = summary
            .source_error
            .expect("the cut is reported")
            .to_string();
        assert!(err.contains("packet 1000"), "{err}");
        // The output is a complete capture of the 999 packets.
        let written: Vec<_> = capture::PcapSource::open(&out)
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        assert_eq!(written.len(), 999, "{threads} threads");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
