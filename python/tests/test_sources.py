"""Captures from more than a path: bytes and binary file objects give the
same run as the file; malformed or cut captures raise SourceError with the
command line's message; the same source handling serves Filter.run and
Tc.run; packets per route kept in memory, scapy packets in and out."""

import io
import subprocess

import pytest

import sluice
from conftest import frame, write_pcap

TIMING = {"seconds", "packets_per_second"}


def untimed(report):
    return {k: v for k, v in report.items() if k not in TIMING | {"source"}}


def cli_error(sluice_bin, *args):
    """The message `sluice ARGS` exits with (after `sluice: `)."""
    out = subprocess.run([sluice_bin, *args], capture_output=True, text=True)
    assert out.returncode != 0, out
    lines = [l for l in out.stderr.splitlines() if l.startswith("sluice: ")]
    return lines[-1][len("sluice: "):]


def test_bytes_and_file_objects_run_as_the_file(bpf, pcaps):
    path = pcaps / "IGMP_V2.pcap"
    obj = sluice.Object(bpf("xdp_count"))
    # A fresh program each run: a program keeps its maps between runs.
    by_path = obj.program().run(pcap=str(path))
    data = path.read_bytes()
    by_bytes = obj.program().run(pcap=data)
    by_bytesio = obj.program().run(pcap=io.BytesIO(data))
    with open(path, "rb") as f:
        by_file = obj.program().run(pcap=f)
    for res in (by_bytes, by_bytesio, by_file):
        assert untimed(res.report) == untimed(by_path.report)
        assert res.packets.column("length").to_pylist() == by_path.packets.column("length").to_pylist()
    assert by_bytes.report["source"] == "capture <bytes>"
    assert by_bytesio.report["source"] == "capture <file object>"
    assert by_file.report["source"] == f"capture {path}"
    assert obj.program().run(pcap=bytearray(data), threads=2).count == by_path.count


def test_a_text_file_object_is_refused(bpf, tmp_path):
    p = tmp_path / "t.pcap"
    p.write_text("x")
    with open(p) as f, pytest.raises(TypeError, match="binary mode"):
        sluice.Object(bpf("xdp_count")).program().run(pcap=f)
    with pytest.raises(TypeError, match="pcap="):
        sluice.Object(bpf("xdp_count")).program().run(pcap=42)


def test_malformed_captures_raise_the_clis_message(bpf, pcaps, tmp_path, sluice_bin):
    prog = sluice.Object(bpf("xdp_count")).program()
    good = (pcaps / "IGMP_V2.pcap").read_bytes()
    # Not a capture: the header of a shared capture's bytes broken.
    broken = tmp_path / "broken.pcap"
    broken.write_bytes(b"\x00\x01\x02\x03" + good[4:])
    want = cli_error(sluice_bin, "run", bpf("xdp_count"), "--pcap", str(broken))
    assert "not a pcap or pcapng file" in want
    with open(broken, "rb") as f, pytest.raises(sluice.SourceError) as e:
        prog.run(pcap=f)
    assert str(e.value) == want
    with pytest.raises(sluice.SourceError, match="^<bytes>: too short for a capture file$"):
        prog.run(pcap=b"\xd4\xc3")
    # Cut in the middle of a record: the packets before it ran, then the
    # command line's error, the partial result attached.
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(good[: len(good) - 7])
    want = cli_error(sluice_bin, "run", bpf("xdp_count"), "--pcap", str(cut), "--threads", "1")
    assert want.startswith("the capture ended early after ")
    with open(cut, "rb") as f, pytest.raises(sluice.SourceError) as e:
        prog.run(pcap=f)
    assert str(e.value) == want
    assert want.startswith(f"the capture ended early after {e.value.result.count} packets: ")
    assert e.value.result.count >= 1
    with pytest.raises(sluice.SourceError, match="^the capture ended early after .*<bytes>, packet"):
        prog.run(pcap=good[: len(good) - 7])


def test_filter_and_tc_take_the_same_sources(pcaps):
    data = (pcaps / "IGMP_V2.pcap").read_bytes()
    f = sluice.Filter("igmp")
    assert f.run(pcap=io.BytesIO(data)).matched == f.run(pcap=str(pcaps / "IGMP_V2.pcap")).matched
    with pytest.raises(sluice.SourceError, match="too short"):
        f.run(pcap=b"\x00")
    tc = sluice.Tc(["qdisc add dev v0 clsact", "filter add dev v0 ingress matchall action drop"])
    assert tc.run(pcap=data).verdicts == tc.run(pcap=str(pcaps / "IGMP_V2.pcap")).verdicts
    with pytest.raises(sluice.SourceError, match="too short"):
        tc.run(pcap=b"\x00")
    with pytest.raises(TypeError, match="exactly one of"):
        tc.run()


def test_output_per_route(bpf):
    prog = sluice.Object(bpf("xdp_parse_tx")).program()
    packets = [frame(size=64), b"\x00" * 10, frame(size=80)]
    res = prog.run(packets=packets, output=True)
    tx = res.output("tx")
    assert [len(p) for p in tx] == [64, 80]
    # The program swapped the MAC addresses.
    assert tx[0][:6] == packets[0][6:12] and tx[0][6:12] == packets[0][:6]
    assert tx[0][12:] == packets[0][12:]
    assert res.output("DROP") == [b"\x00" * 10]
    assert res.output("pass") == []
    only = prog.run(packets=packets, output="tx")
    assert only.output("TX") == tx
    with pytest.raises(ValueError, match="kept no drop packets"):
        only.output("drop")
    with pytest.raises(ValueError, match="route"):
        prog.run(packets=packets, output="sideways")
    assert prog.run(packets=packets).count == 3


def test_scapy_packets_in_and_out(bpf):
    scapy = pytest.importorskip("scapy.all")
    pkt = scapy.Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / scapy.IP(
        src="10.0.0.1", dst="10.0.0.2"
    ) / scapy.UDP(sport=1000, dport=53) / b"hello"
    pkt.time = 1.5
    res = sluice.Object(bpf("xdp_parse_tx")).program().run(packets=[pkt], output="tx")
    assert res.verdicts == {"TX": 1}
    out = res.output("tx", scapy=True)
    assert len(out) == 1
    back = out[0]
    assert isinstance(back, scapy.Ether)
    assert (back.src, back.dst) == ("02:00:00:00:00:02", "02:00:00:00:00:01")
    assert back[scapy.UDP].dport == 53 and bytes(back[scapy.UDP].payload) == b"hello"
    assert float(back.time) == pytest.approx(1.5)
    assert sluice.Filter("udp port 53").matches(pkt)
    assert not sluice.Filter("tcp").matches(pkt)


def test_a_capture_written_by_a_run_reads_back(bpf, tmp_path):
    pcap = write_pcap(tmp_path / "in.pcap", [frame(17)] * 4)
    res = sluice.Object(bpf("xdp_parse_tx")).program().run(pcap=open(pcap, "rb"), output="tx")
    assert len(res.output("tx")) == 4
