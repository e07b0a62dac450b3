//! `--out-table FILE` on `sluice run`, `sluice monitor flows|rtt|sample`
//! and `sluice profile`: the file (Parquet, Arrow IPC, CSV by its name)
//! read back with the parquet and arrow readers, its rows checked against
//! the same command's `--json` (counts, verdicts, each record's values);
//! a name that says no format refused before the run, naming the choices.

mod common;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

use arrow_array::cast::AsArray;
use arrow_array::types::{UInt8Type, UInt16Type, UInt32Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use common::SLUICE;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-out-table-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The Parquet or Arrow IPC file at `path`, as one batch.
fn read(path: &Path) -> RecordBatch {
    let f = File::open(path).unwrap();
    let mut batches: Vec<RecordBatch> = if path.extension().unwrap() == "parquet" {
        ParquetRecordBatchReaderBuilder::try_new(f)
            .unwrap()
            .with_batch_size(1 << 20)
            .build()
            .unwrap()
            .map(Result::unwrap)
            .collect()
    } else {
        arrow_ipc::reader::FileReader::try_new(f, None)
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!(batches.len(), 1);
    batches.remove(0)
}

fn json_lines(out: &str) -> Vec<Value> {
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn u64s(b: &RecordBatch, name: &str) -> Vec<u64> {
    b.column_by_name(name)
        .unwrap()
        .as_primitive::<UInt64Type>()
        .values()
        .to_vec()
}

fn strings(b: &RecordBatch, name: &str) -> Vec<Option<String>> {
    b.column_by_name(name)
        .unwrap()
        .as_string::<i32>()
        .iter()
        .map(|s| s.map(str::to_string))
        .collect()
}

/// Per value of a dictionary column, its rows.
fn dictionary_counts(b: &RecordBatch, name: &str) -> BTreeMap<String, u64> {
    let col = b.column_by_name(name).unwrap().as_dictionary::<UInt8Type>();
    let names = col.values().as_string::<i32>();
    let mut out = BTreeMap::new();
    for k in col.keys().values() {
        *out.entry(names.value(*k as usize).to_string()).or_default() += 1;
    }
    out
}

#[test]
fn run_writes_a_row_per_packet_with_the_reports_verdicts() {
    let d = dir("run");
    let obj = common::object_path("xdp_count");
    for name in ["packets.parquet", "packets.arrow"] {
        let path = d.join(name);
        let out = common::sluice(&[
            "run",
            &obj,
            "--gen",
            "udp,count=30",
            "--gen",
            "tcp,count=20",
            "--json",
            "--out-table",
            path.to_str().unwrap(),
        ]);
        let report: Value = serde_json::from_str(&out).unwrap();
        let b = read(&path);
        assert_eq!(b.num_rows() as u64, report["packets"].as_u64().unwrap());
        assert_eq!(u64s(&b, "index"), (1..=50).collect::<Vec<u64>>());
        let verdicts: BTreeMap<String, u64> =
            serde_json::from_value(report["verdicts"].clone()).unwrap();
        assert_eq!(dictionary_counts(&b, "verdict"), verdicts, "{name}");
        assert!(u64s(&b, "instructions").iter().all(|&n| n > 0));
    }
    // CSV: a header, then a line per packet.
    let csv = d.join("packets.csv");
    common::sluice(&[
        "run",
        &obj,
        "--gen",
        "udp,count=7",
        "--out-table",
        csv.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "index,timestamp,length,verdict,redirect,instructions,helper_calls,error"
    );
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 7);
    assert!(
        rows.iter().all(|r| r.split(',').nth(3) == Some("PASS")),
        "{text}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn flows_write_a_row_per_json_flow_line_with_ipfix_names() {
    let d = dir("flows");
    let path = d.join("flows.parquet");
    let out = common::sluice(&[
        "monitor",
        "flows",
        "--gen",
        "udp,flows=12,count=240",
        "--idle",
        "1",
        "--json",
        "--out-table",
        path.to_str().unwrap(),
    ]);
    let lines = json_lines(&out);
    let (summary, flows) = lines.split_last().unwrap();
    let b = read(&path);
    assert_eq!(b.num_rows(), flows.len());
    assert_eq!(
        b.num_rows() as u64,
        summary["summary"]["flows"].as_u64().unwrap()
    );
    let packets = u64s(&b, "packetDeltaCount");
    let octets = u64s(&b, "octetDeltaCount");
    let src = strings(&b, "sourceIPv4Address");
    let sport = b.column_by_name("sourceTransportPort").unwrap();
    let sport = sport.as_primitive::<UInt16Type>();
    let reason = b.column_by_name("flowEndReason").unwrap();
    let reason = reason.as_primitive::<UInt8Type>();
    for (i, f) in flows.iter().enumerate() {
        assert_eq!(packets[i], f["packetDeltaCount"].as_u64().unwrap());
        assert_eq!(octets[i], f["octetDeltaCount"].as_u64().unwrap());
        assert_eq!(src[i].as_deref(), f["sourceIPv4Address"].as_str());
        assert_eq!(
            u64::from(sport.value(i)),
            f["sourceTransportPort"].as_u64().unwrap()
        );
        assert_eq!(
            u64::from(reason.value(i)),
            f["flowEndReason"].as_u64().unwrap()
        );
    }
    assert_eq!(
        packets.iter().sum::<u64>(),
        summary["summary"]["accounted"].as_u64().unwrap()
    );
    assert_eq!(
        b.column_by_name("sourceIPv6Address").unwrap().null_count(),
        flows.len()
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn rtt_writes_a_row_per_sample_line() {
    let d = dir("rtt");
    let path = d.join("rtt.feather");
    let out = common::sluice(&[
        "monitor",
        "rtt",
        "--gen",
        "tcp-conv,flows=3,rtt=2..6,count=60",
        "--json",
        "--out-table",
        path.to_str().unwrap(),
    ]);
    let lines = json_lines(&out);
    let samples: Vec<&Value> = lines.iter().filter(|v| v.get("rtt_ns").is_some()).collect();
    let b = read(&path);
    assert_eq!(b.num_rows(), samples.len());
    assert_eq!(b.num_rows(), 60);
    let rtt = u64s(&b, "rtt_ns");
    let time = u64s(&b, "time_ns");
    let method = strings(&b, "method");
    let dst = strings(&b, "dst");
    for (i, s) in samples.iter().enumerate() {
        assert_eq!(rtt[i], s["rtt_ns"].as_u64().unwrap());
        assert_eq!(time[i], s["time_ns"].as_u64().unwrap());
        assert_eq!(method[i].as_deref(), s["method"].as_str());
        assert_eq!(dst[i].as_deref(), s["dst"].as_str());
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn sample_writes_a_row_per_record_line() {
    let d = dir("sample");
    let path = d.join("sample.parquet");
    let out = common::sluice(&[
        "monitor",
        "sample",
        "--gen",
        "udp,flows=20,count=2000",
        "--rate",
        "1/10",
        "--json",
        "--out-table",
        path.to_str().unwrap(),
    ]);
    let lines = json_lines(&out);
    let (summary, records) = lines.split_last().unwrap();
    let summary = &summary["summary"];
    let b = read(&path);
    assert_eq!(b.num_rows(), records.len());
    assert_eq!(
        b.num_rows() as u64,
        summary["sampled"].as_u64().unwrap() + summary["flow_records"].as_u64().unwrap()
    );
    assert!(summary["sampled"].as_u64().unwrap() > 0);
    let kind = strings(&b, "record");
    let label = b
        .column_by_name("label")
        .unwrap()
        .as_primitive::<UInt32Type>()
        .clone();
    let hash = b
        .column_by_name("hash")
        .unwrap()
        .as_primitive::<UInt32Type>()
        .clone();
    for (i, r) in records.iter().enumerate() {
        assert_eq!(u64::from(label.value(i)), r["label"].as_u64().unwrap());
        match r.get("hash") {
            Some(h) => {
                assert_eq!(kind[i].as_deref(), Some("sample"));
                assert_eq!(u64::from(hash.value(i)), h.as_u64().unwrap());
            }
            None => {
                assert_eq!(kind[i].as_deref(), Some("flow"));
                assert!(hash.is_null(i));
            }
        }
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn profile_writes_a_row_per_packet_profiled() {
    let d = dir("profile");
    let path = d.join("profile.parquet");
    let obj = common::object_path("xdp_count");
    let out = common::sluice(&[
        "profile",
        &obj,
        "--sizes",
        "64..512:64",
        "--per-size",
        "3",
        "--json",
        "--out-table",
        path.to_str().unwrap(),
    ]);
    let report: Value = serde_json::from_str(&out).unwrap();
    let b = read(&path);
    assert_eq!(
        b.num_rows() as u64,
        report["model"]["packets"].as_u64().unwrap()
    );
    assert_eq!(b.num_rows(), 8 * 3);
    // The model's rows per length are the table's means.
    for row in report["model"]["rows"].as_array().unwrap() {
        let len = row["len"].as_u64().unwrap();
        let lens = b
            .column_by_name("len")
            .unwrap()
            .as_primitive::<UInt32Type>()
            .clone();
        let insns = u64s(&b, "insns");
        let of: Vec<u64> = (0..b.num_rows())
            .filter(|&i| u64::from(lens.value(i)) == len)
            .map(|i| insns[i])
            .collect();
        let mean = of.iter().sum::<u64>() as f64 / of.len() as f64;
        assert!((mean - row["insns_mean"].as_f64().unwrap()).abs() < 1e-9);
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_name_that_says_no_format_is_refused_before_the_run() {
    let d = dir("bad");
    let obj = common::object_path("xdp_count");
    let obj = obj.as_str();
    let bad = d.join("out.txt");
    let bad = bad.to_str().unwrap();
    for args in [
        vec!["run", obj, "--gen", "udp,count=5", "--out-table", bad],
        vec![
            "monitor",
            "flows",
            "--gen",
            "udp,count=5",
            "--out-table",
            bad,
        ],
        vec!["monitor", "rtt", "--gen", "udp,count=5", "--out-table", bad],
        vec![
            "monitor",
            "sample",
            "--gen",
            "udp,count=5",
            "--out-table",
            bad,
        ],
        vec!["profile", obj, "--gen", "udp,count=5", "--out-table", bad],
    ] {
        let out = Command::new(SLUICE).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(
            err.contains(&format!("--out-table {bad}: which table format?"))
                && err.contains(".parquet, .arrow, .feather, .ipc or .csv"),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?} ran");
        assert!(!Path::new(bad).exists());
    }
    std::fs::remove_dir_all(&d).unwrap();
}
