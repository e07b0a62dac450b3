//! The `sluice` binary end to end: assembler and disassembler files, the
//! conformance plugin protocol, clang-built objects, and clear errors.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use testkit::Scratch;

fn sluice() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
}

/// A scratch directory `sluice-cli-NAME-PID`, removed when the test ends.
fn scratch(name: &str) -> Scratch {
    Scratch::new(&format!("cli-{name}"))
}

fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn plugin(stdin: &[u8], args: &[&str]) -> Output {
    let mut child = sluice()
        .arg("conformance-plugin")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}  ")).collect()
}

#[test]
fn asm_then_disasm_then_asm_gives_the_same_bytes() {
    let dir = scratch("roundtrip");
    let src = dir.join("p.s");
    std::fs::write(&src, "mov32 %r0, 0\nldxh %r2, [%r1+12]\njeq %r2, 0x800, done\nlock fetch add [%r10-8], %r2\nlddw %r3, 0x1122334455667788\ncall 5\ndone:\nexit\n").unwrap();
    run_ok(sluice().arg("asm").arg(&src));
    let bin = std::fs::read(dir.join("p.bin")).unwrap();
    assert_eq!(bin.len(), 8 * 8);
    for flags in [&[][..], &["--no-labels"], &["--annotate"]] {
        let text = run_ok(sluice().arg("disasm").arg(dir.join("p.bin")).args(flags));
        let again = dir.join("again.s");
        std::fs::write(&again, &text).unwrap();
        run_ok(
            sluice()
                .arg("asm")
                .arg(&again)
                .arg("-o")
                .arg(dir.join("again.bin")),
        );
        assert_eq!(
            std::fs::read(dir.join("again.bin")).unwrap(),
            bin,
            "{flags:?}:\n{text}"
        );
    }
    let json = run_ok(sluice().arg("disasm").arg("--json").arg(dir.join("p.bin")));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let insns = v["sections"][0]["insns"].as_array().unwrap();
    assert_eq!(insns.len(), 7);
    assert_eq!(insns[5]["helper"], "bpf_ktime_get_ns");
    assert_eq!(insns[4]["bytes"], "18030000887766550000000044332211");
}

#[test]
fn exec_reports_r0_and_costs() {
    let dir = scratch("exec");
    let src = dir.join("sum.s");
    std::fs::write(
        &src,
        "ldxb %r0, [%r1]\nldxb %r2, [%r1+1]\nadd %r0, %r2\nstxdw [%r10-8], %r0\nexit\n",
    )
    .unwrap();
    let text = run_ok(sluice().arg("exec").arg(&src).args(["--mem", "05 07"]));
    assert!(text.contains("r0 = 0xc (12)"), "{text}");
    assert!(text.contains("instructions: 5"), "{text}");
    let json = run_ok(
        sluice()
            .arg("exec")
            .arg(&src)
            .args(["--mem", "0507", "--json"]),
    );
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["r0"], 12);
    assert_eq!(v["insns"], 5);
    assert_eq!(v["memory"]["context"]["loads"], 2);
    assert_eq!(v["memory"]["stack"]["stores"], 1);

    // A runtime fault is a clean error naming the instruction.
    let out = sluice()
        .arg("exec")
        .arg(&src)
        .args(["--mem", "05"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("instruction 1 (ldxb %r2, [%r1+1])") && err.contains("context"),
        "{err}"
    );
}

