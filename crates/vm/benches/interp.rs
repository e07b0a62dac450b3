//! Interpreter speed: ns per instruction of sluice's interpreter (checked,
//! unchecked as for verified programs, and counting modes) beside the rbpf crate's interpreter, on the same bytecode
//! in the same run; rbpf's JIT is shown for reference. Prints a ratio table
//! from criterion's median estimates at the end.
//!
//! `cargo bench -p vm --bench interp`

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use std::hint::black_box;

use criterion::Criterion;
use vm::{HelperTable, Memory, Program, RegionKind, SimEnv, Vm};

struct Case {
    name: &'static str,
    source: &'static str,
}

const CASES: &[Case] = &[
    Case {
        name: "tight_loop",
        source: include_str!("programs/tight_loop.s"),
    },
    Case {
        name: "packet_parser",
        source: include_str!("programs/packet_parser.s"),
    },
];

/// A 64-byte Ethernet/IPv4/TCP frame.
fn frame() -> Vec<u8> {
    let mut f = vec![0u8; 64];
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[16..18].copy_from_slice(&50u16.to_be_bytes());
    f[22] = 64;
    f[23] = 6;
    f[26..30].copy_from_slice(&[10, 0, 0, 1]);
    f[30..34].copy_from_slice(&[10, 0, 0, 2]);
    f[34..36].copy_from_slice(&12345u16.to_be_bytes());
    f[36..38].copy_from_slice(&80u16.to_be_bytes());
    f
}

fn criterion_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir).join("criterion"),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/criterion"),
    }
}

