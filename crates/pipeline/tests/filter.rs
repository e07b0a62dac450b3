//! A source seen through a tcpdump expression (`sluice run --filter`):
//! only the packets the classic filter accepts run, on one worker or
//! several, and a limit counts the packets that run.

use pipeline::{Filtered, Packets, ReplayOptions, Sinks, Source};
use runtime::{Hook, Image, LoadOptions, Verdict, XdpAction};

fn hook() -> Hook {
    let object = obj::Object::parse(programs::object("xdp_count").unwrap()).unwrap();
    let opts = LoadOptions {
        ncpus: 3,
        ..LoadOptions::default()
    };
    let image = Image::load(object, &opts).unwrap();
    let prog = image.find_program(None).unwrap();
    Hook::new(image, prog, 0).unwrap()
}

/// 300 UDP and 200 TCP frames over 50 flows, interleaved.
fn traffic() -> Vec<(u64, Vec<u8>)> {
    (0..500u16)
        .map(|i| {
            let f = if i % 5 < 3 {
                packet::Builder::udp("10.0.0.1", "10.0.0.2", 1000 + i % 50, 53).build()
            } else {
                packet::Builder::tcp("10.0.0.3", "10.0.0.4", 2000 + i % 50, 80).build()
            };
            (u64::from(i) * 1000, f)
        })
        .collect()
}

fn filtered(expr: &str) -> Box<dyn Source> {
    let prog = cbpf::compile_expr(expr, cbpf::ETHERNET, cbpf::DEFAULT_SNAPLEN).unwrap();
    Box::new(Filtered::new(Box::new(Packets::new(traffic())), prog, expr))
}

#[test]
fn only_accepted_packets_run_and_a_limit_counts_them() {
    for threads in [1, 3] {
        for (expr, limit, want) in [
            ("tcp", None, 200),
            ("udp port 53", None, 300),
            ("tcp", Some(77), 77),
            ("icmp", None, 0),
        ] {
            let mut h = hook();
            let mut source = filtered(expr);
            let opts = ReplayOptions {
                threads,
                limit,
                ..ReplayOptions::default()
            };
            let s = pipeline::replay(&mut h, source.as_mut(), Sinks::new(), &opts, None).unwrap();
            let pass = s.counters.verdicts.get(Verdict::Xdp(XdpAction::Pass));
            assert_eq!(
                (s.counters.packets, pass),
                (want, want),
                "`{expr}` limit {limit:?} on {threads} threads"
            );
            let note = source.note().unwrap();
            assert!(
                note.contains(&format!("filter `{expr}` accepted")),
                "{note}"
            );
        }
    }
}
