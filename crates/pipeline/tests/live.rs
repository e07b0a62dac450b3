//! Live interfaces: [`Live`] reading frames off a veth end, [`InterfaceSink`]
//! sending out of one, a route mirrored to a port during a replay. Each
//! test makes its own network namespace with a veth pair `va`-`vb` inside
//! (deleted at the end, also when the test fails) and sends nothing
//! outside it. They need root: without it they skip loudly, and fail under
//! `SLUICE_REQUIRE_KERNEL=1`.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use pipeline::{
    Batch, Collect, InterfaceSink, Live, Packets, ReplayOptions, Route, Sharding, Sink, Sinks,
    Source,
};
use runtime::{Hook, Image, LoadOptions};
use testkit::Netns;

const VA: &str = "va";
const VB: &str = "vb";

fn sh(args: &[&str]) {
    let out = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A network namespace of this test alone (testkit's), with a veth pair
/// `va`-`vb` up in it, no IPv6 and no addresses (so only the test's frames
/// cross); deleted on drop.
fn netns(tag: &str) -> Netns {
    Netns::with_veth(&format!("live-{tag}"), VA, VB)
}

/// A stop flag for one test.
fn flag() -> &'static AtomicBool {
    Box::leak(Box::new(AtomicBool::new(false)))
}

/// Sets `stop` after `after` (a watchdog, so that a lost frame fails a
/// test instead of hanging it).
fn stop_after(stop: &'static AtomicBool, after: Duration) {
    std::thread::spawn(move || {
        std::thread::sleep(after);
        stop.store(true, Ordering::Relaxed);
    });
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// Frame `i`: Ethernet to a unicast address nobody has, IPv4/UDP, `i`
/// in the addresses and the payload, lengths varying with `i`.
fn frame(i: usize) -> Vec<u8> {
    let payload = 18 + (i * 37) % 900;
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let total = (20 + 8 + payload) as u16;
    f.extend([0x45, 0, 0, 0, 0, 0, 0, 0, 64, 17, 0, 0]);
    f[16..18].copy_from_slice(&total.to_be_bytes());
    f.extend([198, 18, 0, (i % 250) as u8, 198, 18, 1, (i / 250) as u8]);
    f.extend(4000u16.to_be_bytes());
    f.extend(5000u16.to_be_bytes());
    f.extend(((8 + payload) as u16).to_be_bytes());
    f.extend([0, 0]);
    f.extend((0..payload).map(|b| (b + i) as u8));
    f
}

/// The same frame with an 802.1Q tag (VLAN 100, priority 3).
fn tagged(i: usize) -> Vec<u8> {
    let f = frame(i);
    [&f[..12], &[0x81, 0x00, 0x60, 0x64], &f[12..]].concat()
}

/// Sends `frames` out of `iface` through a plain AF_PACKET socket, one
/// `send` each (independent of [`InterfaceSink`]).
fn send_raw(iface: &str, frames: &[Vec<u8>]) {
    let index = pipeline::Interface::by_name(iface).unwrap().index;
    // SAFETY: plain socket creation.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0) };
    assert!(fd >= 0, "{}", std::io::Error::last_os_error());
    // SAFETY: a fresh descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: sockaddr_ll is plain data; all zeroes is valid.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_ifindex = index as i32;
    // SAFETY: `addr` is a valid sockaddr_ll of the size given.
    let ret = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_ll).cast(),
            std::mem::size_of_val(&addr) as u32,
        )
    };
    assert_eq!(ret, 0, "{}", std::io::Error::last_os_error());
    for f in frames {
        // SAFETY: `f` is a live buffer of the length given.
        let n = unsafe { libc::send(fd.as_raw_fd(), f.as_ptr().cast(), f.len(), 0) };
        assert_eq!(n, f.len() as isize, "{}", std::io::Error::last_os_error());
    }
}

/// Reads `live` until `n` frames have come or it ends (its stop flag):
/// `(seq, timestamp, bytes)` of each.
fn read(live: &mut Live, n: usize) -> Vec<(u64, u64, Vec<u8>)> {
    let mut got = Vec::new();
    let mut batch = Batch::new();
    while got.len() < n {
        batch.clear();
        live.fill(&mut batch).unwrap();
        if batch.is_empty() {
            break;
        }
        for (info, data) in batch.iter() {
            assert_eq!(info.link, capture::LinkKind::Ethernet);
            got.push((info.seq, info.timestamp_ns, data.to_vec()));
        }
    }
    got
}

