//! Every example program over every capture of the tcpdump corpus: no VM
//! error, no ABORTED, and each program's output exactly as expected; and
//! the JIT (checked, and unchecked for verified programs) gives exactly
//! what the interpreter gives.

mod common;

use common::*;
use runtime::*;

fn frames() -> Vec<(String, capture::Frame)> {
    let mut out = Vec::new();
    for f in testkit::captures() {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        for (i, frame) in capture::PcapSource::open(&f).unwrap().enumerate() {
            out.push((format!("{name}#{}", i + 1), frame.unwrap()));
        }
    }
    assert!(out.len() > 3000, "{} frames", out.len());
    out
}

/// What a program must do to a frame, given its verdict and output.
type Check = fn(&[u8], Verdict, &[u8]) -> Result<(), String>;

fn unchanged(input: &[u8], out: &[u8]) -> Result<(), String> {
    if input == out {
        Ok(())
    } else {
        Err("the frame changed".into())
    }
}

fn check_program(name: &str, check: Check) {
    check_program_with(name, |_| {}, check);
}

/// [`check_program`] after `setup` has filled the program's maps.
fn check_program_with(name: &str, setup: fn(&Hook), check: Check) {
    let mut h = hook(name);
    setup(&h);
    fwd_routes(&h);
    let mut verdicts = std::collections::BTreeMap::new();
    for (at, frame) in frames() {
        let input = &frame.data[..frame.data.len().min(runtime::MAX_FRAME)];
        let out = h
            .run(input, &meta(frame.timestamp_ns))
            .unwrap_or_else(|e| panic!("{name} on {at}: {e}"));
        assert!(
            !matches!(
                out.verdict,
                Verdict::Xdp(XdpAction::Aborted | XdpAction::Invalid(_))
                    | Verdict::Tc(TcAction::Invalid(_))
            ),
            "{name} on {at}: {:?}",
            out.verdict
        );
        // Frames past one XDP page continue in fragments.
        check(input, out.verdict, &[out.packet, out.frags].concat())
            .unwrap_or_else(|e| panic!("{name} on {at}: {e} ({:?})", out.verdict));
        *verdicts.entry(out.verdict.name()).or_insert(0) += 1;
    }
    println!("{name}: {verdicts:?}");
}

#[test]
fn xdp_drop() {
    check_program("xdp_drop", |_, v, _| {
        if v == Verdict::Xdp(XdpAction::Drop) {
            Ok(())
        } else {
            Err("not dropped".into())
        }
    });
}

#[test]
fn xdp_pass() {
    check_program("xdp_pass", |i, v, o| {
        if v != Verdict::Xdp(XdpAction::Pass) {
            return Err("not passed".into());
        }
        unchanged(i, o)
    });
}

#[test]
fn xdp_count() {
    check_program("xdp_count", |i, v, o| {
        if v != Verdict::Xdp(XdpAction::Pass) {
            return Err("not passed".into());
        }
        unchanged(i, o)
    });
}

#[test]
fn xdp_parse_tx() {
    check_program("xdp_parse_tx", |i, v, o| match v {
        Verdict::Xdp(XdpAction::Drop) if i.len() < 14 => Ok(()),
        Verdict::Xdp(XdpAction::Tx) if i.len() >= 14 => {
            let mut want = i.to_vec();
            want[..6].copy_from_slice(&i[6..12]);
            want[6..12].copy_from_slice(&i[..6]);
            unchanged(&want, o)
        }
        _ => Err("wrong verdict for the frame's length".into()),
    });
}

#[test]
fn xdp_ddos() {
    check_program("xdp_ddos", |i, v, o| match v {
        Verdict::Xdp(XdpAction::Pass | XdpAction::Drop) => unchanged(i, o),
        _ => Err("neither passed nor dropped".into()),
    });
}

#[test]
fn xdp_router() {
    // No routes: everything goes to the stack as it came, or is dropped.
    check_program("xdp_router", |i, v, o| match v {
        Verdict::Xdp(XdpAction::Pass | XdpAction::Drop) => unchanged(i, o),
        _ => Err("forwarded without a route".into()),
    });
}

#[test]
fn xdp_lb() {
    // No VIPs: nothing is balanced.
    check_program("xdp_lb", |i, v, o| match v {
        Verdict::Xdp(XdpAction::Pass) => unchanged(i, o),
        _ => Err("balanced without a VIP".into()),
    });
}

