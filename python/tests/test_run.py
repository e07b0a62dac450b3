"""Program.run: over a capture (equal to `sluice run --json`), packets in
memory, generated traffic; limits, threads, engines; the per-packet table;
the errors of a missing capture or bad arguments."""

import json
import subprocess

import pyarrow as pa
import pytest

import sluice
from conftest import frame, write_pcap

# Fields that measure the run's speed, not what it did.
TIMING = {"seconds", "packets_per_second"}


def cli_json(sluice_bin, *args):
    """`sluice run ARGS --json` on one thread (the CLI defaults to one per core, run() to one)."""
    out = subprocess.run([sluice_bin, "run", *args, "--threads", "1", "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def untimed(report):
    return {k: v for k, v in report.items() if k not in TIMING}


def test_a_capture_gives_the_clis_report(bpf, tmp_path, sluice_bin):
    frames = [frame(17)] * 3 + [frame(6, size=80)] + [frame(1, size=100)] * 2
    pcap = write_pcap(tmp_path / "six.pcap", frames)
    res = sluice.Object(bpf("xdp_count")).program().run(pcap=pcap)
    assert res.verdicts == {"PASS": 6}
    assert res.count == 6
    assert untimed(res.report) == untimed(cli_json(sluice_bin, bpf("xdp_count"), "--pcap", pcap))
    stats = next(m for m in res.report["maps"] if m["name"] == "proto_stats")
    udp = next(e for e in stats["entries"] if e["key"] == "17")
    assert "packets: 3" in udp["value"]


def test_a_shared_capture_gives_the_clis_report(bpf, pcaps, sluice_bin):
    pcap = str(pcaps / "IGMP_V2.pcap")
    res = sluice.Object(bpf("xdp_parse_tx")).program().run(pcap=pcap)
    cli = cli_json(sluice_bin, bpf("xdp_parse_tx"), "--pcap", pcap)
    assert res.verdicts == cli["verdicts"]
    assert untimed(res.report) == untimed(cli)
    assert res.packets.num_rows == cli["packets"]



def test_packets_as_bytes_and_pairs(bpf):
    prog = sluice.Object(bpf("xdp_parse_tx")).program()
    res = prog.run(packets=[frame()] * 9 + [b"\x00" * 10])
    assert res.verdicts == {"TX": 9, "DROP": 1}
    t = res.packets
    assert t.column("verdict").to_pylist() == ["TX"] * 9 + ["DROP"]
    assert t.column("length").to_pylist() == [64] * 9 + [10]
    res = prog.run(packets=[(5_000, frame()), (7_000, bytearray(frame(size=70)))])
    assert res.packets.column("timestamp").cast(pa.int64()).to_pylist() == [5_000, 7_000]
    assert res.report["source"] == "2 frames in memory"


def test_generated_traffic_and_limit(bpf):
    prog = sluice.Object(bpf("xdp_count")).program()
    res = prog.run(gen="udp,flows=4,count=100")
    assert res.verdicts == {"PASS": 100}
    assert res.report["source"] == "generated udp,flows=4,count=100"
    res = prog.run(gen=["udp,count=50", "tcp,count=50"], limit=30)
    assert res.count == 30
    assert res.packets.num_rows == 30
    assert repr(res) == 'sluice.RunResult(packets=30, verdicts={"PASS": 30})'


def test_threads_and_engines_agree(bpf):
    prog = sluice.Object(bpf("xdp_parse_tx")).program()
    packets = [frame()] * 100 + [b"\x01" * 8] * 20
    one = prog.run(packets=packets)
    for kwargs in ({"threads": 3}, {"engine": "interpreter"}):
        res = prog.run(packets=packets, **kwargs)
        assert res.verdicts == one.verdicts == {"TX": 100, "DROP": 20}
        assert res.packets.column("verdict").to_pylist() == one.packets.column("verdict").to_pylist()
    assert prog.run(packets=packets, engine="interpreter").report["engine"] == "interpreter"
    assert prog.run(packets=packets, threads=3).report["threads"] == 3


def test_the_per_packet_table(bpf):
    res = sluice.Object(bpf("xdp_count")).program().run(gen="udp,count=1000")
    t = res.packets
    assert isinstance(t, pa.Table)
    assert t.column_names == [
        "index", "timestamp", "length", "verdict", "redirect", "instructions", "helper_calls",
        "error",
    ]
    assert t.num_rows == 1000
    assert t.column("index").to_pylist() == list(range(1, 1001))
    assert t.schema.field("verdict").type == pa.dictionary(pa.uint8(), pa.string())
    assert t.column("redirect").null_count == 1000
    insns = t.column("instructions").to_pylist()
    assert min(insns) > 0
    assert res.report["insns_per_packet"]["max"] == max(insns)
    df = t.to_pandas()
    assert df["verdict"].value_counts().to_dict() == res.verdicts
    assert sluice.Object(bpf("xdp_count")).program().run(gen="udp,count=5", per_packet=False).packets is None


def test_the_table_is_shared_not_copied(bpf):
    res = sluice.Object(bpf("xdp_count")).program().run(gen="udp,count=100")
    a = res.packets.column("instructions").chunk(0).buffers()[1].address
    b = pa.table(res.packet_stream).column("instructions").chunk(0).buffers()[1].address
    assert a == b


def test_filter(bpf):
    prog = sluice.Object(bpf("xdp_count")).program()
    res = prog.run(packets=[frame(17)] * 3 + [frame(6)] * 2, filter="tcp")
    assert res.count == 2
    with pytest.raises(sluice.Error, match="^--filter nope"):
        prog.run(gen="udp,count=1", filter="nope")


def test_a_missing_capture_raises(bpf, tmp_path):
    prog = sluice.Object(bpf("xdp_count")).program()
    with pytest.raises(sluice.SourceError, match="missing.pcap: No such file or directory"):
        prog.run(pcap=tmp_path / "missing.pcap")
    (tmp_path / "junk.pcap").write_bytes(b"junk" * 10)
    with pytest.raises(sluice.SourceError):
        prog.run(pcap=tmp_path / "junk.pcap")
    with pytest.raises(sluice.SourceError):
        prog.run(gen="nope,count=1")


def test_bad_arguments_raise(bpf):
    prog = sluice.Object(bpf("xdp_count")).program()
    with pytest.raises(TypeError, match="exactly one of"):
        prog.run()
    with pytest.raises(TypeError, match="exactly one of"):
        prog.run(gen="udp,count=1", packets=[frame()])
    with pytest.raises(ValueError, match="engine"):
        prog.run(gen="udp,count=1", engine="fast")
    with pytest.raises(TypeError, match="packets="):
        prog.run(packets=[42])