#[test]
fn bad_files_give_errors_not_panics() {
    let dir = scratch("bad");
    let cases: &[(&str, &[u8], &str)] = &[
        (
            "t.bin",
            &[0x95, 0, 0, 0, 0, 0, 0, 0, 0xb7],
            "not a multiple of 8",
        ),
        ("u.bin", &[0xff, 0, 0, 0, 0, 0, 0, 0], "unknown opcode 0xff"),
        (
            "l.bin",
            &[0x18, 0, 0, 0, 1, 0, 0, 0],
            "missing its second half",
        ),
        ("x.s", b"mov %r0, 1\nfoo %r1\n", "line 2"),
        ("e.o", b"\x7fELF\x02\x01\x01garbage", "malformed ELF"),
    ];
    for (name, data, needle) in cases {
        let path = dir.join(name);
        std::fs::write(&path, data).unwrap();
        for cmd in ["disasm", "exec"] {
            let out = sluice().arg(cmd).arg(&path).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{cmd} {name}: {err}");
            assert!(
                err.contains(needle),
                "{cmd} {name}: `{err}` lacks `{needle}`"
            );
            assert!(!err.contains("panicked"), "{err}");
        }
    }
    let out = sluice()
        .arg("exec")
        .arg(dir.join("missing.s"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("No such file"));
}

#[test]
fn conformance_plugin_speaks_the_protocol() {
    // add.data from the suite, as the runner would send it.
    let prog = isa::encode(
        &isa::assemble("mov32 %r0, 0\nmov32 %r1, 2\nadd32 %r0, 1\nadd32 %r0, %r1\nexit").unwrap(),
    );
    let out = plugin(hex(&prog).as_bytes(), &["", ""]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "3");

    // Memory in the first argument, r2 = its length; contiguous hex on stdin works too.
    let prog = isa::encode(&isa::assemble("ldxw %r0, [%r1+4]\nadd %r0, %r2\nexit").unwrap());
    let contiguous: String = prog.iter().map(|b| format!("{b:02x}")).collect();
    let out = plugin(
        contiguous.as_bytes(),
        &["00 00 00 00 10 00 00 00", "--counting"],
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "18");

    // Errors go to stderr with a non-zero status.
    let out = plugin(b"zz", &[""]);
    assert!(!out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).is_empty());
    let prog = isa::encode(&isa::assemble("ldxw %r0, [%r1+4]\nexit").unwrap());
    let out = plugin(hex(&prog).as_bytes(), &["00"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("read of 4 bytes"));
}

#[test]
fn conformance_plugin_passes_the_suite_through_the_binary() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/conformance/bpf_conformance/tests");
    let mut passed = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "data") {
            continue;
        }
        let case = conformance::TestCase::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let prog = isa::encode(&isa::assemble(&case.asm).unwrap());
        let out = plugin(hex(&prog).as_bytes(), &[&hex(&case.mem), ""]);
        let text = String::from_utf8_lossy(&out.stdout);
        let r0 = u64::from_str_radix(text.trim(), 16).unwrap_or_else(|_| {
            panic!(
                "{}: {text} {}",
                path.display(),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        assert_eq!(Some(r0), case.result, "{}", path.display());
        passed += 1;
    }
    println!("plugin binary: {passed} passed, 0 failed");
    assert_eq!(passed, 313);
}

/// clang builds objects for every ISA level; we decode all of them and our
/// disassembly re-assembles to the very bytes of each section.
#[test]
fn clang_objects_decode_and_roundtrip_at_every_cpu_level() {
    let clang = ["clang-19", "clang"].into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let Some(clang) = clang else {
        panic!("clang is required (the README's set-up installs clang-19)");
    };
    let dir = scratch("clang");
    let src = dir.join("prog.c");
    std::fs::write(
        &src,
        r#"
typedef unsigned long long u64; typedef unsigned int u32; typedef unsigned short u16; typedef unsigned char u8;
typedef signed char s8; typedef short s16; typedef int s32; typedef long long s64;
struct md { u32 data, data_end; };
static __attribute__((noinline)) u64 mix(u64 a, u64 b) { return (a * 0x9e3779b97f4a7c15ULL) ^ (b >> 7) ^ (a % (b | 1)); }
__attribute__((section("xdp"), used)) int prog(struct md *ctx) {
    u8 *p = (u8 *)(unsigned long)ctx->data, *end = (u8 *)(unsigned long)ctx->data_end;
    if (p + 40 > end) return 1;
    u64 acc = 0; volatile u64 counter = 0;
    for (int i = 0; i < 8; i++) acc += (u64)(s8)p[i] + (u64)(s16)(p[8 + i] << 8) + (u64)(s32)p[i * 4];
    __sync_fetch_and_add(&counter, acc);
    acc = __builtin_bswap64(acc) + __builtin_bswap32((u32)acc) + __builtin_bswap16((u16)acc);
    s64 s = (s64)acc;
#if __BPF_CPU_VERSION__ >= 4
    s = s / -3 + s % 7;
#else
    s = (s64)((u64)s / 3 + (u64)s % 7);
#endif
    u32 w = (u32)s; w = w / 5 + (w >> 3) + (w << 2);
    return (int)(mix(acc, s) ^ w ^ counter) & 3;
}
char _license[] __attribute__((section("license"), used)) = "GPL";
"#,
    )
    .unwrap();
    for cpu in ["v1", "v2", "v3", "v4"] {
        for opt in ["-O1", "-O2"] {
            let obj = dir.join(format!("prog-{cpu}{opt}.o"));
            let st = Command::new(clang)
                .args(["-target", "bpf", opt, "-g", &format!("-mcpu={cpu}"), "-c"])
                .arg(&src)
                .arg("-o")
                .arg(&obj)
                .status()
                .unwrap();
            assert!(st.success(), "clang {cpu} {opt}");
            let text = run_ok(sluice().arg("disasm").arg(&obj).arg("--annotate"));
            assert!(text.contains("# section xdp"), "{text}");
            // Every section re-assembles to its own bytes.
            let object = obj::ElfObject::parse(&std::fs::read(&obj).unwrap()).unwrap();
            for section in object.programs() {
                let insns = isa::decode(&section.bytes)
                    .unwrap_or_else(|e| panic!("{cpu} {opt} {}: {e}", section.name));
                let listing = isa::listing(
                    &insns,
                    &isa::ListingOptions {
                        labels: true,
                        annotate: true,
                    },
                );
                let back = isa::encode(&isa::assemble(&listing).unwrap());
                assert_eq!(back, section.bytes, "{cpu} {opt} {}", section.name);
            }
            if cpu == "v4" {
                assert!(
                    text.contains("movsx") || text.contains("ldxs"),
                    "v4 code should use sign-extending moves or loads:\n{text}"
                );
            }
        }
    }
}

#[test]
fn demo_runs_the_ddos_filter() {
    let text = run_ok(sluice().arg("demo"));
    assert!(text.contains("xdp_ddos_prog (xdp)"), "{text}");
    let json = run_ok(sluice().args(["demo", "--json"]));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["packets"], 100_000);
    assert_eq!(
        v["verdicts"]["DROP"].as_u64().unwrap() + v["verdicts"]["PASS"].as_u64().unwrap(),
        100_000
    );
    let stats = v["maps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "drop_stats")
        .unwrap();
    let count = |k: usize| {
        stats["entries"][k]["value"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
    };
    assert_eq!(
        (count(1), count(2)),
        (20_000, 5_000),
        "blocked prefix and protected port"
    );
    assert!(count(0) >= 60_000, "every client passes");
    assert!(count(3) > 14_000, "the heavy hitter is rate limited");
}

fn bpf(name: &str) -> PathBuf {
    PathBuf::from(testkit::object_path(name))
}

#[test]
fn run_replays_a_capture_and_writes_outputs() {
    let dir = scratch("run");
    // A capture of four frames: three UDP, one TCP.
    let input = dir.join("in.pcap");
    let mut sink = capture::PcapSink::create(&input).unwrap();
    for (i, sport) in [1000u16, 1001, 1002].iter().enumerate() {
        sink.write(
            &packet::Builder::udp("10.0.0.1", "10.0.0.2", *sport, 53).build(),
            1_000_000 * i as u64,
        )
        .unwrap();
    }
    sink.write(
        &packet::Builder::tcp("10.0.0.1", "10.0.0.2", 5, 80).build(),
        5_000_000,
    )
    .unwrap();
    sink.finish().unwrap();

    let out_tx = dir.join("tx.pcapng");
    let json = run_ok(
        sluice()
            .arg("run")
            .arg(bpf("xdp_parse_tx"))
            .arg("--pcap")
            .arg(&input)
            .arg("--out-tx")
            .arg(&out_tx)
            .arg("--json"),
    );
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["packets"], 4);
    assert_eq!(v["verdicts"]["TX"], 4);
    assert!(v["insns_per_packet"]["mean"].as_f64().unwrap() > 0.0);
    assert!(
        v["insns_per_packet"]["p99"].as_u64().unwrap()
            >= v["insns_per_packet"]["p50"].as_u64().unwrap()
    );
    let out = testkit::tool::output(
        std::process::Command::new("tcpdump")
            .args(["-nn", "-e", "-r"])
            .arg(&out_tx),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 4, "{text}");
    assert!(
        text.lines()
            .all(|l| l.contains("02:00:00:00:00:02 > 02:00:00:00:00:01")),
        "MACs swapped: {text}"
    );

    // The protocol counter's map, dumped with BTF.
    let text = run_ok(
        sluice()
            .arg("run")
            .arg(bpf("xdp_count"))
            .arg("--pcap")
            .arg(&input),
    );
    assert!(text.contains("17 => {packets: 3"), "{text}");
    assert!(text.contains("6 => {packets: 1"), "{text}");
}

#[test]
fn run_takes_settings_and_reports_problems() {
    let obj = bpf("xdp_ddos");
    // Globals and map updates change behaviour.
    let json = run_ok(sluice().arg("run").arg(&obj).args([
        "--gen",
        "udp,count=10,src=10.5.0.1/32",
        "--map-update",
        "blocklist_v4",
        "10.5.0.0/16",
        "0",
        "--json",
    ]));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["verdicts"]["DROP"], 10);
    let json = run_ok(sluice().arg("run").arg(&obj).args([
        "--gen",
        "udp,count=10,rate=1000000",
        "--set",
        "burst=2",
        "--json",
    ]));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["verdicts"]["PASS"], 2);
    for (args, needle) in [
        (vec!["--gen", "udp,bogus"], "unknown field"),
        (
            vec!["--gen", "udp", "--set", "nope=1"],
            "no such global variable",
        ),
        (vec!["--gen", "udp", "--set", "burst=1x"], "not an integer"),
        (
            vec!["--gen", "udp", "--map-update", "nope", "1", "2"],
            "no such map",
        ),
        (
            vec![
                "--gen",
                "udp",
                "--map-update",
                "blocklist_v4",
                "10.0.0.0",
                "0",
            ],
            "ADDR/LEN",
        ),
        (
            vec![
                "--gen",
                "udp",
                "--map-update",
                "protected_ports",
                "70000",
                "1",
            ],
            "does not fit",
        ),
        (vec!["--gen", "udp", "--prog", "nope"], "no program `nope`"),
        (vec!["--pcap", "/nonexistent.pcap"], "No such file"),
        (
            vec![
                "--gen",
                "udp",
                "--btf",
                concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"),
            ],
            "neither raw BTF nor an ELF object",
        ),
    ] {
        let out = sluice().arg("run").arg(&obj).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: `{err}` lacks `{needle}`");
    }
}

