//! The compiled tc program attached to a real device: in a network
//! namespace of the test's own, iproute2 loads the object (`tc filter add
//! dev va ingress bpf da obj ... sec tc`), every capture frame that can
//! cross a veth is sent into it from its peer, and the counters read from
//! the kernel's maps (by bpftool) give the same `tc -s filter show` as
//! the user-space chain over the same frames. This is the kernel's own
//! receive path: an outer VLAN tag is taken into the skb's metadata
//! before tc, unlike in a test run. Needs root.

mod common;

use std::process::Command;

use common::*;

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn the_tc_program_on_a_veth_counts_what_the_user_space_chain_counts() {
    if !testkit::kernel_available("tc compile on a veth") {
        return;
    }
    if Command::new("bpftool").arg("version").output().is_err() {
        eprintln!("\n**** SKIPPED: no bpftool (tc compile on a veth) ****\n");
        return;
    }
    let compiled = compiled();
    let obj = std::env::temp_dir().join(format!("tccompile-real-{}.o", std::process::id()));
    std::fs::write(&obj, &compiled.object).unwrap();
    let ns = testkit::Netns::with_veth("tcc", "va", "vb");
    for d in ["va", "vb"] {
        ns.must(&["ip", "link", "set", d, "mtu", "9000", "up"]);
    }
    ns.must(&["tc", "qdisc", "add", "dev", "va", "clsact"]);
    ns.must(&[
        "tc",
        "filter",
        "add",
        "dev",
        "va",
        "ingress",
        "bpf",
        "da",
        "obj",
        obj.to_str().unwrap(),
        "sec",
        "tc",
    ]);
    let _ = std::fs::remove_file(&obj);
    // What crosses a veth: a whole Ethernet header, within the MTU, and
    // not a tagged frame too short for its tag (the kernel's receive path
    // drops it before tc when it takes the tag out).
    let frames: Vec<Vec<u8>> = frames()
        .into_iter()
        .filter(|f| (14..=9014).contains(&f.len()))
        .filter(|f| !(matches!([f[12], f[13]], [0x81, 0x00] | [0x88, 0xa8]) && f.len() < 18))
        .collect();
    ns.send_frames("vb", &frames);
    let mut user = config();
    for f in &frames {
        user_space(&mut user, f);
    }
    // The maps, by the program's id.
    let net = json(&ns.must(&["bpftool", "-j", "net", "show", "dev", "va"]));
    let id = net[0]["tc"][0]["id"].as_u64().unwrap().to_string();
    let prog = json(&ns.must(&["bpftool", "-j", "prog", "show", "id", &id]));
    let mut dumps = std::collections::BTreeMap::new();
    for m in prog["map_ids"].as_array().unwrap() {
        let m = m.as_u64().unwrap().to_string();
        let info = json(&ns.must(&["bpftool", "-j", "map", "show", "id", &m]));
        let dump = json(&ns.must(&["bpftool", "-j", "map", "dump", "id", &m]));
        dumps.insert(info["name"].as_str().unwrap().to_string(), dump);
    }
    let counters = tccompile::CompiledCounters::read(&compiled.manifest, |name, slot| {
        let d = dumps.get(name).ok_or_else(|| format!("no map {name}"))?;
        let e = &d.as_array().unwrap()[slot as usize];
        Ok(e["value"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| u8::from_str_radix(b.as_str().unwrap().trim_start_matches("0x"), 16).unwrap())
            .collect())
    })
    .unwrap();
    let mut c = config();
    counters.apply(&compiled.manifest, &mut c).unwrap();
    eprintln!("{} frames sent into va", frames.len());
    assert_eq!(show_stats(&mut c), show_stats(&mut user));
}
