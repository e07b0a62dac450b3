//! LPM lookups per second on the 100k-prefix synthetic table (docs/lpm.md,
//! "Benchmark"): the forwarding programs `fwd_radix` and `fwd_lctrie`
//! (route lookup in array maps) and `fwd_lpm_trie` (the kernel's
//! `BPF_MAP_TYPE_LPM_TRIE`), each in sluice's JIT and in the kernel through
//! `BPF_PROG_TEST_RUN`, same run, as ratios. A packet is one lookup, with
//! the RFC 1812 header checks and the rewrite around it (the same code in
//! the three programs).
//!
//! The frames: UDP to addresses of `lpm::test_addresses` (route edges, the
//! inside of routes, random ones), TTL 255, every one checked against the
//! reference lookup in both engines before anything is timed. Each frame
//! runs `REPEAT` times back to back: in the kernel that is the test run's
//! `repeat` (on the same buffer, which the program rewrites: the TTL drops
//! by one a run, so 255 leaves room for every run to forward), timed by
//! the kernel (its per-run mean, rounded down to a nanosecond); in sluice
//! `Hook::run` `REPEAT` times, timed around the whole pass. A pass runs
//! every frame so; each round runs every engine's pass in turn (the
//! machine's load shifts alike on all), and the figure is the median over
//! the rounds.
//! Repeating a frame keeps its lookup path in the cache, so the JIT is also
//! timed with the frames in turn (one run each, `REPEAT` passes): the cost
//! of cache misses over a table of megabytes. A last row, `xdp_pass`
//! (nothing but `XDP_PASS`), is each engine's cost of a run itself: what
//! the ratios of the other rows include besides the forwarding.
//!
//! A test run with `repeat > 1` puts the program into the kernel's XDP
//! dispatcher and takes it out again, each change waiting for an RCU grace
//! period (about 30 ms here), which would make the run take over an hour.
//! So each loaded program is first attached in generic (skb) mode to an
//! interface of a network namespace this benchmark creates and deletes
//! (loopback and two veth pairs, all down: no packet is sent); while
//! attached it stays in the dispatcher and the test runs change nothing.
//! The measured runs are the same either way.
//!
//! `cargo bench -p sluice --bench lpm` (the kernel side needs root).
//! `SLUICE_LPM_ROUNDS` (default 9) rounds, `SLUICE_LPM_FRAMES` (default
//! 4096) frames.

use std::net::Ipv4Addr;
use std::time::Instant;

use lpm::{LcParams, NextHopId, Reference, RouteTable, Synth};
use runtime::{Hook, Image, LoadOptions, PacketMeta, Verdict, XdpAction};

const PROGRAMS: [&str; 4] = ["fwd_radix", "fwd_lctrie", "fwd_lpm_trie", FLOOR];
/// The baseline of the ratios: the kernel's own longest-prefix match.
const BASELINE: &str = "fwd_lpm_trie";
/// The cost of a run without a lookup.
const FLOOR: &str = "xdp_pass";
/// Runs per frame: below the frames' TTL of 255.
const REPEAT: u32 = 200;
/// The ingress interface: the loopback's index, which is what a test run
/// without a context gives the kernel side.
const INGRESS: u32 = 1;
/// Devices of the namespace the kernel programs are attached to (the
/// loopback and two veth pairs), one per program.
const DEVICES: [&str; 5] = ["lo", "sllpm0", "sllpm1", "sllpm2", "sllpm3"];

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .map(|v| v.parse().unwrap_or_else(|_| panic!("{name}: a number")))
        .unwrap_or(default)
}

fn entries(name: &str, t: &RouteTable) -> lpm::MapEntries {
    match name {
        "fwd_radix" => lpm::radix_entries(t),
        "fwd_lctrie" => lpm::lctrie_entries(t, &LcParams::default()),
        "fwd_lpm_trie" => lpm::lpm_trie_entries(t),
        _ => Ok(Vec::new()),
    }
    .expect("the 100k table fits the programs' maps")
}

/// What a frame must come out as: the next hop's destination MAC and
/// action, or passed unchanged (no route).
#[derive(Clone, Copy)]
struct Want {
    dmac: Option<[u8; 6]>,
    action: XdpAction,
}

