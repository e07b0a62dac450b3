//! The embedded end-to-end example: assemble a packet classifier, run it
//! over a few frames, print verdicts and costs.

use std::process::ExitCode;

use serde::Serialize;
use vm::{HelperTable, Memory, Program, RegionKind, SimEnv, Vm, register_basic};

use crate::report::{CostReport, accesses_line, print_json};

const SOURCE: &str = include_str!("../demo/classify.s");

/// Run the embedded example: assemble a classifier, run it over sample frames.
#[derive(clap::Args)]
pub struct Args {
    /// Print JSON
    #[arg(long)]
    json: bool,
}

/// Ethernet + IPv4 + UDP (or another IP protocol) to `dport`.
fn ipv4_frame(proto: u8, dport: u16, payload: &[u8]) -> Vec<u8> {
    let l4_len = 8 + payload.len();
    let mut f = vec![0x02, 0, 0, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0x02, 0x08, 0x00];
    let total = (20 + l4_len) as u16;
    f.extend_from_slice(&[
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        1,
        0x40,
        0,
        64,
        proto,
        0,
        0,
    ]);
    f.extend_from_slice(&[192, 0, 2, 1, 198, 51, 100, 53]);
    f.extend_from_slice(&40000u16.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&(l4_len as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    f
}

fn frames() -> Vec<(&'static str, Vec<u8>)> {
    let dns_query =
        b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01";
    let mut arp = vec![0xff; 6];
    arp.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x01, 0x08, 0x06]);
    arp.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
    arp.resize(42, 0);
    let mut truncated = ipv4_frame(17, 53, &[]);
    truncated.truncate(38);
    vec![
        ("DNS query (UDP to port 53)", ipv4_frame(17, 53, dns_query)),
        (
            "NTP request (UDP to port 123)",
            ipv4_frame(17, 123, &[0x23; 48]),
        ),
        ("TCP segment to port 53", ipv4_frame(6, 53, &[0; 12])),
        ("ARP request", arp),
        ("IPv4 UDP cut inside the UDP header", truncated),
    ]
}

const VERDICTS: [&str; 3] = ["other", "DNS", "IPv4"];

#[derive(Serialize)]
struct JsonFrame {
    frame: &'static str,
    bytes: usize,
    r0: u64,
    verdict: &'static str,
    #[serde(flatten)]
    cost: CostReport,
}

pub fn run(a: Args) -> Result<ExitCode, String> {
    let insns = isa::assemble(SOURCE).map_err(|e| format!("embedded program: {e}"))?;
    let program = Program::new(insns.clone()).map_err(|e| e.to_string())?;
    let mut helpers = HelperTable::new();
    register_basic(&mut helpers);
    let mut machine = Vm::new(program, &helpers).map_err(|e| e.to_string())?;
    let mut env = SimEnv::default();

    let mut results = Vec::new();
    for (name, mut frame) in frames() {
        let len = frame.len();
        let mut mem = Memory::new();
        let addr = mem.add(RegionKind::Packet, &mut frame);
        let out = machine
            .run_counting(&mut env, &mut mem, [addr, len as u64, 0, 0, 0])
            .map_err(|e| format!("{name}: {e}"))?;
        results.push((name, len, out));
    }
    let verdict = |r0: u64| VERDICTS.get(r0 as usize).copied().unwrap_or("?");

    if a.json {
        let frames: Vec<JsonFrame> = results
            .iter()
            .map(|&(frame, bytes, out)| JsonFrame {
                frame,
                bytes,
                r0: out.r0,
                verdict: verdict(out.r0),
                cost: CostReport::new(&out.stats),
            })
            .collect();
        print_json(
            &serde_json::json!({ "program": "classify.s", "insns": insns.len(), "frames": frames }),
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    println!("sluice demo: a packet classifier, assembled and run in the sluice VM\n");
    println!("program ({} instructions, disassembled):", insns.len());
    print!(
        "{}",
        isa::listing(
            &insns,
            &isa::ListingOptions {
                labels: true,
                annotate: false
            }
        )
    );
    println!();
    println!(
        "{:<38} {:>5} {:>7} {:>6}  memory (loads, stores)",
        "frame", "bytes", "verdict", "insns"
    );
    for (name, bytes, out) in &results {
        let stats = &out.stats;
        println!(
            "{name:<38} {bytes:>5} {:>7} {:>6}  {}",
            verdict(out.r0),
            stats.insns,
            accesses_line(stats)
        );
    }
    Ok(ExitCode::SUCCESS)
}
