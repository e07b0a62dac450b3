//! Captures read from a FIFO as the bytes come (no seeking, no mapping,
//! no reading the whole input first), and a stop flag ending a reader that
//! waits on a writer with nothing to say.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use capture::{PcapSink, PcapSource, SinkFormat};

struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn dir(name: &str) -> Dir {
    let d = std::env::temp_dir().join(format!("sluice-io-pipes-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    Dir(d)
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// A capture of `n` packets of different lengths, as bytes.
fn capture(path: &Path, format: SinkFormat, n: usize) -> Vec<u8> {
    let mut sink = PcapSink::create_as(path, format).unwrap();
    for i in 0..n {
        let len = 60 + (i * 7) % 1400;
        sink.write(&vec![i as u8; len], 1_000_000_000 + i as u64)
            .unwrap();
    }
    sink.finish().unwrap();
    std::fs::read(path).unwrap()
}

/// (length, first byte, timestamp) of every frame.
fn frames(src: &mut PcapSource) -> Vec<(usize, u8, u64)> {
    let mut out = Vec::new();
    while let Some(f) = src.next_raw() {
        let f = f.unwrap();
        out.push((f.data.len(), f.data[0], f.timestamp_ns));
    }
    out
}

#[test]
fn a_fifo_is_read_as_its_bytes_come_in_odd_pieces() {
    let d = dir("fifo");
    for (name, format) in [
        ("c.pcap", SinkFormat::Pcap),
        ("c.pcapng", SinkFormat::PcapNg),
    ] {
        let file = d.0.join(name);
        let bytes = capture(&file, format, 3000);
        let want = frames(&mut PcapSource::open(&file).unwrap());
        assert_eq!(want.len(), 3000);
        let fifo = d.0.join("fifo");
        let _ = std::fs::remove_file(&fifo);
        mkfifo(&fifo);
        let to = fifo.clone();
        // Pieces of 1 to 4099 bytes, cutting headers and records anywhere.
        let writer = std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new().write(true).open(&to).unwrap();
            let (mut at, mut step) = (0, 1);
            while at < bytes.len() {
                let end = (at + step).min(bytes.len());
                f.write_all(&bytes[at..end]).unwrap();
                f.flush().unwrap();
                at = end;
                step = step * 3 % 4099 + 1;
            }
        });
        let mut src = PcapSource::open(&fifo).unwrap();
        assert!(src.is_stream());
        assert_eq!(frames(&mut src), want, "{name}");
        assert!(!src.stopped());
        writer.join().unwrap();
    }
}

static STOP: AtomicBool = AtomicBool::new(false);

#[test]
fn a_stop_flag_ends_a_reader_waiting_on_an_open_fifo() {
    let d = dir("stop");
    let file = d.0.join("c.pcapng");
    let bytes = capture(&file, SinkFormat::PcapNg, 500);
    let fifo = d.0.join("fifo");
    mkfifo(&fifo);
    let to = fifo.clone();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    // The writer sends the capture and keeps the FIFO open until told.
    let writer = std::thread::spawn(move || {
        let mut f = std::fs::OpenOptions::new().write(true).open(&to).unwrap();
        f.write_all(&bytes).unwrap();
        let _ = done_rx.recv();
    });
    let mut src = PcapSource::open_with(&fifo, Some(&STOP)).unwrap();
    let mut n = 0;
    while n < 500 {
        src.next_raw().unwrap().unwrap();
        n += 1;
    }
    assert!(src.would_wait(), "nothing more has come");
    let t0 = Instant::now();
    let stopper = std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(200));
        STOP.store(true, Ordering::Relaxed);
    });
    // Waits for the writer until the flag is set, then ends cleanly.
    assert!(src.next_raw().is_none());
    assert!(src.stopped());
    assert!(t0.elapsed() < Duration::from_secs(2));
    assert_eq!(PcapSource::count(&src), 500);
    stopper.join().unwrap();
    done_tx.send(()).unwrap();
    writer.join().unwrap();
}

#[test]
fn opening_a_missing_file_or_a_directory_names_it() {
    let e = PcapSource::open(Path::new("/no/such.pcap")).err().unwrap();
    assert_eq!(
        e.to_string(),
        "opening /no/such.pcap: No such file or directory"
    );
    let d = dir("dir");
    let e = PcapSink::create(&d.0).err().unwrap();
    assert_eq!(
        e.to_string(),
        format!("creating {}: Is a directory", d.0.display())
    );
    assert!(capture::is_stdin(Path::new("-")));
    assert!(capture::is_stream(Path::new("-")));
    assert!(!capture::is_stream(&d.0.join("missing")));
}