/// Builds C source into a BPF object in `dir`.
fn build_c(dir: &Scratch, name: &str, source: &str) -> PathBuf {
    let (src, out) = (dir.join(format!("{name}.c")), dir.join(format!("{name}.o")));
    std::fs::write(&src, source).unwrap();
    let st = Command::new("clang-19")
        .args(["-target", "bpf", "-O2", "-g", "-c"])
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .status()
        .expect("clang-19 (the set-up installs it)");
    assert!(st.success(), "clang-19 {name}");
    out
}

#[test]
fn run_resolves_core_relocations_against_a_chosen_btf() {
    let dir = scratch("core");
    // Drops a packet when the u16 field `port` of its view of the header
    // is 0x3500 (a UDP packet to port 53, read as little-endian).
    let prog = build_c(
        &dir,
        "prog",
        r#"
        struct xdp_md { unsigned data, data_end; };
        struct sluice_view { unsigned short pad[18]; unsigned short port; } __attribute__((preserve_access_index));
        __attribute__((section("xdp"), used)) int view(struct xdp_md *ctx)
        {
            struct sluice_view *v = (void *)(long)ctx->data;
            if ((void *)(long)ctx->data + 64 > (void *)(long)ctx->data_end)
                return 2;
            return v->port == 0x3500 ? 1 : 2;
        }
        char _license[] __attribute__((section("license"), used)) = "GPL";
        "#,
    );
    // Another layout of the same type: `port` is the UDP source port (34).
    let layout = build_c(
        &dir,
        "layout",
        "struct sluice_view { char eth_ip[34]; unsigned short port; } t;\n\
         __attribute__((section(\"xdp\"), used)) int f(void *c) { return 0; }\n",
    );
    // And one without the member at all.
    let missing = build_c(
        &dir,
        "missing",
        "struct sluice_view { char other; } t;\n\
         __attribute__((section(\"xdp\"), used)) int f(void *c) { return 0; }\n",
    );
    // (A run where packets stop with errors exits with 1, still reporting.)
    let run = |btf: &Path| -> serde_json::Value {
        let out = sluice()
            .arg("run")
            .arg(&prog)
            .args([
                "--gen",
                "udp,count=4,sport=1000,dport=53",
                "--json",
                // The run itself must meet the poisoned instruction, which
                // the verifier (like the kernel) would refuse up front.
                "--no-verify",
                "--btf",
            ])
            .arg(btf)
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let errors = v["errors"].as_u64().unwrap();
        assert_eq!(out.status.code(), Some(i32::from(errors > 0)), "{v}");
        v
    };
    // The object's own layout: `port` at 36, the destination port.
    let own = run(&prog);
    assert_eq!(own["verdicts"]["DROP"], 4, "{own}");
    assert_eq!(own["core"]["relocations"], 1, "{own}");
    // The other layout reads the source port: nothing is dropped.
    let moved = run(&layout);
    assert_eq!(moved["core"]["target"], layout.to_str().unwrap());
    assert_eq!(moved["verdicts"]["PASS"], 4, "{moved}");
    // Without the member the read is poisoned: every packet is an error.
    let poisoned = run(&missing);
    assert_eq!(
        poisoned["core"]["poisoned"].as_array().unwrap().len(),
        1,
        "{poisoned}"
    );
    assert_eq!(poisoned["errors"], 4, "{poisoned}");
    // The bundled UAPI types know nothing of `sluice_view` either.
    let bundled = run(Path::new("bundled"));
    assert_eq!(bundled["core"]["target"], "sluice's bundled UAPI types");
    assert_eq!(bundled["errors"], 4, "{bundled}");
}

