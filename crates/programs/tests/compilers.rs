//! Every example built by clang-14 and clang-19, with -mcpu=v2, v3 (and v4
//! on clang-19), -O1 and -O2, loads and does exactly what the canonical
//! build does on the same packets: verdicts, bytes and maps.

mod common;

use common::*;
use packet::Builder;
use runtime::*;

fn build(clang: &str, name: &str, cpu: &str, opt: &str) -> Vec<u8> {
    let path = programs::source_dir().join(format!("{name}.c"));
    let source = std::fs::read_to_string(path).unwrap();
    compile_with(clang, name, &source, &[opt, &format!("-mcpu={cpu}")])
}

fn packets() -> Vec<Vec<u8>> {
    let mut v = vec![
        Builder::udp("10.0.0.1", "10.0.0.2", 1, 53).build(),
        Builder::udp("10.66.1.1", "10.0.0.2", 1, 80)
            .tos(8 << 2)
            .build(),
        Builder::tcp("10.0.0.1", "10.0.0.100", 4000, 80).build(),
        Builder::tcp("10.0.0.1", "10.0.0.2", 4000, 23).build(),
        Builder::udp("2001:db8::1", "2001:db8::2", 1, 2).build(),
        Builder::udp("10.0.0.9", "10.10.1.1", 1, 2).ttl(5).build(),
        vec![0xff; 60],
        vec![0; 10],
    ];
    // A burst from one source, for the rate limiter.
    v.extend(std::iter::repeat_n(
        Builder::udp("10.9.9.9", "10.0.0.2", 1, 80).build(),
        120,
    ));
    v
}

/// Sets up maps so that each example does something interesting.
fn configure(h: &mut Hook, name: &str) {
    let lpm = |len: u32, a: [u8; 4]| [len.to_le_bytes().as_slice(), &a].concat();
    fwd_routes(h);
    match name {
        "xdp_ddos" => {
            map(h, "blocklist_v4")
                .user_update(&lpm(16, [10, 66, 0, 0]), &0u64.to_le_bytes(), 0)
                .unwrap();
            map(h, "protected_ports")
                .user_update(&53u16.to_le_bytes(), &[1], 0)
                .unwrap();
        }
        "xdp_router" => {
            h.env_mut().fib = runtime::fib::Fib::parse("link e index 3 address 02:00:00:00:00:03\nneigh 10.10.0.1 dev e lladdr 02:00:00:00:00:04\n10.10.0.0/16 via 10.10.0.1 dev e\n").unwrap();
            map(h, "tx_ports")
                .user_update(&3u32.to_le_bytes(), &3u32.to_le_bytes(), 0)
                .unwrap();
        }
        "xdp_lb" => {
            let vip = [[10u8, 0, 0, 100].as_slice(), &80u16.to_be_bytes(), &[6, 0]].concat();
            map(h, "vip_map").user_update(&vip, &[0u8; 8], 0).unwrap();
            map(h, "reals")
                .user_update(&0u32.to_le_bytes(), &[192, 168, 0, 1], 0)
                .unwrap();
            map(h, "lb_config")
                .user_update(
                    &0u32.to_le_bytes(),
                    &[2, 0, 0, 0, 0, 9, 0, 0, 10, 0, 0, 254],
                    0,
                )
                .unwrap();
        }
        "esp_3des" => esp::set_sa(h, 0x1234, b"twenty-four byte 3DES ky"),
        "esp_aes" => esp::set_sa(h, 0x1234, b"sixteen byte key"),
        _ => {}
    }
}

/// Verdict and output bytes of each packet.
type Runs = Vec<(Verdict, Vec<u8>)>;
/// Each map's sorted entries.
type MapContents = Vec<Vec<(Vec<u8>, Vec<u8>)>>;

/// What a build does over the packets: verdicts, output bytes, map contents.
fn behaviour(object: &[u8], name: &str) -> (Runs, MapContents) {
    let image = Image::load(obj::Object::parse(object).unwrap(), &LoadOptions::default()).unwrap();
    let p = image.find_program(None).unwrap();
    let mut h = Hook::new(image, p, 0).unwrap();
    configure(&mut h, name);
    let runs = packets()
        .iter()
        .enumerate()
        .map(|(i, pkt)| {
            let out = h.run(pkt, &meta(1_000_000_000 + i as u64 * 1000)).unwrap();
            (out.verdict, out.packet.to_vec())
        })
        .collect();
    // Map contents in a comparable form (data sections differ by layout only
    // across builds; their values are compared through the programs' effects).
    let maps = h
        .maps()
        .iter()
        .filter(|m| !m.name().starts_with('.'))
        .map(|m| {
            let mut e = m.entries();
            e.sort();
            e
        });
    (runs, maps.collect())
}

/// Every build of example `name` against its canonical build: how many.
fn check_every_build(name: &str) -> usize {
    let mut builds = 0;
    let reference = behaviour(programs::object(name).unwrap(), name);
    for clang in ["clang-14", "clang-19"] {
        for cpu in ["v2", "v3", "v4"] {
            if clang == "clang-14" && cpu == "v4" {
                continue;
            }
            for opt in ["-O1", "-O2"] {
                let got = behaviour(&build(clang, name, cpu, opt), name);
                assert_eq!(
                    got.0, reference.0,
                    "{name} with {clang} -mcpu={cpu} {opt}: verdicts or bytes differ"
                );
                assert_eq!(
                    got.1, reference.1,
                    "{name} with {clang} -mcpu={cpu} {opt}: maps differ"
                );
                builds += 1;
            }
        }
    }
    builds
}

#[test]
fn every_example_behaves_the_same_under_every_compiler_and_level() {
    let names: Vec<&str> = programs::names().collect();
    // Two workers (the machine has two cores), each every other example.
    let builds: usize = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|w| {
                let names = &names;
                s.spawn(move || {
                    (names.iter().skip(w).step_by(2))
                        .map(|name| check_every_build(name))
                        .sum::<usize>()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    println!("{builds} builds behave like the canonical ones");
    assert_eq!(builds, programs::names().count() * 10);
}

#[test]
fn every_example_behaves_the_same_with_core_relocations() {
    let target = obj::CoreTarget::default_target().origin();
    let mut relocations = 0;
    for name in programs::names() {
        let bytes = compile_with("clang-19", name, &core_variant(name), &["-O2", "-mcpu=v3"]);
        let object = obj::Object::parse(&bytes).unwrap();
        let p = &object.programs[0];
        // xdp_drop and xdp_pass never touch the context or a header.
        let touches_headers = !matches!(name, "xdp_drop" | "xdp_pass");
        assert_eq!(
            p.core_relocations > 0,
            touches_headers,
            "{name}: {} CO-RE relocations",
            p.core_relocations
        );
        assert_eq!(p.core_poisoned, [], "{name}: poisoned against {target}");
        relocations += p.core_relocations;
        let got = behaviour(&bytes, name);
        let reference = behaviour(programs::object(name).unwrap(), name);
        assert_eq!(
            got.0, reference.0,
            "{name} with CO-RE: verdicts or bytes differ"
        );
        assert_eq!(got.1, reference.1, "{name} with CO-RE: maps differ");
    }
    println!("{relocations} CO-RE relocations resolved against {target}");
}
