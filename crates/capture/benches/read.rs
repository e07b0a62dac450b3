//! Reading a 2M-packet capture of 64-byte frames: `read_into` with a
//! reused buffer, beside `next_frame` (a `Vec` per frame), the reader this
//! crate had before (pcap-file's, a `Vec` per frame) and a plain read of
//! the file's bytes.

use std::hint::black_box;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use capture::{PcapSink, PcapSource};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

#[path = "../tests/common/reference.rs"]
mod reference;

const PACKETS: usize = 2_000_000;

fn capture(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let mut sink = PcapSink::create(&path).unwrap();
    let mut frame = [0u8; 64];
    frame[12..14].copy_from_slice(&[0x08, 0x00]);
    for i in 0..PACKETS {
        frame[30..38].copy_from_slice(&(i as u64).to_be_bytes());
        sink.write(&frame, 1_700_000_000_000_000_000 + i as u64 * 1000)
            .unwrap();
    }
    sink.finish().unwrap();
    path
}

/// What each reader hands on is used the same way: lengths and
/// timestamps summed, checked once at the end (so that results are not
/// forced through memory one by one).
fn read_into(path: &Path) -> usize {
    let mut src = PcapSource::open(path).unwrap();
    let mut buf = Vec::with_capacity(64 * 2048);
    let (mut n, mut sum) = (0, 0u64);
    loop {
        buf.clear();
        let mut batch = 0;
        while batch < 64 {
            match src.read_into(&mut buf) {
                Some(info) => {
                    let info = info.unwrap();
                    sum = sum.wrapping_add(u64::from(info.len) + info.timestamp_ns);
                    batch += 1;
                }
                None => break,
            }
        }
        black_box(&buf);
        n += batch;
        if batch < 64 {
            black_box(sum);
            return n;
        }
    }
}

fn next_frame(path: &Path) -> usize {
    let mut src = PcapSource::open(path).unwrap();
    let (mut n, mut sum) = (0, 0u64);
    while let Some(f) = src.next_frame() {
        let f = f.unwrap();
        sum = sum.wrapping_add(black_box(&f.data).len() as u64 + f.timestamp_ns);
        n += 1;
    }
    black_box(sum);
    n
}

fn old_reader(path: &Path) -> usize {
    let mut src = reference::OldSource::open(path).unwrap();
    let (mut n, mut sum) = (0, 0u64);
    while let Some(f) = src.next_frame() {
        let f = f.unwrap();
        sum = sum.wrapping_add(black_box(&f.data).len() as u64 + f.timestamp_ns);
        n += 1;
    }
    black_box(sum);
    n
}

fn plain_read(path: &Path) -> usize {
    let mut file = std::fs::File::open(path).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0;
    loop {
        match file.read(&mut buf).unwrap() {
            0 => return total,
            n => total += black_box(&buf[..n]).len(),
        }
    }
}

fn bench(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("sluice-io-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = capture(&dir, "2m.pcap");
    let pcapng = capture(&dir, "2m.pcapng");
    eprintln!(
        "capture: {} ({} bytes)",
        pcap.display(),
        std::fs::metadata(&pcap).unwrap().len()
    );

    let mut g = c.benchmark_group("read 2M 64-byte packets");
    g.throughput(Throughput::Elements(PACKETS as u64));
    g.sample_size(10);
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(4));
    g.bench_function("pcap: plain read of the bytes", |b| {
        b.iter(|| plain_read(&pcap))
    });
    g.bench_function("pcap: read_into", |b| {
        b.iter(|| assert_eq!(read_into(&pcap), PACKETS))
    });
    g.bench_function("pcap: next_frame", |b| {
        b.iter(|| assert_eq!(next_frame(&pcap), PACKETS))
    });
    g.bench_function("pcap: old reader (pcap-file, before)", |b| {
        b.iter(|| assert_eq!(old_reader(&pcap), PACKETS))
    });
    g.bench_function("pcapng: read_into", |b| {
        b.iter(|| assert_eq!(read_into(&pcapng), PACKETS))
    });
    g.bench_function("pcapng: old reader (pcap-file, before)", |b| {
        b.iter(|| assert_eq!(old_reader(&pcapng), PACKETS))
    });
    g.finish();
    if std::env::var_os("SLUICE_BENCH_KEEP").is_none() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