#[test]
fn run_verifies_first_and_drops_the_checks_of_verified_programs() {
    let dir = scratch("verified");
    let run = |obj: &Path, extra: &[&str]| -> Output {
        sluice()
            .arg("run")
            .arg(obj)
            .args(["--gen", "udp,count=8", "--json"])
            .args(extra)
            .output()
            .unwrap()
    };
    // An accepted program runs without per-access checks.
    let out = run(&bpf("xdp_parse_tx"), &[]);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["checks"], "verified", "{v}");
    assert_eq!(v["verdicts"]["TX"], 8, "{v}");
    #[cfg(target_arch = "x86_64")]
    assert_eq!(v["engine"], "jit", "the JIT is the default: {v}");
    let out = run(&bpf("xdp_parse_tx"), &["--engine", "interp"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["engine"], "interpreter", "{v}");
    assert_eq!(v["verdicts"]["TX"], 8, "{v}");
    let out = run(&bpf("xdp_parse_tx"), &["--no-verify"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["checks"], "run-time", "{v}");
    assert_eq!(v["verdicts"]["TX"], 8, "{v}");

    // A read 100 bytes into the packet without a bounds check: refused
    // before the replay, and `sluice verify` says why.
    let bad = build_c(
        &dir,
        "unchecked",
        r#"
        struct xdp_md { unsigned data, data_end; };
        __attribute__((section("xdp"), used)) int peek(struct xdp_md *ctx)
        {
            unsigned char *p = (void *)(long)ctx->data;
            return p[100] == 7 ? 1 : 2;
        }
        char _license[] __attribute__((section("license"), used)) = "GPL";
        "#,
    );
    let out = run(&bad, &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("the verifier rejects peek"), "{err}");
    assert!(out.stdout.is_empty(), "no replay after a rejection");
    let out = sluice()
        .args(["verify", "--json", "--no-kernel"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["programs"][0]["verdict"], "reject", "{v}");
    assert!(v["programs"][0]["line"].as_str().is_some(), "{v}");

    // --no-verify replays it with the checks: the short generated
    // packets make every run stop with a clean memory error.
    let out = run(&bad, &["--no-verify"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["checks"], "run-time", "{v}");
    assert_eq!(v["errors"], 8, "{v}");
    assert!(v["first_errors"][0].to_string().contains("packet"), "{v}");
}

#[test]
fn run_stopped_by_sigint_reports_and_leaves_complete_outputs() {
    let dir = scratch("sigint");
    let out = dir.join("pass.pcap");
    let child = sluice()
        .arg("run")
        .arg(bpf("xdp_pass"))
        .args(["--gen", "udp,count=500000000", "--json", "--threads", "2"])
        .arg("--out-pass")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    // SAFETY: signalling our own child by its PID.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let done = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "{err}");
    assert!(err.contains("stopped by a signal"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&done.stdout).unwrap();
    assert_eq!(v["stopped"], true, "{v}");
    let packets = v["packets"].as_u64().unwrap();
    assert!(packets > 0 && packets < 500_000_000, "{v}");
    // Every passed packet is in the output, which ends on a whole record.
    let mut read = 0u64;
    for f in capture::PcapSource::open(&out).unwrap() {
        f.unwrap();
        read += 1;
    }
    assert_eq!(read, packets);
}

/// `sluice verify` asks the kernel with the maps' BTF, as libbpf loads
/// them: a `bpf_spin_lock` in a map value, which the kernel finds only
/// through the value's type, is accepted by both.
#[test]
fn verify_gives_the_kernel_the_maps_btf() {
    if !testkit::kernel_available("the kernel's verdict on a spin lock program") {
        return;
    }
    let dir = scratch("spinlock");
    let path = dir.join("spin.o");
    let source = r#"
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct counter {
	__u64 packets;
	struct bpf_spin_lock lock;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, struct counter);
} counters SEC(".maps");

SEC("xdp")
int count(struct xdp_md *ctx)
{
	__u32 key = ctx->ingress_ifindex;
	struct counter *c = bpf_map_lookup_elem(&counters, &key);
	if (!c)
		return XDP_PASS;
	bpf_spin_lock(&c->lock);
	c->packets++;
	bpf_spin_unlock(&c->lock);
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
"#;
    std::fs::write(&path, programs::compile::compile("spin", source)).unwrap();
    let out = sluice()
        .args(["verify", "--json"])
        .arg(&path)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{v}");
    let p = &v["programs"][0];
    assert_eq!(p["verdict"], "accept", "{v}");
    assert_eq!(p["kernel"]["verdict"], "accept", "{v}");
    let text = run_ok(sluice().arg("verify").arg(&path));
    assert!(
        text.contains("(agrees)") && !text.contains("DISAGREES"),
        "{text}"
    );
}

/// A command run without its input names every form the input may take.
#[test]
fn usage_without_input_names_every_input_form() {
    for (cmd, forms) in [
        ("run", &["--pcap", "--gen", "--iface"][..]),
        ("diff", &["--pcap", "--gen"][..]),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args([cmd, "target/bpf/xdp_pass.o"])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        let usage = err
            .lines()
            .find(|l| l.starts_with("Usage:"))
            .unwrap_or_default();
        for f in forms {
            assert!(usage.contains(f), "sluice {cmd}: {usage}");
        }
    }
}

/// `-r FILE` is `--pcap FILE` wherever a capture is replayed, as
/// tcpdump's `-r` (run, monitor, profile, diff's parser).
#[test]
fn dash_r_reads_a_capture_as_pcap_does() {
    let pcap = testkit::capture("dns-badcookie.pcap");
    let pcap = pcap.to_str().unwrap();
    let count = bpf("xdp_count");
    let count = count.to_str().unwrap();
    for args in [
        vec!["run", count, "--json", "--threads", "1"],
        vec!["monitor", "flows", "--json"],
        vec!["profile", count, "--json"],
    ] {
        let with = |flag: &str| {
            let mut c = sluice();
            c.args(&args).args([flag, pcap]);
            let out = run_ok(&mut c);
            // One JSON document or a stream of them; timings differ
            // between two runs, what was counted does not.
            serde_json::Deserializer::from_str(&out)
                .into_iter::<serde_json::Value>()
                .map(|v| {
                    let mut v = v.unwrap();
                    if let Some(o) = v.as_object_mut() {
                        o.retain(|k, _| !k.contains("seconds") && !k.ends_with("per_second"));
                    }
                    v
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(with("-r"), with("--pcap"), "{args:?}");
    }
    let help = run_ok(sluice().args(["diff", "--help"]));
    assert!(help.contains("-r, --pcap"), "{help}");
}
