"""sluice.flows, sluice.rtt, sluice.sample: `sluice monitor`'s applications
from Python, their records (pyarrow tables) and summaries equal to the
CLI's `--json` lines on the same inputs; every engine alike; bad options
refused with the CLI's message."""

import json
import subprocess

import pyarrow as pa
import pytest

import sluice

FLOWS = "udp,flows=12,count=240"
CONV = "tcp-conv,flows=3,rtt=2..6,count=60"


def cli_lines(sluice_bin, *args):
    """`sluice monitor ARGS --json`: the record lines and the summary."""
    out = subprocess.run([sluice_bin, "monitor", *args, "--json"], check=True, capture_output=True, text=True)
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    return lines[:-1], lines[-1]["summary"]


def rows(table):
    """A table's rows as dicts, nulls left out (as the CLI's JSON leaves them)."""
    return [{k: v for k, v in r.items() if v is not None} for r in table.to_pylist()]


def test_flows_equal_the_clis_lines_and_summary(sluice_bin):
    res = sluice.flows(gen=FLOWS, idle=1.0)
    lines, summary = cli_lines(sluice_bin, "flows", "--gen", FLOWS, "--idle", "1")
    assert isinstance(res.records, pa.Table)
    assert len(res) == res.records.num_rows == len(lines) == 12
    t = res.records.drop_columns(
        ["flowStartMilliseconds", "flowEndMilliseconds", "flowStartNanoseconds", "flowEndNanoseconds"]
    )
    want = [{k: v for k, v in line.items() if "Milli" not in k and "Nano" not in k} for line in lines]
    assert rows(t) == want
    start = res.records.column("flowStartNanoseconds").cast(pa.int64()).to_pylist()
    assert start == [line["flowStartNanoseconds"] for line in lines]
    ms = res.records.column("flowEndMilliseconds").cast(pa.int64()).to_pylist()
    assert ms == [line["flowEndMilliseconds"] for line in lines]
    for key, value in res.summary.items():
        assert summary[key] == value, key
    assert res.summary["flows"] == 12


@pytest.mark.parametrize("engine", ["table", "ebpf", "xpf"])
def test_every_flow_engine_accounts_alike(engine):
    res = sluice.flows(gen=FLOWS, engine=engine)
    assert res.summary["flows"] == 12
    assert sum(res.records.column("packetDeltaCount").to_pylist()) == 240


def test_rtt_samples_equal_the_clis(sluice_bin):
    res = sluice.rtt(gen=CONV)
    lines, summary = cli_lines(sluice_bin, "rtt", "--gen", CONV)
    samples = [line for line in lines if "rtt_ns" in line]
    assert res.records.to_pylist() == samples
    assert len(samples) == 60
    assert res.summary == summary
    assert res.summary["handshake_samples"] == 3


def test_rtt_by_ebpf_and_xpf_equal_the_reference():
    order = [(name, "ascending") for name in ["time_ns", "src", "method", "rtt_ns"]]
    ref = sluice.rtt(gen=CONV).records.sort_by(order)
    assert sluice.rtt(gen=CONV, engine="ebpf").records.sort_by(order).equals(ref)
    assert sluice.rtt(gen=CONV, engine="xpf", xpf_engine="vm").records.sort_by(order).equals(ref)


def test_sampling_records_equal_the_clis(sluice_bin):
    spec = "udp,flows=20,count=2000"
    res = sluice.sample(gen=spec, rate="1/10")
    lines, summary = cli_lines(sluice_bin, "sample", "--gen", spec, "--rate", "1/10")
    got = [{k: v for k, v in r.items() if v is not None and k != "record"} for r in res.records.to_pylist()]
    assert got == lines
    kinds = res.records.column("record").to_pylist()
    assert kinds.count("flow") == summary["flow_records"]
    assert kinds.count("sample") == summary["sampled"] > 0
    assert res.summary == summary
    ab = sluice.sample(gen=spec, a=10, b=1, engine="reference")
    assert ab.records.equals(res.records)


def test_a_capture_gives_the_same_flows_as_the_cli(pcaps, sluice_bin):
    pcap = str(pcaps / "dns_tcp_8053.pcap")
    res = sluice.flows(pcap=pcap)
    lines, summary = cli_lines(sluice_bin, "flows", "--pcap", pcap)
    assert res.records.column("packetDeltaCount").to_pylist() == [line["packetDeltaCount"] for line in lines]
    assert res.summary["packets"] == summary["packets"]


def test_bad_options_raise_the_clis_messages(tmp_path):
    with pytest.raises(sluice.Error, match=r"--idle 0: a positive number of seconds"):
        sluice.flows(gen=FLOWS, idle=0)
    with pytest.raises(sluice.Error, match=r"--syn-table 0: 1 to"):
        sluice.rtt(gen=CONV, syn_table=0)
    with pytest.raises(sluice.Error, match=r"--rate 2/1: B/A"):
        sluice.sample(gen=FLOWS, rate="2/1")
    with pytest.raises(sluice.Error, match=r"A at least 1, B at most A"):
        sluice.sample(gen=FLOWS, a=1, b=2)
    with pytest.raises(sluice.SourceError):
        sluice.flows(pcap=str(tmp_path / "missing.pcap"))
    with pytest.raises(ValueError, match="engine="):
        sluice.flows(gen=FLOWS, engine="warp")
    with pytest.raises(TypeError):
        sluice.rtt()