impl Want {
    fn of(t: &RouteTable, hop: Option<NextHopId>) -> Want {
        match hop.and_then(|id| t.hop(id)) {
            None => Want {
                dmac: None,
                action: XdpAction::Pass,
            },
            Some(h) => Want {
                dmac: Some(h.dmac),
                action: if h.ifindex == 0 || h.ifindex == INGRESS {
                    XdpAction::Tx
                } else {
                    XdpAction::Redirect
                },
            },
        }
    }

    /// The kernel's return value for it.
    fn retval(self) -> u32 {
        match self.action {
            XdpAction::Pass => 2,
            XdpAction::Tx => 3,
            _ => 4,
        }
    }

    fn check(self, input: &[u8], action: XdpAction, out: &[u8]) -> Result<(), String> {
        if action != self.action {
            return Err(format!("{action:?}, want {:?}", self.action));
        }
        match self.dmac {
            None if out != input => Err("passed changed".into()),
            Some(d) if out.get(..6) != Some(&d[..]) => Err("wrong next hop".into()),
            _ => Ok(()),
        }
    }
}

fn meta() -> PacketMeta {
    PacketMeta {
        ifindex: INGRESS,
        rx_queue: 0,
        timestamp_ns: 0,
        egress_ifindex: 0,
        dev_addr: [0; 6],
        dev_broadcast: [0; 6],
    }
}

/// `name` in sluice's VM with `entries`, verified and then trusted (no
/// per-access checks), in the JIT.
fn ours(name: &str, entries: &lpm::MapEntries) -> Hook {
    let object = obj::Object::parse(programs::object(name).expect("built")).unwrap();
    let image = Image::load(object, &LoadOptions::default()).unwrap();
    let prog = image.find_program(None).unwrap();
    let mut h = Hook::new(image, prog, 0).unwrap();
    for (m, k, v) in entries {
        let i = h.object().map_index(m).expect("a map of the program");
        h.maps()[i].user_update(k, v, 0).unwrap();
    }
    if let Some(note) = h.verify_for_run().expect("our verifier accepts it") {
        panic!("{name}: not trusted: {note}");
    }
    h.enable_jit().unwrap();
    h
}

/// `name` in the kernel with `entries`.
fn theirs(
    name: &str,
    h: &Hook,
    entries: &lpm::MapEntries,
) -> Result<(kernel::KernelObject, i32), String> {
    let opts = kernel::load_options(h.object(), h.maps());
    let k = kernel::KernelObject::load(programs::object(name).unwrap(), name, &opts)
        .map_err(|e| e.to_string())?;
    let maps = k.maps().map_err(|e| e.to_string())?;
    for (m, key, value) in entries {
        let km = maps
            .iter()
            .find(|x| kernel::same_map(&x.name, m))
            .ok_or_else(|| format!("no kernel map {m}"))?;
        km.update(key, value, 0).map_err(|e| format!("{m}: {e}"))?;
    }
    let fd = k.program(&h.program().name).map_err(|e| e.to_string())?.fd;
    Ok((k, fd))
}

/// Runs `f` on a thread inside namespace `ns` (attachments by device name
/// happen there; this thread stays where it is).
fn in_netns<T: Send>(ns: &str, f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            kernel::netdev::enter_netns(ns).expect("entering the namespace");
            f()
        })
        .join()
        .unwrap()
    })
}

/// The namespace whose devices hold the kernel programs (see the top).
fn dispatcher_namespace() -> Result<kernel::netns::Netns, String> {
    let ns = kernel::netns::Netns::create("lpm").map_err(|e| e.to_string())?;
    for pair in DEVICES[1..].chunks(2) {
        ns.veth(pair[0], pair[1]).map_err(|e| e.to_string())?;
    }
    for d in DEVICES {
        ns.exec(&["ip", "link", "set", d, "down"], None)
            .map_err(|e| e.to_string())?;
    }
    Ok(ns)
}