#[test]
fn frames_sent_into_one_end_arrive_on_the_other_intact_in_order() {
    if !testkit::kernel_available("live source on a veth pair") {
        return;
    }
    let ns = netns("rx");
    ns.enter(|| {
        let stop = flag();
        let mut live = Live::open(VB, Some(stop)).unwrap();
        assert_eq!(live.interface().name, VB);
        // More than a batch, a VLAN-tagged frame among them (the kernel
        // takes the tag off; the source puts it back).
        let mut frames: Vec<Vec<u8>> = (0..200).map(frame).collect();
        frames[77] = tagged(77);
        let before = now_ns();
        send_raw(VA, &frames);
        stop_after(stop, Duration::from_secs(10));
        let got = read(&mut live, frames.len());
        let after = now_ns();
        // On a busy machine the kernel may drop frames before the socket
        // reads them (its receive buffer full, a veth queue): counted,
        // never lost unseen; what arrives is whole and in order.
        let socket = live.stats().dropped;
        let veth = testkit::netns::veth_drops(&ns, VB, VA);
        assert_eq!(
            got.len() as u64 + socket + veth,
            frames.len() as u64,
            "frames lost: {} received, {socket} dropped at the socket, {veth} at the veth pair",
            got.len()
        );
        if socket + veth > 0 {
            eprintln!(
                "note: the kernel dropped {socket} frames at the socket, {veth} at the veth pair"
            );
        }
        let mut next = 0;
        for (i, (seq, ts, data)) in got.iter().enumerate() {
            assert_eq!(*seq, i as u64 + 1);
            let at = frames[next..].iter().position(|f| f == data);
            let at =
                at.unwrap_or_else(|| panic!("frame {i} is none of those sent after frame {next}"));
            next += at + 1;
            assert!(
                (before..=after).contains(ts),
                "frame {i}: timestamp {ts} not within [{before}, {after}]"
            );
        }
        assert!(
            got.windows(2).all(|w| w[0].1 <= w[1].1),
            "timestamps go back"
        );
        // Sending from the reading end is not seen (PACKET_IGNORE_OUTGOING),
        // and nothing else crosses: the source waits until stopped.
        send_raw(VB, &[frame(1000)]);
        stop_after(stop, Duration::from_millis(300));
        let extra = read(&mut live, 1);
        assert!(extra.is_empty(), "{} unexpected frames", extra.len());
        let s = live.stats();
        assert_eq!((s.received, s.truncated), (got.len() as u64, 0));
        let note = live.note().unwrap();
        let received = format!("{} frames received", s.received);
        assert!(note.contains(&received), "{note}");
    });
}

#[test]
fn the_stop_flag_ends_a_waiting_source_within_a_second() {
    if !testkit::kernel_available("live source stop") {
        return;
    }
    let ns = netns("stop");
    ns.enter(|| {
        let stop = flag();
        let mut live = Live::open(VB, Some(stop)).unwrap();
        stop_after(stop, Duration::from_millis(300));
        let start = Instant::now();
        let mut batch = Batch::new();
        live.fill(&mut batch).unwrap();
        let waited = start.elapsed();
        assert!(batch.is_empty(), "a stopped source ends");
        assert!(
            waited >= Duration::from_millis(300) && waited < Duration::from_millis(1300),
            "ended after {waited:?}"
        );
        // And again at once, once stopped.
        let start = Instant::now();
        live.fill(&mut batch).unwrap();
        assert!(batch.is_empty() && start.elapsed() < Duration::from_millis(200));
    });
}

#[test]
fn an_interface_that_goes_away_ends_the_source_with_an_error() {
    if !testkit::kernel_available("live source losing its interface") {
        return;
    }
    let ns = netns("gone");
    ns.enter(|| {
        let stop = flag();
        let mut live = Live::open(VB, Some(stop)).unwrap();
        stop_after(stop, Duration::from_secs(10));
        let name = ns.name().to_string();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            sh(&["ip", "-n", &name, "link", "del", VA]);
        });
        let start = Instant::now();
        let mut batch = Batch::new();
        let e = live.fill(&mut batch).err().map(|e| e.to_string());
        assert!(start.elapsed() < Duration::from_secs(2), "{e:?}");
        let e = e.expect("an error, not an end");
        assert!(e.contains("`vb`"), "{e}");
    });
}

#[test]
fn a_missing_interface_is_named_in_the_error() {
    // Looking up an interface needs no privilege.
    let e = Live::open("nosuchif0", None).err().unwrap().to_string();
    assert!(
        e.contains("`nosuchif0`") && e.contains("No such device"),
        "{e}"
    );
    let e = InterfaceSink::open("nosuchif0").err().unwrap().to_string();
    assert!(
        e.contains("`nosuchif0`") && e.contains("No such device"),
        "{e}"
    );
    let e = Live::open_index(999_999, None).err().unwrap().to_string();
    assert!(e.contains("999999"), "{e}");
    // Without CAP_NET_RAW the error says what is missing.
    if let Err(e) = Live::open("lo", None) {
        let e = e.to_string();
        assert!(e.contains("`lo`") && e.contains("CAP_NET_RAW"), "{e}");
    }
}

