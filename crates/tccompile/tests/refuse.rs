//! What is not compiled is refused by name, and what only tc can do
//! (a mirror) compiles without the XDP program and runs in the VM.

mod common;

use tc::{ClsactHook, Config, ShowOptions, Skb};
use tccompile::{CompileOptions, generate};

fn config(lines: &str) -> Config {
    let mut c = Config::default();
    c.run_batch(
        &format!("qdisc add dev v0 clsact\nqdisc add dev v1 clsact\n{lines}"),
        ShowOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    c
}

fn refused(lines: &str, opts: &CompileOptions) -> String {
    match generate(&config(lines), "v0", ClsactHook::Ingress, opts) {
        Ok(_) => panic!("{lines}: compiled"),
        Err(r) => r.to_string(),
    }
}

#[test]
fn what_cannot_be_compiled_is_refused_by_name() {
    let o = CompileOptions::default();
    let e = refused(
        "filter add dev v0 ingress prio 3 protocol ip matchall action police rate 1mbit burst 10k drop",
        &o,
    );
    assert!(
        e.contains(
            "filter chain 0 pref 3 (matchall): handle 0x1: action police index 1: not compiled"
        ),
        "{e}"
    );
    let e = refused(
        "filter add dev v0 ingress prio 1 protocol ip matchall action gact pass random determ drop 3",
        &o,
    );
    assert!(e.contains("random determination"), "{e}");
    let e = refused(
        "filter add dev v0 ingress prio 1 protocol ip u32 match ip protocol 6 0xff action trap",
        &o,
    );
    assert!(e.contains("trap"), "{e}");
    let e = refused(
        "filter add dev v0 ingress prio 1 protocol ip u32 match ip protocol 6 0xff indev v1 action drop",
        &o,
    );
    assert!(
        e.contains("filter chain 0 pref 1 (u32): handle 800::800: not compiled: indev"),
        "{e}"
    );
    let e = refused(
        "filter add dev v0 ingress prio 2 protocol all matchall action mirred egress mirror dev v1",
        &o,
    );
    assert!(
        e.contains("XDP cannot send a copy") && e.contains("--no-xdp"),
        "{e}"
    );
    // Every refusal is listed, one a line.
    let e = refused(
        "filter add dev v0 ingress prio 1 protocol ip u32 match ip protocol 6 0xff indev v1 action drop\n\
         filter add dev v0 ingress prio 2 protocol ip matchall action pedit ex munge ip ttl set 1",
        &o,
    );
    assert_eq!(e.lines().count(), 2, "{e}");
    assert!(
        e.contains("pref 2 (matchall)") && e.contains("pedit"),
        "{e}"
    );
}

#[test]
fn a_bpf_filter_is_refused_by_kind() {
    let mut c = config("");
    let obj = std::env::temp_dir().join(format!("tccompile-refuse-{}.o", std::process::id()));
    let src = "int f(void *c) { return 0; }\n";
    let Ok(bytes) = tccompile::compile_c(&format!(
        "{src}__attribute__((section(\"tc\"), used)) int g(void *c) {{ return f(c); }}\nchar _license[] __attribute__((section(\"license\"), used)) = \"GPL\";\n"
    )) else {
        eprintln!("**** SKIPPED: no clang ****");
        return;
    };
    std::fs::write(&obj, bytes).unwrap();
    c.run_batch(
        &format!(
            "filter add dev v0 ingress prio 3 protocol all bpf da obj {} sec tc",
            obj.display()
        ),
        ShowOptions::default(),
    )
    .unwrap();
    let _ = std::fs::remove_file(&obj);
    let e = generate(&c, "v0", ClsactHook::Ingress, &CompileOptions::default()).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("filter chain 0 pref 3 (bpf): not compiled: bpf filters are not compiled"),
        "{e}"
    );
}

#[test]
fn a_mirror_compiles_for_tc_alone_and_sends_a_copy_in_the_vm() {
    let mut c = config(
        "filter add dev v0 ingress prio 2 protocol all matchall action mirred egress mirror dev v1 action pass",
    );
    c.devices.set("v1", 4000);
    let opts = CompileOptions {
        xdp: false,
        ..CompileOptions::default()
    };
    let out = tccompile::compile(&c, "v0", ClsactHook::Ingress, &opts).unwrap();
    assert!(
        out.c.contains("bpf_clone_redirect(ctx, 4000, 0)"),
        "{}",
        out.c
    );
    assert!(!out.c.contains("xdp_classify"));
    let mut h = common::vm_hook(&out.object, "tc_classify", 1);
    let frame = [0u8; 60];
    let run = h
        .run(
            &frame,
            &runtime::PacketMeta {
                ifindex: 1,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(run.verdict, runtime::Verdict::Tc(runtime::TcAction::Ok));
    assert_eq!(run.clones.len(), 1);
    let user = c.classify("v0", ClsactHook::Ingress, &mut Skb::from_frame(&frame, 1));
    assert_eq!(user.emitted.len(), 1);
    let counters = tccompile::CompiledCounters::from_vm(&out.manifest, h.maps()).unwrap();
    assert_eq!(counters.rules[0].packets, 1);
    assert_eq!(counters.actions.len(), 2);
}

#[test]
fn the_c_names_each_rule_and_the_manifest_each_slot() {
    let c = common::config();
    let (text, m) = generate(&c, "v0", ClsactHook::Ingress, &CompileOptions::default()).unwrap();
    assert!(
        text.contains("/* handle 0x2: eth_type ipv4 ip_proto tcp dst_port 22 not_in_hw */"),
        "{text}"
    );
    assert!(text.contains("/* knode 800::800 */"));
    assert!(text.contains("int tc_chain_1(") && text.contains("int xdp_chain_2("));
    let d = m.describe();
    assert!(d.contains("chain 0 pref 1 matchall handle 0x1"), "{d}");
    assert_eq!(m.rules.len(), d.lines().count() - 2 - m.actions.len());
}
