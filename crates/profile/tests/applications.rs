//! The paper's four applications (forwarding with a radix tree and with
//! an LC-trie on a 100k-prefix table, 5-tuple classification, ESP
//! encryption with 3DES and AES) are linear in the packet length: the
//! mean cost of each length lies on the fitted line, R^2 >= 0.99 for
//! instructions and memory accesses. Prints Table II (docs/profile.md).

use pipeline::Generated;
use profile::{CostModel, profile};
use runtime::{Hook, Image, LoadOptions};

/// The same `flows` packets (destinations spread over the address space,
/// sources over 10.0/16) at each size from 64 to 1500 bytes, step 64.
fn sizes(flows: u32) -> Generated {
    let mut specs = Vec::new();
    for size in (64..=1500).step_by(64).chain([1500]) {
        let spec = format!("udp,flows={flows},count={flows},size={size},dst=0.0.0.0/0");
        specs.push(packet::GenSpec::parse(&spec).unwrap());
    }
    Generated::new(&specs)
}

fn hook(name: &str) -> Hook {
    let object = obj::Object::parse(programs::object(name).unwrap()).unwrap();
    let image = Image::load(object, &LoadOptions::default()).unwrap();
    let prog = image.find_program(None).unwrap();
    let mut h = Hook::new(image, prog, 0).unwrap();
    h.enable_jit().unwrap();
    h
}

fn put(h: &Hook, map: &str, key: &[u8], value: &[u8]) {
    let i = h.object().map_index(map).unwrap();
    h.maps()[i].user_update(key, value, 0).unwrap();
}

/// `name` with its maps filled: the 100k-prefix synthetic table for the
/// forwarding programs, an SA for ESP.
fn application(name: &str) -> Hook {
    let h = hook(name);
    let maps: Vec<String> = h
        .object()
        .maps
        .iter()
        .map(|m| m.name().to_string())
        .collect();
    if let Some(layout) = lpm::Layout::of_maps(maps.iter().map(String::as_str)) {
        let table = lpm::RouteTable::synthetic(&lpm::Synth::default());
        for (map, k, v) in layout.entries(&table).unwrap() {
            put(&h, &map, &k, &v);
        }
    }
    if name.starts_with("esp_") {
        let i = h.object().map_index("esp_sa").unwrap();
        let mut sa = vec![0u8; h.maps()[i].spec().value_size as usize];
        sa[..4].copy_from_slice(&0x1000u32.to_be_bytes());
        sa[16..40].copy_from_slice(b"a 24-byte key for tables");
        put(&h, "esp_sa", &0u32.to_le_bytes(), &sa);
    }
    h
}

/// The model of `name` over [`sizes`], with the same packets run once
/// before when `warm` (classify's flows then exist: its steady state).
fn model(name: &str, flows: u32, warm: bool) -> CostModel {
    let mut h = application(name);
    if warm {
        profile::warm_up(&mut h, &mut sizes(flows), None).unwrap();
    }
    let p = profile(&mut h, name, &mut sizes(flows), None, &mut |_| {}).unwrap();
    assert_eq!(p.failed, 0, "{name}: {:?}", p.first_failures);
    CostModel::fit(&p)
}

#[test]
fn the_applications_are_linear_in_the_packet_length() {
    println!(
        "{:<12} {:>10} {:>8} {:>10} {:>8} {:>9} {:>9}",
        "program", "alpha", "beta", "gamma", "delta", "R^2 i", "R^2 m"
    );
    for (name, flows) in [
        ("fwd_radix", 40),
        ("fwd_lctrie", 40),
        ("classify", 40),
        ("esp_3des", 3),
        ("esp_aes", 3),
    ] {
        let m = model(name, flows, name == "classify");
        println!(
            "{name:<12} {:>10.1} {:>8.3} {:>10.1} {:>8.3} {:>9.4} {:>9.4}",
            m.alpha(),
            m.beta(),
            m.gamma(),
            m.delta(),
            m.insns.means.r2,
            m.accesses.means.r2
        );
        assert!(m.linear, "{name}: {:?}", m.notes);
        assert!(m.insns.means.r2 >= 0.99 && m.accesses.means.r2 >= 0.99);
        if name.starts_with("esp_") {
            // Encryption touches every byte: the per-byte terms dominate,
            // and single packets follow the line too (the first packet
            // also expands the key).
            assert!(m.beta() > 50.0 && m.delta() > 5.0, "{name}");
            assert!(m.insns.line.r2 >= 0.99, "{name}: {}", m.insns.line.r2);
        } else {
            // Header-only: nothing per byte.
            assert!(m.beta().abs() < 1e-6 && m.delta().abs() < 1e-6, "{name}");
            assert!(m.alpha() > 50.0, "{name}");
        }
    }
    // Without the warm-up the first size inserts the flows, the others
    // update them: not linear, and said so.
    let cold = model("classify", 40, false);
    assert!(!cold.linear);
    assert!(cold.notes[0].contains("not linear"), "{:?}", cold.notes);
}
