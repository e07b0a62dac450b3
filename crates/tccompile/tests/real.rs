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

/// Deletes the namespace however the test ends.
struct Netns(String);

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

impl Netns {
    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("ip")
            .args(["netns", "exec", &self.0])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Sends `frames` out of `dev` of namespace `ns` (a packet socket).
fn send(ns: &str, dev: u32, frames: &[Vec<u8>]) {
    let path = format!("/var/run/netns/{ns}");
    let frames = frames.to_vec();
    std::thread::spawn(move || {
        use std::os::fd::AsRawFd;
        let f = std::fs::File::open(&path).unwrap();
        // SAFETY: plain syscalls on descriptors this thread owns, with
        // buffers that outlive the calls.
        unsafe {
            assert_eq!(libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET), 0, "setns");
            let s = libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0);
            assert!(s >= 0, "socket");
            let mut addr: libc::sockaddr_ll = std::mem::zeroed();
            addr.sll_family = libc::AF_PACKET as u16;
            addr.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
            addr.sll_ifindex = dev as i32;
            let len = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            let sa = &addr as *const libc::sockaddr_ll as *const libc::sockaddr;
            assert_eq!(libc::bind(s, sa, len), 0, "bind");
            for (i, fr) in frames.iter().enumerate() {
                let n = libc::send(s, fr.as_ptr().cast(), fr.len(), 0);
                assert_eq!(n, fr.len() as isize, "send frame {i}");
                if i % 50 == 49 {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
            }
            libc::close(s);
        }
    })
    .join()
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
}

#[test]
fn the_tc_program_on_a_veth_counts_what_the_user_space_chain_counts() {
    if !kernel::available_for_test("tc compile on a veth") {
        return;
    }
    if Command::new("bpftool").arg("version").output().is_err() {
        eprintln!("\n**** SKIPPED: no bpftool (tc compile on a veth) ****\n");
        return;
    }
    let compiled = compiled();
    let obj = std::env::temp_dir().join(format!("tccompile-real-{}.o", std::process::id()));
    std::fs::write(&obj, &compiled.object).unwrap();
    let ns = Netns(format!("sluice-tcc-{}", std::process::id()));
    assert!(
        Command::new("ip")
            .args(["netns", "add", &ns.0])
            .status()
            .unwrap()
            .success()
    );
    ns.run(&[
        "sysctl",
        "-qw",
        "net.ipv6.conf.all.disable_ipv6=1",
        "net.ipv6.conf.default.disable_ipv6=1",
    ]);
    ns.run(&[
        "ip", "link", "add", "va", "type", "veth", "peer", "name", "vb",
    ]);
    for d in ["va", "vb"] {
        ns.run(&["ip", "link", "set", d, "mtu", "9000", "up"]);
    }
    ns.run(&["tc", "qdisc", "add", "dev", "va", "clsact"]);
    ns.run(&[
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
    let vb = json(&ns.run(&["ip", "-j", "link", "show", "vb"]))[0]["ifindex"]
        .as_u64()
        .unwrap() as u32;
    send(&ns.0, vb, &frames);
    let mut user = config();
    for f in &frames {
        user_space(&mut user, f);
    }
    // The maps, by the program's id.
    let net = json(&ns.run(&["bpftool", "-j", "net", "show", "dev", "va"]));
    let id = net[0]["tc"][0]["id"].as_u64().unwrap().to_string();
    let prog = json(&ns.run(&["bpftool", "-j", "prog", "show", "id", &id]));
    let mut dumps = std::collections::BTreeMap::new();
    for m in prog["map_ids"].as_array().unwrap() {
        let m = m.as_u64().unwrap().to_string();
        let info = json(&ns.run(&["bpftool", "-j", "map", "show", "id", &m]));
        let dump = json(&ns.run(&["bpftool", "-j", "map", "dump", "id", &m]));
        dumps.insert(info["name"].as_str().unwrap().to_string(), dump);
    }
    let counters = tccompile::Counters::read(&compiled.manifest, |name, slot| {
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