#[test]
fn tc_classify() {
    check_program("tc_classify", |i, v, o| match v {
        Verdict::Tc(TcAction::Ok | TcAction::Shot) => {
            if i.len() != o.len() {
                return Err("length changed".into());
            }
            // Only an IPv4 header's TOS and checksum may change (CS1 cleared).
            let diff: Vec<usize> = (0..i.len()).filter(|&k| i[k] != o[k]).collect();
            match diff.as_slice() {
                [] => Ok(()),
                d if d
                    .iter()
                    .all(|&k| [15, 24, 25, 19, 28, 29, 23, 32, 33].contains(&k))
                    && o.len() > 15 =>
                {
                    if [15, 19, 23]
                        .iter()
                        .any(|&k| k < o.len() && i[k] >> 2 == 8 && o[k] >> 2 == 0)
                    {
                        Ok(())
                    } else {
                        Err(format!("unexpected change at {d:?}"))
                    }
                }
                d => Err(format!("unexpected change at {d:?}")),
            }
        }
        _ => Err("neither OK nor SHOT".into()),
    });
}

/// The ESP programs' SA in the capture runs.
const ESP_SPI: u32 = 0x5eed;
const ESP_3DES_KEY: [u8; 24] = *b"sluice esp 3des key 24 b";
const ESP_AES_KEY: [u8; 16] = *b"sluice aes key 1";

/// Whole IPv4 datagrams up to 1500 bytes are encrypted (checked against
/// RustCrypto), everything else passes unchanged.
fn esp_check(
    c: common::esp::Cipher,
    key: &[u8],
    i: &[u8],
    v: Verdict,
    o: &[u8],
) -> Result<(), String> {
    match v {
        Verdict::Xdp(XdpAction::Tx) if common::esp::encrypted(i) => {
            common::esp::check_esp(c, key, ESP_SPI, i, o).map(|_| ())
        }
        Verdict::Xdp(XdpAction::Pass) if !common::esp::encrypted(i) => unchanged(i, o),
        _ => Err("encrypted what it should pass or the other way round".into()),
    }
}

#[test]
fn esp_3des() {
    check_program_with(
        "esp_3des",
        |h| common::esp::set_sa(h, ESP_SPI, &ESP_3DES_KEY),
        |i, v, o| esp_check(common::esp::Cipher::Tdes, &ESP_3DES_KEY, i, v, o),
    );
}

#[test]
fn esp_aes() {
    check_program_with(
        "esp_aes",
        |h| common::esp::set_sa(h, ESP_SPI, &ESP_AES_KEY),
        |i, v, o| esp_check(common::esp::Cipher::Aes, &ESP_AES_KEY, i, v, o),
    );
}

/// Maps the replay fills so that more than the programs' default paths run.
fn set_up(h: &Hook, name: &str) {
    match name {
        "esp_3des" => common::esp::set_sa(h, ESP_SPI, &ESP_3DES_KEY),
        "esp_aes" => common::esp::set_sa(h, ESP_SPI, &ESP_AES_KEY),
        _ => {}
    }
    fwd_routes(h);
}

/// fwd_radix, fwd_lctrie and fwd_lpm_trie with a default route and
/// 10.0.0.0/8: as the model of the RFC 1812 checks says
/// (common::fwd_expected).
fn forwarding(i: &[u8], v: Verdict, o: &[u8]) -> Result<(), String> {
    match (fwd_expected(i), v) {
        (None, Verdict::Xdp(XdpAction::Pass)) | (Some(None), Verdict::Xdp(XdpAction::Drop)) => {
            unchanged(i, o)
        }
        (Some(Some((ifindex, smac, dmac))), Verdict::Xdp(XdpAction::Tx | XdpAction::Redirect))
            if (ifindex == 0) == (v == Verdict::Xdp(XdpAction::Tx)) =>
        {
            if o.len() != i.len() || o[..6] != dmac || o[6..12] != smac {
                return Err("wrong MACs".into());
            }
            let ip = ip_offset(i);
            let hlen = usize::from(o[ip] & 0xf) * 4;
            if o[ip + 8] != i[ip + 8] - 1 || !ipv4_checksum_ok(&o[ip..ip + hlen]) {
                return Err("TTL or checksum wrong".into());
            }
            let changed: Vec<usize> = (12..o.len()).filter(|&k| o[k] != i[k]).collect();
            if changed
                .iter()
                .any(|&k| ![ip + 8, ip + 10, ip + 11].contains(&k))
            {
                return Err(format!("bytes changed at {changed:?}"));
            }
            Ok(())
        }
        (want, _) => Err(format!("expected {want:?}")),
    }
}

