//! `sluice run --coverage FILE`: the lcov tracefile of a C program built
//! with `clang -g`, whose branches the packets take one way only, checked
//! line by line, summed over threads, the same under `--engine jit`, and
//! drawn by `genhtml`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use testkit::Scratch;

fn sluice() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
}

const SOURCE: &str = r#"typedef unsigned int __u32;
typedef unsigned long long __u64;
#define SEC(n) __attribute__((section(n), used))
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name
struct xdp_md { __u32 data, data_end, data_meta, ingress_ifindex, rx_queue_index, egress_ifindex; };
static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *) 1;
char _license[] SEC("license") = "GPL";
struct { __uint(type, 2); __uint(max_entries, 4); __type(key, __u32); __type(value, __u64); } seen SEC(".maps");

static __attribute__((noinline)) int count(__u32 k)
{
    __u64 *v = bpf_map_lookup_elem(&seen, &k);
    if (!v) /* NULL */
        return 0;
    *v += k; /* COUNT */
    return 1;
}

static __attribute__((noinline)) int too_short(struct xdp_md *ctx)
{
    return count(ctx->ingress_ifindex) ? 1 : 0; /* SHORT */
}

SEC("xdp") int cover(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *end = (void *)(long)ctx->data_end;
    if (data + 100 > end) /* SHORT? */
        return too_short(ctx); /* CALL */
    return count(2) + 1; /* LONG */
}
"#;

/// The line of `marker` in [`SOURCE`], from 1.
fn line_of(marker: &str) -> u32 {
    let i = SOURCE.lines().position(|l| l.contains(marker)).unwrap();
    i as u32 + 1
}

/// Builds [`SOURCE`] in `dir` with debug info; the source's path too.
fn build(dir: &Scratch) -> (PathBuf, PathBuf) {
    let (src, out) = (dir.join("cover.c"), dir.join("cover.o"));
    std::fs::write(&src, SOURCE).unwrap();
    let st = Command::new("clang-19")
        .args(["-target", "bpf", "-O2", "-g", "-c"])
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .status()
        .expect("clang-19 (the set-up installs it)");
    assert!(st.success(), "clang-19 cover.c");
    (src, out)
}

/// A capture of `long` frames of 128 bytes and `short` of 64.
fn capture(dir: &Scratch, long: usize, short: usize) -> PathBuf {
    let path = dir.join(format!("p{long}-{short}.pcap"));
    let frame = |size: usize| {
        let mut f = packet::Builder::udp("10.0.0.1", "10.0.0.2", 1000, 53).build();
        f.resize(size, 0);
        f
    };
    let mut w = pcap_file::pcap::PcapWriter::new(std::fs::File::create(&path).unwrap()).unwrap();
    let sizes = std::iter::repeat_n(128, long).chain(std::iter::repeat_n(64, short));
    for (i, size) in sizes.enumerate() {
        let data = frame(size);
        let at = std::time::Duration::from_micros(i as u64);
        let record = pcap_file::pcap::PcapPacket::new(at, data.len() as u32, &data);
        w.write_packet(&record).unwrap();
    }
    path
}

/// Runs `sluice run OBJ --pcap PCAP --coverage OUT ARGS --json`: the
/// report and the tracefile.
fn covered(obj: &Path, pcap: &Path, out: &Path, args: &[&str]) -> (serde_json::Value, String) {
    let o = sluice()
        .arg("run")
        .arg(obj)
        .arg("--pcap")
        .arg(pcap)
        .arg("--coverage")
        .arg(out)
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report = serde_json::from_slice(&o.stdout).unwrap();
    (report, std::fs::read_to_string(out).unwrap())
}

/// The tracefile's records of `file`, by kind: `DA` line -> count,
/// `BRDA` line -> its ways' counts, `FNDA` name -> calls.
struct Record {
    da: BTreeMap<u32, u64>,
    brda: BTreeMap<u32, Vec<String>>,
    fnda: BTreeMap<String, u64>,
    totals: BTreeMap<String, u64>,
}

fn record(text: &str, file: &Path) -> Record {
    let sf = format!("SF:{}", file.display());
    let body = text
        .split("end_of_record\n")
        .find(|r| r.lines().any(|l| l == sf))
        .unwrap_or_else(|| panic!("no record of {sf} in\n{text}"));
    let mut r = Record {
        da: BTreeMap::new(),
        brda: BTreeMap::new(),
        fnda: BTreeMap::new(),
        totals: BTreeMap::new(),
    };
    for l in body.lines() {
        let (kind, rest) = l.split_once(':').unwrap();
        let f: Vec<&str> = rest.split(',').collect();
        match kind {
            "DA" => {
                r.da.insert(f[0].parse().unwrap(), f[1].parse().unwrap());
            }
            "BRDA" => r
                .brda
                .entry(f[0].parse().unwrap())
                .or_default()
                .push(f[3].to_string()),
            "FNDA" => {
                r.fnda.insert(f[1].to_string(), f[0].parse().unwrap());
            }
            "LF" | "LH" | "BRF" | "BRH" | "FNF" | "FNH" => {
                r.totals.insert(kind.to_string(), rest.parse().unwrap());
            }
            _ => {}
        }
    }
    r
}

