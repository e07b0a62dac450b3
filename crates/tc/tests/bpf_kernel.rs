//! sluice's cls_bpf against the kernel's: the same `tc` lines (a program
//! in classid mode with a mirred action, a u32 rule, the program again in
//! direct-action mode) go to the real `tc` on a veth of this test's own
//! namespace and to a sluice configuration; both show the filters alike
//! (less the program ids and tags, which are each loader's own), the same
//! frames go through both (VLAN-tagged ones among them: `protocol ip`
//! filters do not see those), and the mirred actions, the clsact qdisc's
//! packet count and its drops (the program drops telnet) must agree. Needs
//! root (skips loudly without, unless SLUICE_REQUIRE_KERNEL=1).

mod common;

use common::{frames, two_veths};
use tc::{ClsactHook, Config, ShowOptions, Skb};

/// A filter line's program part cut at ` id `: the kernel's id, name, tag
/// and `jited` are its own.
fn without_prog_ids(show: &str) -> String {
    show.lines()
        .map(|l| match l.find(" not_in_hw id ") {
            Some(at) => &l[..at],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A TCP frame to `dport`.
fn tcp(dport: u16) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
    let mut ip = vec![
        0x45, 0x20, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ];
    ip.extend(1234u16.to_be_bytes());
    ip.extend(dport.to_be_bytes());
    ip.extend([0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0]);
    f.extend(ip);
    f
}

/// The clsact qdisc's `Sent B bytes P pkt (dropped D, ...)` numbers.
fn qdisc_counts(text: &str) -> (u64, u64) {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("Sent "))
        .unwrap_or_else(|| panic!("no counters in {text}"));
    let w: Vec<&str> = line.split_whitespace().collect();
    let drops = w[6].trim_end_matches(',').parse().unwrap();
    (w[3].parse().unwrap(), drops)
}

#[test]
fn bpf_agrees_with_the_kernel() {
    if !testkit::root_available("cls_bpf against the kernel") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("sluice-bpf-kernel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let obj = dir.join("tc_classify.o");
    std::fs::write(&obj, programs::object("tc_classify").expect("built")).unwrap();
    let obj = obj.to_str().unwrap();
    let ns = two_veths("bpf");
    let lines = [
        "qdisc add dev vb clsact".to_string(),
        format!(
            "filter add dev vb ingress prio 1 bpf obj {obj} sec tc classid 1:5 \
             action mirred egress mirror dev vc continue"
        ),
        // Both go on (`continue`) to the direct-action program, which drops
        // telnet.
        "filter add dev vb ingress prio 2 protocol ip u32 match ip protocol 6 0xff \
         action mirred egress mirror dev vc continue"
            .to_string(),
        "filter add dev vb ingress prio 2 protocol ip u32 match ip protocol 17 0xff \
         action mirred egress mirror dev vc continue"
            .to_string(),
        format!("filter add dev vb ingress prio 3 bpf obj {obj} sec tc da"),
    ];
    // The namespace's devices, as tc finds them there (mirred's vc).
    let mut config = Config::default();
    for d in ["va", "vb", "vc", "vd"] {
        config.devices.set(d, ns.ifindex(d));
    }
    for l in &lines {
        let w: Vec<&str> = l.split_whitespace().collect();
        let mut argv = vec!["tc"];
        argv.extend(&w);
        ns.must(&argv);
        config.run(&w, ShowOptions::default()).unwrap();
    }
    // Refused alike: a missing section, a missing file, a stray word.
    for bad in [
        format!("filter add dev vb ingress prio 7 bpf obj {obj} sec nosuch"),
        "filter add dev vb ingress prio 7 bpf obj /nonexistent.o".to_string(),
        format!("filter add dev vb ingress prio 7 bpf obj {obj} sec tc bogus"),
        format!("filter add dev vb ingress prio 7 bpf obj {obj}"),
    ] {
        let w: Vec<&str> = bad.split_whitespace().collect();
        let mut argv = vec!["tc"];
        argv.extend(&w);
        let kernel = ns.run(&argv).unwrap_err().stderr;
        let sluice = config
            .run(&w, ShowOptions::default())
            .unwrap_err()
            .to_string();
        // sluice may say more after tc's words.
        let first = |s: &str| s.lines().next().unwrap_or("").to_string();
        assert!(
            first(&sluice).starts_with(&first(&kernel)),
            "{bad}\nsluice: {sluice}\nkernel: {kernel}"
        );
    }
    let show = |c: &mut Config| {
        c.run(
            &["filter", "show", "dev", "vb", "ingress"],
            ShowOptions::default(),
        )
        .unwrap()
    };
    let kernel_show = ns.must(&["tc", "filter", "show", "dev", "vb", "ingress"]);
    // The kernel names the object by the path given; so does sluice.
    assert_eq!(
        without_prog_ids(&show(&mut config)),
        without_prog_ids(&kernel_show)
            .replace(" installed 0 sec used 0 sec", "")
            .replace(" installed 0 sec", ""),
    );
    let mut frames = frames();
    for port in [23, 23, 80, 23, 22] {
        frames.push(tcp(port));
    }
    let vb = ns.ifindex("vb");
    config.devices.set("vb", vb);
    let (mut packets, mut drops) = (0, 0);
    for f in &frames {
        let mut skb = Skb::from_frame(f, vb);
        let out = config.classify("vb", ClsactHook::Ingress, &mut skb);
        packets += 1;
        drops += u64::from(out.verdict == runtime::TcAction::Shot);
    }
    ns.send_frames("va", &frames);
    let stats = ns.must(&["tc", "-s", "filter", "show", "dev", "vb", "ingress"]);
    let kernel_packets: Vec<u64> = stats
        .lines()
        .filter_map(|l| l.strip_prefix("\tSent "))
        .map(|r| r.split(' ').nth(2).unwrap().parse().unwrap())
        .collect();
    let sluice_packets: Vec<u64> = config.actions.iter().map(|a| a.stats.packets).collect();
    let (kp, kd) = qdisc_counts(&ns.must(&["tc", "-s", "qdisc", "show", "dev", "vb", "ingress"]));
    eprintln!("mirred packets: sluice {sluice_packets:?}, kernel {kernel_packets:?}");
    eprintln!("clsact packets, drops: sluice {packets} {drops}, kernel {kp} {kd}");
    assert_eq!(sluice_packets, kernel_packets);
    assert!(sluice_packets.iter().all(|&p| p > 0), "{sluice_packets:?}");
    assert_eq!((packets, drops), (kp, kd), "clsact packets and drops");
    assert!(drops >= 3, "telnet is dropped: {drops}");
    let _ = std::fs::remove_dir_all(&dir);
}
