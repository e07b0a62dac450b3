//! Third-party programs sluice is checked against, built from the sources
//! `./dev.sh setup` fetches into `target/thirdparty/src` (the Go module
//! proxy): Cilium's datapath with Cilium's own clang flags, in three of the
//! configurations its Makefile compile-tests.

use std::path::{Path, PathBuf};

pub fn source_root(module: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/thirdparty/src/github.com/cilium")
        .join(module);
    assert!(
        dir.is_dir(),
        "{} is missing: run ./dev.sh setup",
        dir.display()
    );
    dir
}

/// Cilium's CLANG_FLAGS (bpf/Makefile.bpf).
pub fn cilium_flags(root: &Path) -> Vec<String> {
    let mut f: Vec<String> = [
        "-O2",
        "-g",
        "--target=bpf",
        "-std=gnu99",
        "-nostdinc",
        "-ftrap-function=__undefined_trap",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-Wshadow",
        "-Wno-address-of-packed-member",
        "-Wno-unknown-warning-option",
        "-Wno-gnu-variable-sized-type-not-at-end",
        "-Wimplicit-int-conversion",
        "-Wenum-conversion",
        "-Wimplicit-fallthrough",
        "-mcpu=v3",
    ]
    .map(String::from)
    .to_vec();
    f.push(format!("-I{}", root.join("bpf").display()));
    f.push(format!("-I{}", root.join("bpf/include").display()));
    f
}

/// Configurations from Cilium's bpf/Makefile: the default, one of
/// LB_OPTIONS (tunnel + XDP-accelerated NodePort), and MAX_BASE_OPTIONS
/// (every feature at once, "to max out the BPF program complexity").
pub const CONFIGS: &[(&str, &str)] = &[
    ("default", ""),
    (
        "nodeport",
        "-DENABLE_IPV4 -DENABLE_IPV6 -DENCAP_IFINDEX -DTUNNEL_MODE -DENABLE_NODEPORT -DENABLE_NODEPORT_ACCELERATION",
    ),
    (
        "max",
        "-DSKIP_DEBUG=1 -DENABLE_IPV4=1 -DENABLE_IPV6=1 -DENABLE_ROUTING=1 -DPOLICY_VERDICT_NOTIFY=1 \
         -DMONITOR_AGGREGATION=3 -DCT_REPORT_FLAGS=0x0002 -DENABLE_HOST_FIREWALL=1 -DENABLE_SRV6=1 \
         -DENABLE_L7_LB=1 -DENABLE_MASQUERADE_IPV4=1 -DENABLE_IP_MASQ_AGENT_IPV4=1 \
         -DENABLE_MASQUERADE_IPV6=1 -DENABLE_IP_MASQ_AGENT_IPV6=1 -DENABLE_NODEPORT=1 \
         -DENABLE_NODEPORT_ACCELERATION=1 -DENABLE_DSR_ICMP_ERRORS=1 -DENABLE_DSR=1 \
         -DENABLE_DSR_BYUSER=1 -DENABLE_BANDWIDTH_MANAGER=1 -DENABLE_EGRESS_GATEWAY=1 \
         -DENABLE_VTEP=1 -DENABLE_CLUSTER_AWARE_ADDRESSING=1 -DENABLE_INTER_CLUSTER_SNAT=1 \
         -DENABLE_NAT_46X64=1 -DENABLE_NAT_46X64_GATEWAY=1 -DENCAP_IFINDEX=1 -DTUNNEL_MODE=1 \
         -DENABLE_MULTICAST=1 -DENABLE_WIREGUARD=1 -DENCRYPTION_STRICT_MODE_EGRESS=1 \
         -DENABLE_SCTP=1 -DENABLE_ACTIVE_CONNECTION_TRACKING=1",
    ),
];

pub const DATAPATH: &[&str] = &[
    "bpf_xdp",
    "bpf_host",
    "bpf_lxc",
    "bpf_overlay",
    "bpf_wireguard",
];

/// Builds one datapath file in one configuration. The objects are kept in
/// `target/thirdparty/cilium-objects`, by a hash of everything that makes
/// them (clang's version, the flags, the file and the bytes of every file
/// under Cilium's `bpf/`): the test binaries that build Cilium (the
/// programs crate's `cilium`, the verifier's `third_party`) compile each
/// object once between them, not once each (clang is most of their time).
pub fn build_cilium(root: &Path, file: &str, defines: &str) -> Vec<u8> {
    let cache = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/thirdparty/cilium-objects")
        .join(format!("{file}-{:016x}.o", cilium_key(root, file, defines)));
    if let Ok(bytes) = std::fs::read(&cache) {
        return bytes;
    }
    let out = std::env::temp_dir().join(format!(
        "sluice-cilium-{}-{file}-{}.o",
        std::process::id(),
        defines.len()
    ));
    let st = std::process::Command::new("clang-19")
        .args(cilium_flags(root))
        .args(defines.split_whitespace())
        .arg("-c")
        .arg(root.join("bpf").join(format!("{file}.c")))
        .arg("-o")
        .arg(&out)
        .output()
        .expect("clang-19 (the set-up installs it)");
    assert!(
        st.status.success(),
        "{file} [{defines}]: {}",
        String::from_utf8_lossy(&st.stderr)
    );
    let bytes = std::fs::read(&out).unwrap();
    std::fs::remove_file(&out).unwrap();
    // Written whole, then renamed: a reader never sees part of an object.
    let dir = cache.parent().unwrap();
    std::fs::create_dir_all(dir).unwrap();
    let tmp = dir.join(format!(
        ".{file}-{}-{:?}.tmp",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::write(&tmp, &bytes).unwrap();
    std::fs::rename(&tmp, &cache).unwrap();
    bytes
}

/// What a Cilium object is made of, hashed: `clang-19 --version`, the
/// flags and defines, the file, and every file under `root/bpf` (names and
/// bytes).
fn cilium_key(root: &Path, file: &str, defines: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    fn walk(dir: &Path, h: &mut impl Hasher) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, h);
            } else {
                p.hash(h);
                std::fs::read(&p).unwrap().hash(h);
            }
        }
    }
    let version = std::process::Command::new("clang-19")
        .arg("--version")
        .output()
        .expect("clang-19 (the set-up installs it)");
    let mut h = std::collections::hash_map::DefaultHasher::new();
    version.stdout.hash(&mut h);
    cilium_flags(root).hash(&mut h);
    defines.hash(&mut h);
    file.hash(&mut h);
    walk(&root.join("bpf"), &mut h);
    h.finish()
}

/// The xdp-tools objects `./dev.sh setup` fetches into target/thirdparty.
pub fn xdp_tools_objects() -> Vec<PathBuf> {
    let root =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/thirdparty/root/usr/lib");
    let mut found = Vec::new();
    if let Ok(arches) = std::fs::read_dir(&root) {
        for a in arches.flatten() {
            if let Ok(files) = std::fs::read_dir(a.path().join("bpf")) {
                found.extend(
                    files
                        .flatten()
                        .map(|f| f.path())
                        .filter(|p| p.extension().is_some_and(|e| e == "o")),
                );
            }
        }
    }
    found.sort();
    assert!(
        found.len() >= 10,
        "the xdp-tools objects are missing from {}: run ./dev.sh setup",
        root.display()
    );
    found
}
