//! A soak test of `sluice datapath` on a veth pair at full rate (root; the
//! namespaces and the pair are made and deleted by the test): the DDoS
//! filter on B's end while `sluice gen` sends flat out from A's end for
//! `SOAK_SECONDS` (default 30; the 10-minute run is
//! `SOAK_SECONDS=600 cargo test --release -p sluice --test soak`).
//!
//! Checked: the datapath's memory (VmRSS, VmHWM of /proc/PID/status) is
//! flat after the warm-up, and every frame is accounted for, exactly:
//!
//! - sent by `sluice gen` (XDP live frames redirected to A's veth end) =
//!   taken by the veth into B's XDP ring (`tx_queue_0_xdp_xmit` of A's
//!   end) + refused because that ring was full (`..._xdp_xmit_errors`);
//! - taken = run through B's XDP program (`rx_queue_0_xdp_packets`) =
//!   redirected to the AF_XDP socket (`rx_queue_0_xdp_redirect`) + the
//!   redirects that failed (`rx_queue_0_drops`);
//! - failed redirects = the socket's kernel counters: no free frame in
//!   the FILL ring (`rx_dropped`) + RX ring full (`rx_ring_full`); in copy
//!   mode these are the only places a frame is dropped before user space;
//! - redirected = the datapath's `rx_packets` = the sum of its verdicts.

mod common;
mod datapath_support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use datapath_support::*;

/// Seconds of traffic: `SOAK_SECONDS`, 30 by default.
fn soak_seconds() -> u64 {
    match std::env::var("SOAK_SECONDS") {
        Ok(s) => s
            .parse()
            .unwrap_or_else(|_| panic!("SOAK_SECONDS={s:?} is not a number of seconds")),
        Err(_) => 30,
    }
}

/// Memory growth allowed after the warm-up (KiB): a leak of a few bytes
/// per packet would be far more at these rates.
const SLACK_KIB: u64 = 1024;