/// A JIT pass, each frame `REPEAT` times in a row (`in_turn`: every frame
/// once, `REPEAT` times over): ns per run.
fn jit_pass(h: &mut Hook, frames: &[Vec<u8>], in_turn: bool) -> f64 {
    let m = meta();
    let start = Instant::now();
    if in_turn {
        for _ in 0..REPEAT {
            for f in frames {
                h.run(f, &m).unwrap();
            }
        }
    } else {
        for f in frames {
            for _ in 0..REPEAT {
                h.run(f, &m).unwrap();
            }
        }
    }
    start.elapsed().as_nanos() as f64 / (frames.len() as f64 * f64::from(REPEAT))
}

/// A kernel pass: each frame one test run of `REPEAT` runs; the mean of
/// the kernel's ns per run.
fn kernel_pass(fd: i32, frames: &[Vec<u8>], wants: &[Want]) -> Result<f64, String> {
    let mut total = 0u64;
    for (f, w) in frames.iter().zip(wants) {
        let out = kernel::testrun::run(
            fd,
            &kernel::testrun::RunInput {
                data: f,
                repeat: REPEAT,
                ..Default::default()
            },
        )
        .map_err(|e| e.to_string())?;
        if out.retval != w.retval() {
            return Err(format!("returned {} after {REPEAT} runs", out.retval));
        }
        total += u64::from(out.duration_ns);
    }
    Ok(total as f64 / frames.len() as f64)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

struct Program {
    name: &'static str,
    wants: Vec<Want>,
    hook: Hook,
    kernel: Option<(kernel::KernelObject, i32)>,
    jit: Vec<f64>,
    jit_in_turn: Vec<f64>,
    kern: Vec<f64>,
}

/// A line of the table: million runs per second.
struct Row {
    name: &'static str,
    jit: Option<f64>,
    in_turn: Option<f64>,
    kernel: Option<f64>,
}

fn main() {
    let rounds = env_usize("SLUICE_LPM_ROUNDS", 9).max(1);
    let n = env_usize("SLUICE_LPM_FRAMES", 4096).max(1);
    let started = Instant::now();
    let t = RouteTable::synthetic(&Synth {
        prefixes: 100_000,
        ..Synth::default()
    });
    let reference = Reference::new(&t);
    let addrs = lpm::test_addresses(&t, n, 11);
    let frames: Vec<Vec<u8>> = addrs
        .iter()
        .map(|&a| {
            packet::Builder::udp("192.0.2.1", &Ipv4Addr::from(a).to_string(), 1000, 53)
                .ttl(255)
                .payload(&[0; 18])
                .build()
        })
        .collect();
    let wants: Vec<Want> = addrs
        .iter()
        .map(|&a| Want::of(&t, reference.lookup(a)))
        .collect();
    let routed = wants.iter().filter(|w| w.dmac.is_some()).count();
    // xdp_pass passes everything.
    let passes = vec![Want::of(&t, None); n];
    println!(
        "LPM lookups: {} prefixes (synthetic, BGP-like lengths), {n} frames ({routed} routed), {REPEAT} runs each, median of {rounds} rounds",
        t.len()
    );

    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("lpm: kernel side SKIPPED: needs root (BPF_PROG_TEST_RUN)");
    }
    // Without it, every pass would wait for thousands of RCU grace periods.
    let netns = if root {
        match dispatcher_namespace() {
            Ok(ns) => Some(ns),
            Err(e) => {
                eprintln!(
                    "lpm: kernel side SKIPPED: no namespace to keep the programs in the XDP dispatcher: {e}"
                );
                None
            }
        }
    } else {
        None
    };

    let mut progs: Vec<Program> = Vec::new();
    for (i, name) in PROGRAMS.into_iter().enumerate() {
        let e = entries(name, &t);
        let wants = if name == FLOOR { &passes } else { &wants };
        let mut hook = ours(name, &e);
        let m = meta();
        for (k, (f, w)) in frames.iter().zip(wants).enumerate() {
            let out = hook.run(f, &m).unwrap();
            let Verdict::Xdp(action) = out.verdict else {
                panic!("{name}: verdict {:?}", out.verdict)
            };
            if let Err(err) = w.check(f, action, out.packet) {
                panic!(
                    "{name} in sluice, frame {k} to {}: {err}",
                    Ipv4Addr::from(addrs[k])
                );
            }
        }
        let kernel = if let Some(ns) = &netns {
            let k = theirs(name, &hook, &e).and_then(|(k, fd)| {
                for (j, (f, w)) in frames.iter().zip(wants).enumerate() {
                    let out = kernel::testrun::run(
                        fd,
                        &kernel::testrun::RunInput {
                            data: f,
                            repeat: 1,
                            data_out: true,
                            ..Default::default()
                        },
                    )
                    .map_err(|e| e.to_string())?;
                    let action = match out.retval {
                        2 => XdpAction::Pass,
                        3 => XdpAction::Tx,
                        4 => XdpAction::Redirect,
                        r => XdpAction::Invalid(u64::from(r)),
                    };
                    if let Err(err) = w.check(f, action, &out.data) {
                        panic!(
                            "{name} in the kernel, frame {j} to {}: {err}",
                            Ipv4Addr::from(addrs[j])
                        );
                    }
                }
                let dev = DEVICES[i];
                in_netns(ns.name(), || {
                    kernel::attach::xdp_attach(dev, fd, kernel::attach::XdpMode::Skb)
                })
                .map_err(|e| format!("attaching to {dev}: {e}"))?;
                Ok((k, fd))
            });
            match k {
                Ok(k) => Some(k),
                Err(e) => {
                    eprintln!("lpm: {name} in the kernel SKIPPED: {e}");
                    None
                }
            }
        } else {
            None
        };
        progs.push(Program {
            name,
            wants: wants.clone(),
            hook,
            kernel,
            jit: Vec::new(),
            jit_in_turn: Vec::new(),
            kern: Vec::new(),
        });
    }
    println!(
        "set up and checked in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    for _ in 0..rounds {
        for p in &mut progs {
            p.jit.push(jit_pass(&mut p.hook, &frames, false));
            p.jit_in_turn.push(jit_pass(&mut p.hook, &frames, true));
            if let Some((_, fd)) = &p.kernel {
                match kernel_pass(*fd, &frames, &p.wants) {
                    Ok(ns) => p.kern.push(ns),
                    Err(e) => {
                        eprintln!("lpm: {} in the kernel: {e}: dropped", p.name);
                        p.kernel = None;
                    }
                }
            }
        }
    }
    if let Some(ns) = &netns {
        in_netns(ns.name(), || {
            for d in DEVICES {
                let _ = kernel::attach::xdp_detach(d);
            }
        });
    }

    // Mpps = 1000 / ns per lookup; the kernel's only when every round ran.
    let mpps = |v: &mut Vec<f64>| (!v.is_empty()).then(|| 1e3 / median(v));
    let rows: Vec<Row> = progs
        .iter_mut()
        .map(|p| Row {
            name: p.name,
            jit: mpps(&mut p.jit),
            in_turn: mpps(&mut p.jit_in_turn),
            kernel: p.kernel.as_ref().and_then(|_| mpps(&mut p.kern)),
        })
        .collect();
    let base = rows
        .iter()
        .find(|r| r.name == BASELINE)
        .and_then(|r| r.kernel);
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => format!("{:.2}", a / b),
        _ => "-".into(),
    };
    let show = |v: Option<f64>| v.map_or("skipped".into(), |v| format!("{v:.2}"));
    println!(
        "{:<14}{:>8}{:>13}{:>8}{:>12}{:>13}{:>16}",
        "program", "JIT", "JIT in turn", "kernel", "JIT/kernel", "JIT/k. trie", "kernel/k. trie"
    );
    for r in &rows {
        println!(
            "{:<14}{:>8}{:>13}{:>8}{:>12}{:>13}{:>16}",
            r.name,
            show(r.jit),
            show(r.in_turn),
            show(r.kernel),
            ratio(r.jit, r.kernel),
            ratio(r.jit, base),
            ratio(r.kernel, base),
        );
    }
    println!(
        "(million lookups (packets) per second; a ratio over 1: the first is faster; k. trie: fwd_lpm_trie in the kernel; {FLOOR}: no lookup, the cost of a run; {:.0} s)",
        started.elapsed().as_secs_f64()
    );
}
