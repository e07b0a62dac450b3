//! Each record kind made into a table from a real run of the engine (flow
//! accounting, RTT, sampling, a replay, a profile), checked against the
//! run's own records and summary, and written to Parquet, Arrow IPC and
//! CSV and read back with the arrow and parquet readers.

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{TimestampMillisecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use engine::{
    FlowsSpec, HookSpec, ProfileSpec, RttSpec, RunSpec, SampleEngine, SampleSpec, SourceSpec,
};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tables-test-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The file at `path`, read by the reader of its format (as one batch).
fn read_back(path: &Path, like: &RecordBatch) -> RecordBatch {
    let f = File::open(path).unwrap();
    let big = 1 << 20;
    let mut batches: Vec<RecordBatch> = match path.extension().unwrap().to_str().unwrap() {
        "parquet" => ParquetRecordBatchReaderBuilder::try_new(f)
            .unwrap()
            .with_batch_size(big)
            .build()
            .unwrap()
            .map(Result::unwrap)
            .collect(),
        "csv" => arrow_csv::ReaderBuilder::new(like.schema())
            .with_header(true)
            .with_batch_size(big)
            .build(f)
            .unwrap()
            .map(Result::unwrap)
            .collect(),
        _ => arrow_ipc::reader::FileReader::try_new(f, None)
            .unwrap()
            .map(Result::unwrap)
            .collect(),
    };
    assert_eq!(batches.len(), 1, "{}", path.display());
    batches.remove(0)
}

/// `back` holds `batch`'s columns, by name, type and value.
fn same(back: &RecordBatch, batch: &RecordBatch, what: &str) {
    assert_eq!(back.schema().fields(), batch.schema().fields(), "{what}");
    assert_eq!(back.columns(), batch.columns(), "{what}");
}

#[test]
fn flows_are_named_as_ipfix_and_add_up_to_the_summary() {
    let spec = FlowsSpec::new(SourceSpec::generated(["udp,flows=10,count=200"]));
    let mut ended = Vec::new();
    let run = spec
        .run(None, None, |e| ended.extend_from_slice(e))
        .unwrap();
    let batch = tables::flows(&ended).unwrap();
    assert_eq!(batch.num_rows() as u64, run.flows);
    assert_eq!(run.flows, 10);
    let packets = batch.column_by_name("packetDeltaCount").unwrap();
    let sum: u64 = packets.as_primitive::<UInt64Type>().values().iter().sum();
    assert_eq!(sum, run.accounted);
    let src4 = batch.column_by_name("sourceIPv4Address").unwrap();
    let src6 = batch.column_by_name("sourceIPv6Address").unwrap();
    assert_eq!((src4.null_count(), src6.null_count()), (0, 10));
    assert_eq!(
        src4.as_string::<i32>().value(0),
        ended[0].flow.key.src.to_string()
    );
    let proto = batch.column_by_name("protocolIdentifier").unwrap();
    assert!(
        proto
            .as_primitive::<UInt8Type>()
            .values()
            .iter()
            .all(|&p| p == 17)
    );
    let port = batch.column_by_name("destinationTransportPort").unwrap();
    assert_eq!(
        port.as_primitive::<UInt16Type>().value(3),
        ended[3].flow.key.dst_port
    );
    let start = batch.column_by_name("flowStartMilliseconds").unwrap();
    assert_eq!(
        start.as_primitive::<TimestampMillisecondType>().value(2),
        (ended[2].flow.first_ns / 1_000_000) as i64
    );
    let reason = batch.column_by_name("flowEndReason").unwrap();
    // The input ends: every flow's end is forced (4).
    assert!(
        reason
            .as_primitive::<UInt8Type>()
            .values()
            .iter()
            .all(|&r| r == 4)
    );
    let d = dir("flows");
    for name in ["flows.parquet", "flows.arrow", "flows.feather", "flows.ipc"] {
        let path = d.join(name);
        tables::write(&path, &batch).unwrap();
        same(&read_back(&path, &batch), &batch, name);
    }
    // CSV: a header, a line per flow, the times as RFC 3339 in UTC.
    let csv = d.join("flows.csv");
    tables::write(&csv, &batch).unwrap();
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 11);
    assert!(lines[0].starts_with("sourceIPv4Address,destinationIPv4Address,"));
    let start = lines[1].split(',').nth(11).unwrap();
    assert!(start.contains('T') && start.ends_with('Z'), "{}", lines[1]);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn rtt_samples_keep_their_flow_method_and_time_in_every_format() {
    let spec = RttSpec::new(SourceSpec::generated([
        "tcp-conv,flows=3,rtt=2..6,count=60",
    ]));
    let mut samples = Vec::new();
    let run = spec
        .run(None, None, |s| samples.extend_from_slice(s))
        .unwrap();
    let batch = tables::rtt(&samples).unwrap();
    assert_eq!(batch.num_rows() as u64, run.samples[1] + run.samples[2]);
    assert_eq!(batch.num_rows(), 60);
    let method = batch.column_by_name("method").unwrap().as_string::<i32>();
    let handshakes = method.iter().filter(|m| *m == Some("handshake")).count();
    assert_eq!(handshakes as u64, run.samples[1]);
    let rtt = batch
        .column_by_name("rtt_ns")
        .unwrap()
        .as_primitive::<UInt64Type>();
    assert!(
        samples
            .iter()
            .zip(rtt.values())
            .all(|(s, &r)| s.rtt_ns == r)
    );
    let d = dir("rtt");
    for name in ["rtt.parquet", "rtt.arrow", "rtt.csv"] {
        let path = d.join(name);
        tables::write(&path, &batch).unwrap();
        same(&read_back(&path, &batch), &batch, name);
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn sampling_records_come_flow_before_sample_with_nulls_elsewhere() {
    let mut spec = SampleSpec::new(SourceSpec::generated(["udp,flows=5,count=50"]));
    spec.engine = SampleEngine::Reference;
    spec.rate = Some("1/1".into());
    let mut records = Vec::new();
    let run = spec
        .run(None, None, |r| records.extend_from_slice(r))
        .unwrap();
    let batch = tables::samples(&records).unwrap();
    assert_eq!(
        batch.num_rows() as u64,
        run.counts.sampled + run.counts.flows
    );
    assert_eq!((run.counts.sampled, run.counts.flows), (50, 5));
    let kind = batch.column_by_name("record").unwrap().as_string::<i32>();
    let hash = batch.column_by_name("hash").unwrap();
    let src = batch.column_by_name("src").unwrap();
    assert_eq!(kind.value(0), "flow");
    assert_eq!(hash.null_count(), 5);
    assert_eq!(src.null_count(), 50);
    let label = batch
        .column_by_name("label")
        .unwrap()
        .as_primitive::<UInt32Type>();
    // A label's flow record comes before its first sample.
    for i in 0..batch.num_rows() {
        if kind.value(i) == "sample" {
            let first = (0..i).find(|&j| label.value(j) == label.value(i)).unwrap();
            assert_eq!(kind.value(first), "flow");
        }
    }
    let path = dir("samples").join("samples.parquet");
    tables::write(&path, &batch).unwrap();
    same(&read_back(&path, &batch), &batch, "read back");
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn a_runs_packets_keep_their_verdicts_and_read_back_from_parquet() {
    let hook = HookSpec::from_bytes("xdp_count.o", programs::object("xdp_count").unwrap());
    let source = SourceSpec::generated(["udp,count=30", "tcp,count=20"]);
    let mut spec = RunSpec::new(hook, source);
    spec.per_packet = true;
    let mut report = spec.run(None, None).unwrap();
    let table = report.packet_table.take().unwrap();
    let batch = tables::packets(table).unwrap();
    assert_eq!(batch.num_rows() as u64, report.packets);
    let verdict = batch.column_by_name("verdict").unwrap();
    let verdict = verdict.as_dictionary::<UInt8Type>();
    let names = verdict.values().as_string::<i32>();
    let pass = verdict
        .keys()
        .values()
        .iter()
        .filter(|&&k| names.value(k as usize) == "PASS")
        .count();
    assert_eq!(pass as u64, report.verdicts["PASS"]);
    let path = dir("packets").join("packets.parquet");
    tables::write(&path, &batch).unwrap();
    same(&read_back(&path, &batch), &batch, "read back");
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn a_profiles_packets_are_its_costs() {
    let hook = HookSpec::from_bytes("xdp_count.o", programs::object("xdp_count").unwrap());
    let source = SourceSpec::generated(["udp,size=64,count=5", "udp,size=512,count=5"]);
    let done = ProfileSpec::new(hook, source).run(None).unwrap();
    let batch = tables::profile(&done.profile).unwrap();
    assert_eq!(batch.num_rows(), 10);
    assert_eq!(done.model.packets, 10);
    let insns = batch
        .column_by_name("insns")
        .unwrap()
        .as_primitive::<UInt64Type>();
    assert!(
        done.profile
            .packets
            .iter()
            .zip(insns.values())
            .all(|(c, &i)| c.insns == i && i > 0)
    );
    let len = batch
        .column_by_name("len")
        .unwrap()
        .as_primitive::<UInt32Type>();
    assert_eq!((len.value(0), len.value(9)), (64, 512));
    let path = dir("profile").join("profile.feather");
    tables::write(&path, &batch).unwrap();
    same(&read_back(&path, &batch), &batch, "read back");
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn a_name_without_a_known_extension_is_refused_naming_the_choices() {
    let batch = tables::rtt(&[]).unwrap();
    let d = dir("bad");
    for name in ["out.txt", "out", "out.json"] {
        let path = d.join(name);
        let err = tables::write(&path, &batch).unwrap_err().to_string();
        assert!(
            err.contains(".parquet, .arrow, .feather, .ipc or .csv"),
            "{err}"
        );
        assert!(err.starts_with(&path.display().to_string()), "{err}");
        assert!(!path.exists(), "{name} written");
    }
    let missing = d.join("no/such/dir/out.parquet");
    let err = tables::write(&missing, &batch).unwrap_err().to_string();
    assert!(err.contains("no/such/dir"), "{err}");
    assert_eq!(
        tables::Format::of(Path::new("A.PARQUET")).unwrap(),
        tables::Format::Parquet
    );
    std::fs::remove_dir_all(&d).unwrap();
}
