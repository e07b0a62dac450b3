//! `tc` command lines against the kernel's (issue 40): each command runs
//! with the real `tc` in a network namespace of this test's own and in a
//! sluice `Config` whose devices are that namespace's; both must accept or
//! refuse it alike (`filter change|replace` of a u32 rule, `prio 0`,
//! `protocol ipv4`, mirred to a missing device, `indev` of an interface
//! with no qdisc, `goto chain` past the limit), and at the end sluice's
//! `filter show` must print what the kernel's does. Needs root (skips
//! loudly without, unless SLUICE_REQUIRE_KERNEL=1, then fails).

mod common;

use common::two_veths;
use tc::{Config, ShowOptions, words};

/// (command after `tc`, whether tc and the kernel take it).
const COMMANDS: &[(&str, bool)] = &[
    ("qdisc add dev va clsact", true),
    (
        "filter add dev va ingress prio 1 protocol ip handle 800::800 u32 match ip protocol 17 0xff classid 1:1",
        true,
    ),
    // add of a handle in use: "Filter already exists".
    (
        "filter add dev va ingress prio 1 protocol ip handle 800::800 u32 match ip protocol 17 0xff classid 1:9",
        false,
    ),
    // change keeps the selector (17) and takes the class.
    (
        "filter change dev va ingress prio 1 protocol ip handle 800::800 u32 match ip protocol 6 0xff classid 1:2",
        true,
    ),
    (
        "filter replace dev va ingress prio 1 protocol ip handle 800::800 u32 match ip protocol 6 0xff classid 1:3",
        true,
    ),
    // change makes nothing new (no handle, or one no rule has) ...
    (
        "filter change dev va ingress prio 1 protocol ip u32 match ip protocol 6 0xff classid 1:4",
        false,
    ),
    (
        "filter change dev va ingress prio 1 protocol ip handle 800::900 u32 match ip protocol 6 0xff classid 1:4",
        false,
    ),
    // ... replace does.
    (
        "filter replace dev va ingress prio 1 protocol ip u32 match ip protocol 6 0xff classid 1:5",
        true,
    ),
    // prio 0: the kernel picks 49152 (not one below prio 1).
    (
        "filter add dev va ingress prio 0 protocol ip u32 match u32 0 0 classid 1:6",
        true,
    ),
    (
        "filter add dev va ingress protocol ipv4 u32 match u32 0 0 classid 1:7 indev lo",
        true,
    ),
    (
        "filter add dev va ingress prio 3 protocol ip u32 match u32 0 0 indev vb action mirred egress mirror dev vc",
        true,
    ),
    (
        "filter add dev va ingress prio 4 protocol ip u32 match u32 0 0 action mirred egress redirect dev nonexist",
        false,
    ),
    (
        "filter add dev va ingress prio 5 protocol ip u32 match u32 0 0 indev nonexist classid 1:1",
        false,
    ),
    (
        "filter add dev va ingress prio 6 protocol ip u32 match u32 0 0 action mirred egress mirror dev vc goto chain 4294967295",
        false,
    ),
    (
        "filter add dev va ingress prio 7 chain 4294967295 protocol ip u32 match u32 0 0 classid 1:1",
        false,
    ),
];

#[test]
fn commands_are_taken_and_refused_as_the_kernel_does() {
    if !testkit::root_available("tc command lines against the kernel") {
        return;
    }
    let ns = two_veths("tccmd");
    let mut config = Config::default();
    for d in ["va", "vb", "vc", "vd"] {
        config.devices.set(d, ns.ifindex(d));
    }
    for (line, ok) in COMMANDS {
        let w = words(line);
        let mut args = vec!["tc"];
        args.extend(w.iter().map(String::as_str));
        let kernel = ns.run(&args);
        assert_eq!(kernel.is_ok(), *ok, "kernel: {line}: {kernel:?}");
        let w: Vec<&str> = w.iter().map(String::as_str).collect();
        let sluice = config.run(&w, ShowOptions::default());
        assert_eq!(sluice.is_ok(), *ok, "sluice: {line}: {sluice:?}");
    }
    let kernel = ns.must(&["tc", "filter", "show", "dev", "va", "ingress"]);
    let sluice = config
        .run(
            &["filter", "show", "dev", "va", "ingress"],
            ShowOptions::default(),
        )
        .unwrap();
    // The kernel prints a rule's actions with times sluice has not
    // (installed, used): compare every line but an action's own.
    let cut = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| !l.starts_with('\t') && !l.starts_with(" \t"))
            .map(|l| l.trim_end().to_string())
            .filter(|l| !l.is_empty())
            .collect()
    };
    assert!(
        cut(&kernel).iter().any(|l| l.contains("pref 49152")),
        "{kernel}"
    );
    assert_eq!(
        cut(&sluice),
        cut(&kernel),
        "sluice:\n{sluice}\nkernel:\n{kernel}"
    );
}
