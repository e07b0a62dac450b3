//! `sluice tc compile`: a configuration's hook as an object with a tc and
//! an XDP program, the C beside it, the manifest and the commands that
//! load it printed; what cannot be compiled refused by name.

mod common;

use std::process::Command;

use common::SLUICE;

fn sluice_tc(conf: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(SLUICE)
        .arg("tc")
        .arg("--config")
        .arg(conf)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_hook_compiles_into_an_object_and_refusals_are_named() {
    let dir = std::env::temp_dir().join(format!("sluice-tc-compile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("tc.conf");
    std::fs::write(
        &conf,
        "qdisc add dev v0 clsact\n\
         filter add dev v0 ingress prio 1 protocol ip flower ip_proto tcp dst_port 22 action drop\n\
         filter add dev v0 ingress prio 2 protocol all matchall action goto chain 1\n\
         filter add dev v0 ingress chain 1 prio 1 protocol ip u32 match ip dport 53 0xffff action pass\n",
    )
    .unwrap();
    let (obj, c) = (dir.join("v0.o"), dir.join("v0.c"));
    let out = sluice_tc(
        &conf,
        &[
            "compile",
            "-o",
            obj.to_str().unwrap(),
            "--emit-c",
            c.to_str().unwrap(),
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("compiled v0 ingress: 3 rule(s) in 2 chain(s), 3 action(s)"),
        "{text}"
    );
    assert!(
        text.contains("tc filter add dev v0 ingress bpf da obj"),
        "{text}"
    );
    assert!(text.contains("ip link set dev v0 xdp obj"), "{text}");
    let object = obj::Object::parse(&std::fs::read(&obj).unwrap()).unwrap();
    let names: Vec<&str> = object.programs.iter().map(|p| p.name.as_str()).collect();
    assert!(
        names.contains(&"tc_classify") && names.contains(&"xdp_classify"),
        "{names:?}"
    );
    let source = std::fs::read_to_string(&c).unwrap();
    assert!(source.contains("dst_port 22"), "{source}");

    // A police action: refused by name, nothing written.
    std::fs::write(
        &conf,
        "qdisc add dev v0 clsact\n\
         filter add dev v0 ingress prio 3 protocol ip matchall action police rate 1mbit burst 10k drop\n",
    )
    .unwrap();
    let other = dir.join("other.o");
    let out = sluice_tc(
        &conf,
        &["compile", "--dev", "v0", "-o", other.to_str().unwrap()],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(
            "filter chain 0 pref 3 (matchall): handle 0x1: action police index 1: not compiled"
        ),
        "{err}"
    );
    assert!(!other.exists());
    let _ = std::fs::remove_dir_all(&dir);
}