#[test]
fn the_datapath_at_full_rate_keeps_its_memory_flat_and_counts_every_frame() {
    if !kernel_available("veth test (AF_XDP datapath soak)") {
        return;
    }
    let seconds = soak_seconds();
    let warm_up = Duration::from_secs((seconds / 5).max(5));
    let p = Pair::new("k");
    let mut datapath = spawn_sluice(
        &p.b,
        &[
            "datapath",
            "--port",
            VB,
            "--prog",
            &object_path("xdp_ddos"),
            "--map-update",
            "blocklist_v4",
            "10.1.0.0/22",
            "0",
            "--set",
            "rate_pps=100",
            "--json",
        ],
    );
    wait_xdp_on(&mut datapath, &p.b, &[VB]);
    let pid = datapath.id();
    let start_mem = memory_kib(pid).expect("the datapath's memory");

    // The datapath's memory every second, in the background.
    let done = Arc::new(AtomicBool::new(false));
    let samples = Arc::new(Mutex::new(Vec::<(Duration, u64, u64)>::new()));
    let t0 = Instant::now();
    let sampler = {
        let (done, samples) = (done.clone(), samples.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                if let Some((rss, hwm)) = memory_kib(pid) {
                    samples.lock().unwrap().push((t0.elapsed(), rss, hwm));
                }
                std::thread::sleep(Duration::from_secs(1));
            }
        })
    };

    // Flat out from A, a million frames at a time, until the time is up.
    let mut sent = 0u64;
    while t0.elapsed() < Duration::from_secs(seconds) {
        let out = sluice(&[
            "--netns",
            &p.a,
            "gen",
            "--dev",
            VA,
            "udp,flows=4096,src=10.1.0.0/16,count=1000000",
            "--method",
            "live",
            "--json",
        ]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        sent += v["packets"].as_u64().unwrap();
    }
    let send_time = t0.elapsed();
    // Let the last frames through, then read the veth's counters.
    std::thread::sleep(Duration::from_secs(1));
    let tx = veth_stats(&p.a, VA);
    let rx = veth_stats(&p.b, VB);
    done.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    let end_mem = memory_kib(pid).expect("the datapath's memory");
    interrupt(&datapath);
    let (code, out, err) = finish(datapath, Duration::from_secs(15));
    assert_eq!(code, Some(0), "{err}");
    let s: serde_json::Value = serde_json::from_str(&out).unwrap();
    let port = &s["ports"][0];
    let n = |v: &serde_json::Value| v.as_u64().unwrap_or_else(|| panic!("{v}: {s}"));
    let stat = |m: &std::collections::BTreeMap<String, u64>, k: &str| {
        *m.get(k).unwrap_or_else(|| panic!("no {k}: {m:?}"))
    };

    // Every frame accounted for, where the kernel can drop it and after.
    let received = n(&port["rx_packets"]);
    let (xmit, xmit_errors) = (
        stat(&tx, "tx_queue_0_xdp_xmit"),
        stat(&tx, "tx_queue_0_xdp_xmit_errors"),
    );
    let (rx_dropped, ring_full) = (
        n(&port["kernel"]["rx_dropped"]),
        n(&port["kernel"]["rx_ring_full"]),
    );
    let summary = format!(
        "sent {sent}, veth took {xmit} and refused {xmit_errors}; B: {rx:?}; \
         socket: {rx_dropped} no free frame, {ring_full} RX ring full; datapath: {s}"
    );
    assert_eq!(sent, xmit + xmit_errors, "{summary}");
    assert_eq!(stat(&rx, "rx_queue_0_xdp_packets"), xmit, "{summary}");
    assert_eq!(stat(&rx, "rx_queue_0_xdp_redirect"), received, "{summary}");
    assert_eq!(
        stat(&rx, "rx_queue_0_drops"),
        rx_dropped + ring_full,
        "{summary}"
    );
    assert_eq!(
        received,
        sent - xmit_errors - rx_dropped - ring_full,
        "{summary}"
    );
    assert_one_verdict_each(port);
    let verdicts = &port["verdicts"];
    assert!(n(&verdicts["pass"]) > 0 && n(&verdicts["drop"]) > 0, "{s}");
    assert_eq!(port["lost"], 0, "{s}");
    // UMEM frames neither free nor in the FILL ring at the end. In copy
    // mode the kernel takes a frame from the FILL ring before it knows the
    // RX ring has room; when it has none, the frame goes to the kernel's
    // own free list (`xsk_buff_free`), which it takes from first the next
    // time: after RX-ring-full drops, one frame per socket may be there.
    let unaccounted = n(&s["frames_unaccounted"]);
    let sockets = port["queues"].as_array().map_or(1, |q| q.len() as u64);
    assert!(
        unaccounted == 0 || (ring_full > 0 && unaccounted <= sockets),
        "{unaccounted} frames unaccounted ({ring_full} RX ring full, {sockets} sockets): {s}"
    );
    assert!(received > 0, "{summary}");

    // Memory flat after the warm-up: no growth of the resident set, no
    // new high-water mark.
    let samples = samples.lock().unwrap().clone();
    let after: Vec<_> = samples.iter().filter(|(t, ..)| *t >= warm_up).collect();
    assert!(
        after.len() >= 2,
        "too few samples after the warm-up: {samples:?}"
    );
    let (_, warm_rss, warm_hwm) = *after[0];
    let max_rss = after.iter().map(|(_, r, _)| *r).max().unwrap();
    assert!(
        max_rss <= warm_rss + SLACK_KIB && end_mem.0 <= warm_rss + SLACK_KIB,
        "RSS grew after the warm-up: {warm_rss} KiB then up to {max_rss} KiB, {} KiB at the end: {samples:?}",
        end_mem.0
    );
    assert!(
        end_mem.1 <= warm_hwm + SLACK_KIB,
        "VmHWM grew after the warm-up: {warm_hwm} KiB to {} KiB: {samples:?}",
        end_mem.1
    );
    let date = sh(&["date", "-u", "+%Y-%m-%d %H:%M UTC"]);
    eprintln!(
        "soak {}: {seconds} s of traffic ({:.1} s): sent {sent} ({:.0} pps), veth ring full {xmit_errors}, \
         no free frame {rx_dropped}, RX ring full {ring_full}, received {received} ({:.0} pps): \
         pass {} drop {}; RSS {} KiB at the start, {warm_rss} KiB after {} s of warm-up, {} KiB at the end \
         (VmHWM {warm_hwm} then {} KiB)",
        date.trim(),
        send_time.as_secs_f64(),
        sent as f64 / send_time.as_secs_f64(),
        received as f64 / send_time.as_secs_f64(),
        n(&verdicts["pass"]),
        n(&verdicts["drop"]),
        start_mem.0,
        warm_up.as_secs(),
        end_mem.0,
        end_mem.1,
    );
}