/// Criterion's median estimate in ns for one benchmark, if it ran in this
/// process (estimates left on disk by earlier runs are ignored: ratios are
/// only meaningful between measurements taken together).
fn median_ns(group: &str, id: &str, since: SystemTime) -> Option<f64> {
    let path = criterion_dir()
        .join(group)
        .join(id)
        .join("new/estimates.json");
    if std::fs::metadata(&path).and_then(|m| m.modified()).ok()? < since {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["median"]["point_estimate"].as_f64()
}

const ENGINES: [&str; 8] = [
    "sluice",
    "sluice-counting",
    "rbpf",
    "rbpf-jit",
    "sluice-unchecked",
    "sluice-jit",
    "sluice-jit-fast",
    "sluice-jit-counting",
];

fn main() {
    let started = SystemTime::now();
    let mut c = Criterion::default()
        .output_directory(&criterion_dir())
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();

    let mut insns_per_run = Vec::new();
    for case in CASES {
        let insns = isa::assemble(case.source).expect("benchmark program assembles");
        let bytes = isa::encode(&insns);
        let mut packet = frame();
        let check_packet = frame();

        let mut machine = Vm::new(
            Program::new(insns.clone()).unwrap(),
            &HelperTable::<SimEnv>::new(),
        )
        .unwrap();
        let mut env = SimEnv::default();
        let mut mem = Memory::new();
        let addr = mem.add(RegionKind::Packet, &mut packet);
        let args = [addr, 64, 0, 0, 0];
        let reference = machine.run(&mut env, &mut mem, args).unwrap();
        insns_per_run.push(reference.stats.insns);

        let rbpf_vm = rbpf::EbpfVmMbuff::new(Some(&bytes)).unwrap();
        let rbpf_r0 = rbpf_vm.execute_program(&check_packet, &[]).unwrap();
        assert_eq!(
            rbpf_r0, reference.r0,
            "{}: rbpf and sluice disagree",
            case.name
        );
        let mut rbpf_jit = rbpf::EbpfVmMbuff::new(Some(&bytes)).unwrap();
        let jit_ok = rbpf_jit.jit_compile().is_ok();
        // rbpf's JIT takes r1 from the metadata buffer in this mode.
        let mut jit_packet = frame();
        let mut jit_mbuff = frame();

        let mut trusted = Vm::new(
            Program::new(insns.clone()).unwrap(),
            &HelperTable::<SimEnv>::new(),
        )
        .unwrap();
        // SAFETY: not verified here (the vm crate cannot use the verifier),
        // but the checked run above shows that on this fixed frame every
        // access stays inside the 64 bytes, and the inputs never change.
        unsafe { trusted.trust_verified() };

        let mut jit = Vm::new(
            Program::new(insns.clone()).unwrap(),
            &HelperTable::<SimEnv>::new(),
        )
        .unwrap();
        jit.enable_jit().unwrap();
        assert_eq!(jit.run(&mut env, &mut mem, args).unwrap(), reference);
        let mut jit_fast = Vm::new(
            Program::new(insns.clone()).unwrap(),
            &HelperTable::<SimEnv>::new(),
        )
        .unwrap();
        jit_fast.enable_jit().unwrap();
        // SAFETY: as for `trusted`.
        unsafe { jit_fast.trust_verified() };
        assert_eq!(jit_fast.run(&mut env, &mut mem, args).unwrap(), reference);

        let mut g = c.benchmark_group(case.name);
        g.bench_function(ENGINES[5], |b| {
            b.iter(|| jit.run(&mut env, &mut mem, black_box(args)).unwrap().r0)
        });
        g.bench_function(ENGINES[7], |b| {
            b.iter(|| {
                jit.run_counting(&mut env, &mut mem, black_box(args))
                    .unwrap()
                    .r0
            })
        });
        g.bench_function(ENGINES[6], |b| {
            b.iter(|| {
                jit_fast
                    .run(&mut env, &mut mem, black_box(args))
                    .unwrap()
                    .r0
            })
        });
        g.bench_function(ENGINES[0], |b| {
            b.iter(|| machine.run(&mut env, &mut mem, black_box(args)).unwrap().r0)
        });
        g.bench_function(ENGINES[4], |b| {
            b.iter(|| trusted.run(&mut env, &mut mem, black_box(args)).unwrap().r0)
        });
        g.bench_function(ENGINES[1], |b| {
            b.iter(|| {
                machine
                    .run_counting(&mut env, &mut mem, black_box(args))
                    .unwrap()
                    .r0
            })
        });
        g.bench_function(ENGINES[2], |b| {
            b.iter(|| {
                rbpf_vm
                    .execute_program(black_box(&check_packet), &[])
                    .unwrap()
            })
        });
        if jit_ok {
            g.bench_function(ENGINES[3], |b| {
                // SAFETY: the program was verified by rbpf and only reads the
                // 64-byte frame it is given.
                b.iter(|| unsafe {
                    rbpf_jit
                        .execute_program_jit(black_box(&mut jit_packet), black_box(&mut jit_mbuff))
                        .unwrap()
                })
            });
        }
        g.finish();
    }
    c.final_summary();

    println!("\nns per instruction (criterion medians; lower is better)");
    println!(
        "{:<15} {:>10} {:>9} {:>17} {:>16} {:>11} {:>16} {:>20} {:>9} {:>9} {:>22}",
        "program",
        "insns/run",
        "sluice",
        "sluice-unchecked",
        "sluice-counting",
        "sluice-jit",
        "sluice-jit-fast",
        "sluice-jit-counting",
        "rbpf",
        "rbpf-jit",
        "sluice vs rbpf interp"
    );
    for (case, insns) in CASES.iter().zip(&insns_per_run) {
        let per_insn: Vec<Option<f64>> = ENGINES
            .iter()
            .map(|e| median_ns(case.name, e, started).map(|ns| ns / *insns as f64))
            .collect();
        let fmt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
        let ratio = match (per_insn[0], per_insn[2]) {
            (Some(ours), Some(theirs)) => format!("{:.2}x faster", theirs / ours),
            _ => "-".to_string(),
        };
        println!(
            "{:<15} {:>10} {:>9} {:>17} {:>16} {:>11} {:>16} {:>20} {:>9} {:>9} {:>22}",
            case.name,
            insns,
            fmt(per_insn[0]),
            fmt(per_insn[4]),
            fmt(per_insn[1]),
            fmt(per_insn[5]),
            fmt(per_insn[6]),
            fmt(per_insn[7]),
            fmt(per_insn[2]),
            fmt(per_insn[3]),
            ratio
        );
    }
}