/// Where the IPv4 header starts: after Ethernet and up to two VLAN tags.
fn ip_offset(frame: &[u8]) -> usize {
    let tagged = |off: usize| matches!(frame[off..off + 2], [0x81, 0x00] | [0x88, 0xa8]);
    let mut off = 14;
    while off < 22 && tagged(off - 2) {
        off += 4;
    }
    off
}

#[test]
fn fwd_radix() {
    check_program("fwd_radix", forwarding);
}

#[test]
fn fwd_lctrie() {
    check_program("fwd_lctrie", forwarding);
}

#[test]
fn fwd_lpm_trie() {
    check_program("fwd_lpm_trie", forwarding);
}

#[test]
fn classify() {
    check_program("classify", |i, v, o| match v {
        Verdict::Xdp(XdpAction::Pass) => unchanged(i, o),
        _ => Err("not passed".into()),
    });
}

/// What one run produced, owned.
#[derive(Clone, Debug, PartialEq)]
struct Run {
    r0: u64,
    verdict: Verdict,
    bytes: Vec<u8>,
    redirect: Option<Redirect>,
    clones: Vec<Cloned>,
    insns: u64,
    helper_calls: u64,
    tail_calls: u64,
}

fn replay(h: &mut Hook, frame: &capture::Frame) -> Result<Run, String> {
    let input = &frame.data[..frame.data.len().min(runtime::MAX_FRAME)];
    run_of(h.run(input, &meta(frame.timestamp_ns)))
}

fn run_of(out: Result<Outcome<'_>, vm::VmError>) -> Result<Run, String> {
    let out = out.map_err(|e| e.to_string())?;
    Ok(Run {
        r0: out.r0,
        verdict: out.verdict,
        bytes: [out.meta, out.packet, out.frags].concat(),
        redirect: out.redirect,
        clones: out.clones.to_vec(),
        insns: out.stats.insns,
        helper_calls: out.stats.helper_calls,
        tail_calls: out.stats.tail_calls,
    })
}

/// Whether the verifier accepts every program `h` may run.
fn verified(h: &Hook) -> bool {
    let object = h.object();
    let maps = verifier::MapView::of_object(object, &|i| {
        object.maps[i].data.as_ref()?;
        h.maps()[i].user_lookup(&0u32.to_le_bytes()).ok()
    });
    h.runnable().all(|i| {
        let p = &object.programs[i];
        let opts = verifier::VerifyOptions {
            helpers: runtime::helpers::ids_for(&p.kind),
            ..verifier::VerifyOptions::default()
        };
        verifier::verify(p, &maps, &opts).result.is_ok()
    })
}

/// Runs `frames` through `h` in batches of varying sizes (1 to 150, so
/// batches span the hook's 64 frames and end anywhere): each outcome must
/// be the interpreter's run of its own.
fn batches_alike(
    h: &mut Hook,
    name: &str,
    frames: &[(String, capture::Frame)],
    wants: &[Result<Run, String>],
) {
    let native = h.batches_natively();
    if h.kind().is_xdp() {
        assert!(
            native,
            "{name}: a verified XDP program runs batches natively"
        );
    }
    let (mut at, mut size) = (0, 1);
    let mut m = meta(0);
    while at < frames.len() {
        let n = size.min(frames.len() - at);
        let group = &frames[at..at + n];
        let input = |i: usize| {
            let f = &group[i].1;
            (
                &f.data[..f.data.len().min(runtime::MAX_FRAME)],
                f.timestamp_ns,
            )
        };
        let mut seen = 0;
        h.run_batch(n, input, &mut m, |i, out| {
            assert_eq!(i, seen, "{name}: outcomes in order");
            seen += 1;
            let (where_, want) = (&group[i].0, &wants[at + i]);
            assert_eq!(&run_of(out), want, "{name} on {where_}: batch of {n}");
        });
        assert_eq!(seen, n, "{name}: every packet has an outcome");
        at += n;
        size = size * 7 % 151;
    }
}