/// The two ways of the jumps of a line, sorted: e.g. `["0", "5"]`.
fn ways(r: &Record, line: u32) -> Vec<String> {
    let mut w = r.brda.get(&line).cloned().unwrap_or_default();
    w.sort();
    w
}

#[test]
fn lines_and_branches_of_one_way_packets() {
    let dir = Scratch::new("coverage-one-way");
    let (src, obj) = build(&dir);
    let pcap = capture(&dir, 5, 0);
    let (report, text) = covered(&obj, &pcap, &dir.join("a.info"), &["--threads", "1"]);
    assert_eq!(report["engine"], "interpreter");
    assert!(text.starts_with("TN:\nSF:"), "{text}");
    let r = record(&text, &src);
    // Every packet is long: the short side never runs.
    assert_eq!(r.da[&line_of("/* SHORT? */")], 5);
    assert_eq!(r.da[&line_of("/* LONG */")], 5);
    assert_eq!(r.da[&line_of("/* CALL */")], 0, "{text}");
    assert_eq!(r.da[&line_of("/* SHORT */")], 0, "{text}");
    // The length check's jump goes one way, five times.
    assert_eq!(ways(&r, line_of("/* SHORT? */")), ["0", "5"], "{text}");
    // The map lookup always finds the slot: the NULL check one way too.
    assert_eq!(ways(&r, line_of("/* NULL */")), ["0", "5"], "{text}");
    assert_eq!(r.da[&line_of("/* COUNT */")], 5);
    assert_eq!(r.fnda["cover"], 5);
    assert_eq!(r.fnda["count"], 5);
    assert_eq!(r.fnda["too_short"], 0);
    assert_eq!(r.totals["FNF"], 3);
    assert_eq!(r.totals["FNH"], 2);
    // The summary in the report is the tracefile's totals.
    let lines = &report["coverage"]["lines"];
    assert_eq!(lines["found"], r.totals["LF"]);
    assert_eq!(lines["hit"], r.totals["LH"]);
    assert!(r.totals["LH"] < r.totals["LF"]);
    let branches = &report["coverage"]["branches"];
    assert_eq!(branches["found"], r.totals["BRF"]);
    assert_eq!(branches["hit"], r.totals["BRH"]);
}

#[test]
fn both_ways_threads_and_the_jit_flag_count_alike() {
    let dir = Scratch::new("coverage-threads");
    let (src, obj) = build(&dir);
    let pcap = capture(&dir, 7, 3);
    let (_, one) = covered(&obj, &pcap, &dir.join("one.info"), &["--threads", "1"]);
    let r = record(&one, &src);
    assert_eq!(r.da[&line_of("/* SHORT */")], 3);
    assert_eq!(r.da[&line_of("/* CALL */")], 3);
    assert_eq!(r.da[&line_of("/* LONG */")], 7);
    assert_eq!(r.fnda["too_short"], 3);
    assert_eq!(ways(&r, line_of("/* SHORT? */")), ["3", "7"], "{one}");
    assert_eq!(r.fnda["count"], 10);
    // Workers' counts add up to one thread's.
    let (report, two) = covered(&obj, &pcap, &dir.join("two.info"), &["--threads", "2"]);
    assert_eq!(report["threads"], 2);
    assert_eq!(two, one);
    // A coverage run is interpreted whatever the engine asked for.
    let (report, jit) = covered(
        &obj,
        &pcap,
        &dir.join("jit.info"),
        &["--threads", "1", "--engine", "jit"],
    );
    assert_eq!(report["engine"], "interpreter");
    assert_eq!(jit, one);
}

#[test]
fn genhtml_draws_the_tracefile() {
    let dir = Scratch::new("coverage-genhtml");
    let (_, obj) = build(&dir);
    let pcap = capture(&dir, 2, 1);
    let info = dir.join("cover.info");
    covered(&obj, &pcap, &info, &[]);
    let html = dir.join("html");
    let os = std::ffi::OsStr::new;
    let o = testkit::tool::GENHTML.output([
        os("--branch-coverage"),
        os("--quiet"),
        info.as_os_str(),
        os("--output-directory"),
        html.as_os_str(),
    ]);
    assert!(
        o.status.success(),
        "genhtml (Debian package lcov; ./dev.sh setup installs it): {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(html.join("index.html").exists());
    // The source page, with the source and its counts.
    let page = find(&html, "cover.c.gcov.html").expect("genhtml's page of cover.c");
    let page = std::fs::read_to_string(page).unwrap();
    assert!(page.contains("too_short"), "{page}");
}

/// The file named `name` under `dir`, at any depth.
fn find(dir: &Path, name: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()? {
        let path = entry.ok()?.path();
        if path.file_name().is_some_and(|n| n == name) {
            return Some(path);
        }
        if path.is_dir()
            && let Some(found) = find(&path, name)
        {
            return Some(found);
        }
    }
    None
}

#[test]
fn a_tracefile_that_cannot_be_written_is_an_error() {
    let dir = Scratch::new("coverage-unwritable");
    let (_, obj) = build(&dir);
    let pcap = capture(&dir, 1, 0);
    let out = dir.join("no/such/dir/x.info");
    let o = sluice()
        .arg("run")
        .arg(&obj)
        .arg("--pcap")
        .arg(&pcap)
        .arg("--coverage")
        .arg(&out)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("{}: ", out.display())), "{err}");
}