#[test]
fn a_port_sends_frames_intact_and_counts_what_it_could_not() {
    if !testkit::kernel_available("port sink on a veth pair") {
        return;
    }
    let ns = netns("tx");
    ns.enter(|| {
        let stop = flag();
        let mut live = Live::open(VB, Some(stop)).unwrap();
        let port = InterfaceSink::open(VA).unwrap();
        let counts = port.counts();
        let mut port: Box<dyn Sink> = Box::new(port);
        let frames: Vec<Vec<u8>> = (0..150).map(frame).collect();
        for (i, f) in frames.iter().enumerate() {
            // Some with fragments: they leave as one frame.
            let cut = if i % 3 == 0 { f.len() / 2 } else { f.len() };
            port.write(&f[..cut], &f[cut..], 0).unwrap();
            if i == 10 {
                // Longer than the MTU allows, shorter than a header.
                port.write(&vec![0xab; 3000], &[], 0).unwrap();
                port.write(&[1, 2, 3], &[], 0).unwrap();
            }
            if i == 99 {
                port.flush().unwrap();
            }
        }
        port.finish().unwrap();
        assert_eq!(counts.sent(), 150);
        assert_eq!(counts.refused(), 2);
        assert_eq!(counts.dropped(), 0);
        stop_after(stop, Duration::from_secs(10));
        let got: Vec<Vec<u8>> = read(&mut live, frames.len())
            .into_iter()
            .map(|(_, _, d)| d)
            .collect();
        assert_eq!(got.len(), frames.len(), "frames lost");
        assert_eq!(got, frames);
    });
}

fn hook(name: &str) -> Hook {
    let object = obj::Object::parse(programs::object(name).unwrap()).unwrap();
    let opts = LoadOptions {
        ncpus: 2,
        ..LoadOptions::default()
    };
    let image = Image::load(object, &opts).unwrap();
    let prog = image.find_program(None).unwrap();
    Hook::new(image, prog, 0).unwrap()
}

#[test]
fn a_replay_mirrors_its_passed_packets_to_a_port() {
    if !testkit::kernel_available("replay mirrored to a port") {
        return;
    }
    let ns = netns("mirror");
    ns.enter(|| {
        let stop = flag();
        let mut live = Live::open(VB, Some(stop)).unwrap();
        let frames: Vec<Vec<u8>> = (0..100).map(frame).collect();
        let mut source = Packets::new(frames.iter().map(|f| (0, f.clone())).collect());
        let file = Collect::default();
        let kept = file.packets.clone();
        let mut sinks = Sinks::new();
        sinks.add(&[Route::Pass], Box::new(file));
        sinks.add(&[Route::Pass], Box::new(InterfaceSink::open(VA).unwrap()));
        let mut h = hook("xdp_pass");
        let s =
            pipeline::replay(&mut h, &mut source, sinks, &ReplayOptions::default(), None).unwrap();
        assert_eq!(s.counters.packets, 100);
        let written: Vec<Vec<u8>> = kept.lock().unwrap().iter().map(|p| p.1.clone()).collect();
        assert_eq!(written, frames);
        stop_after(stop, Duration::from_secs(10));
        let mirrored: Vec<Vec<u8>> = read(&mut live, frames.len())
            .into_iter()
            .map(|(_, _, d)| d)
            .collect();
        assert_eq!(mirrored, frames);
    });
}

#[test]
fn a_live_replay_on_two_workers_reads_up_to_its_limit_and_forwards() {
    if !testkit::kernel_available("live replay") {
        return;
    }
    let ns = netns("fwd");
    ns.enter(|| {
        // Frames come in on vb, run through xdp_pass on two workers (a
        // dispatcher, as a live source cannot be forked), and the passed
        // ones leave by vb again, to va: the source does not see them.
        let stop = flag();
        let mut source = Live::open(VB, Some(stop)).unwrap();
        let mut back = Live::open(VA, Some(stop)).unwrap();
        let frames: Vec<Vec<u8>> = (0..40).map(frame).collect();
        stop_after(stop, Duration::from_secs(10));
        let (summary, returned) = std::thread::scope(|s| {
            // Threads spawned here are in the namespace too.
            let sending = s.spawn(|| {
                std::thread::sleep(Duration::from_millis(100));
                send_raw(VA, &frames[..15]);
                // The first burst comes back before the second is sent: the
                // workers do not hold a short burst until more come.
                let mut returned = read(&mut back, 15);
                send_raw(VA, &frames[15..]);
                returned.extend(read(&mut back, 15));
                returned
            });
            let mut sinks = Sinks::new();
            sinks.add(&[Route::Pass], Box::new(InterfaceSink::open(VB).unwrap()));
            let opts = ReplayOptions {
                threads: 2,
                shard: Sharding::RoundRobin,
                limit: Some(30),
                stop: Some(stop),
                ..ReplayOptions::default()
            };
            let mut h = hook("xdp_pass");
            let s = pipeline::replay(&mut h, &mut source, sinks, &opts, None).unwrap();
            (s, sending.join().unwrap())
        });
        assert!(!stop.load(Ordering::Relaxed), "the watchdog fired");
        assert_eq!(summary.counters.packets, 30);
        assert!(!summary.stopped);
        let mut returned: Vec<Vec<u8>> = returned.into_iter().map(|(_, _, d)| d).collect();
        assert_eq!(returned.len(), 30);
        // Two workers: each flow's order is kept, not the order across them.
        returned.sort();
        let mut want = frames[..30].to_vec();
        want.sort();
        assert_eq!(returned, want);
    });
}