/// Batches that mix packets the program redirects, rewrites, grows
/// (ESP encapsulation: `xdp_adjust_head`/`_tail`) or passes with frames
/// over a page (fragments: a run of their own) and exactly one frame's
/// linear part: each packet's outcome and the maps at the end are the
/// interpreter's.
#[cfg(target_arch = "x86_64")]
#[test]
fn batches_mix_redirects_rewrites_growth_and_frames_over_a_page() {
    use packet::Builder;
    let udp = |dst: &str, ttl: u8, len: usize| {
        let b = Builder::udp("10.0.0.1", dst, 4500, 4500).ttl(ttl);
        let head = b.clone().build().len();
        b.payload(&vec![0x5a; len.saturating_sub(head)]).build()
    };
    let mut frames = Vec::new();
    for k in 0..400u64 {
        let len = [
            60,
            1500,
            runtime::XDP_LINEAR_MAX,
            runtime::XDP_LINEAR_MAX + 1,
            5000,
            9000,
        ][k as usize % 6];
        let data = match k % 5 {
            0 => udp("10.10.5.5", 64, len),
            1 => udp("172.20.1.1", 64, len),
            2 => udp("10.10.5.5", 1, len),
            3 => udp("10.66.1.1", 64, len),
            _ => Builder::udp("2001:db8::1", "2001:db8:100::9", 1, 2)
                .ttl(9)
                .build(),
        };
        let frame = capture::Frame {
            orig_len: data.len() as u32,
            data,
            timestamp_ns: 1_000_000 * k,
            link: capture::LinkKind::Ethernet,
        };
        frames.push((format!("frame {k}"), frame));
    }
    for name in [
        "xdp_router",
        "xdp_parse_tx",
        "esp_aes",
        "esp_3des",
        "xdp_count",
        "xdp_ddos",
    ] {
        let make = || {
            let h = if name == "xdp_router" {
                router()
            } else {
                hook(name)
            };
            set_up(&h, name);
            h
        };
        let (mut interp, mut batched) = (make(), make());
        batched.enable_jit().unwrap();
        assert!(verified(&batched), "{name} verifies");
        // SAFETY: the verifier accepted every program the hook runs.
        unsafe { batched.trust_verified() };
        let wants: Vec<_> = frames.iter().map(|(_, f)| replay(&mut interp, f)).collect();
        let redirected = wants
            .iter()
            .filter(|w| w.as_ref().is_ok_and(|r| r.redirect.is_some()))
            .count();
        if name == "xdp_router" {
            assert!(redirected > 100, "{name}: {redirected} redirected");
        }
        batches_alike(&mut batched, name, &frames, &wants);
        for (i, m) in interp.maps().iter().enumerate() {
            assert_eq!(
                batched.maps()[i].entries(),
                m.entries(),
                "{name}: map {}",
                m.name()
            );
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn the_jit_replays_every_capture_like_the_interpreter() {
    let frames = frames();
    let mut unchecked_programs = 0;
    for name in programs::names() {
        let mut interp = hook(name);
        let mut checked = hook(name);
        checked.enable_jit().unwrap();
        let mut fast = hook(name);
        fast.enable_jit().unwrap();
        let mut batched = hook(name);
        batched.enable_jit().unwrap();
        for h in [&interp, &checked, &fast, &batched] {
            set_up(h, name);
        }
        let trusted = verified(&fast);
        if trusted {
            // SAFETY: the verifier accepted every program the hook runs,
            // against its own maps.
            unsafe { fast.trust_verified() };
            // SAFETY: as above.
            unsafe { batched.trust_verified() };
            unchecked_programs += 1;
        }
        let mut wants = Vec::with_capacity(frames.len());
        for (at, frame) in &frames {
            let want = replay(&mut interp, frame);
            wants.push(want.clone());
            assert_eq!(
                replay(&mut checked, frame),
                want,
                "{name} on {at}: checked JIT"
            );
            if trusted {
                assert_eq!(
                    replay(&mut fast, frame),
                    want,
                    "{name} on {at}: unchecked JIT"
                );
            }
        }
        if trusted {
            batches_alike(&mut batched, name, &frames, &wants);
        }
        for (i, m) in interp.maps().iter().enumerate() {
            if trusted {
                assert_eq!(
                    batched.maps()[i].entries(),
                    m.entries(),
                    "{name}: map {} (batches)",
                    m.name()
                );
            }
            assert_eq!(
                checked.maps()[i].entries(),
                m.entries(),
                "{name}: map {}",
                m.name()
            );
            if trusted {
                assert_eq!(
                    fast.maps()[i].entries(),
                    m.entries(),
                    "{name}: map {}",
                    m.name()
                );
            }
        }
        println!(
            "{name}: {} frames alike (unchecked too: {trusted})",
            frames.len()
        );
    }
    assert!(
        unchecked_programs >= 8,
        "only {unchecked_programs} examples verified"
    );
}
