"""sluice.Filter: tcpdump expressions compiled by libpcap: the program as
`sluice filter -d` and real `tcpdump -d` print it, its instructions,
packets matched, captures filtered as `sluice filter -r ... --json`
reports them (and -w writes them), bad expressions and link types."""

import json
import shutil
import subprocess

import pyarrow as pa
import pytest

import sluice
from conftest import frame, write_pcap

EXPRS = ["tcp port 80", "udp and dst port 53", "ip6 or arp", "vlan and icmp", "greater 100"]


def cli(sluice_bin, *args):
    out = subprocess.run([sluice_bin, "filter", *args], capture_output=True, text=True)
    return out


@pytest.mark.parametrize("expr", EXPRS)
def test_dump_is_sluice_filter_d_and_tcpdump_d(expr, sluice_bin):
    f = sluice.Filter(expr)
    out = cli(sluice_bin, "-d", expr)
    assert out.returncode == 0, out.stderr
    assert f.dump() == out.stdout
    assert f.dump("dd") == cli(sluice_bin, "-dd", expr).stdout
    assert f.dump("ddd") == cli(sluice_bin, "-ddd", expr).stdout
    tcpdump = shutil.which("tcpdump") or "/usr/bin/tcpdump"
    if not shutil.which(tcpdump):
        pytest.skip("no tcpdump")
    real = subprocess.run([tcpdump, "-d", expr], capture_output=True, text=True)
    assert real.returncode == 0, real.stderr
    assert f.dump() == real.stdout


def test_instructions_are_the_decimal_program(sluice_bin):
    f = sluice.Filter("tcp port 80")
    lines = cli(sluice_bin, "-ddd", "tcp port 80").stdout.split("\n")
    assert int(lines[0]) == len(f.instructions)
    assert f.instructions == [tuple(int(x) for x in l.split()) for l in lines[1:] if l]
    code, jt, jf, k = f.instructions[-1]
    assert code == 0x06 and k == 0  # ret #0
    assert f.linktype == 1 and f.snaplen == 262144 and f.expr == "tcp port 80"


def test_link_types(sluice_bin, pcaps):
    raw = sluice.Filter("ip", linktype="RAW")
    assert raw.linktype == 101
    assert raw.dump() == cli(sluice_bin, "-d", "-y", "RAW", "ip").stdout
    assert sluice.Filter("ip", linktype=113).dump() == cli(sluice_bin, "-d", "-y", "LINUX_SLL", "ip").stdout
    assert sluice.Filter("ip", snaplen=96).dump() == cli(sluice_bin, "-d", "-s", "96", "ip").stdout
    pcap = str(pcaps / "LINKTYPE_IPV4.pcap")
    from_capture = sluice.Filter("udp", pcap=pcap)
    assert from_capture.dump() == cli(sluice_bin, "-r", pcap, "-d", "udp").stdout
    assert sluice.Filter("udp", pcap=open(pcap, "rb")).linktype == from_capture.linktype
    with pytest.raises(sluice.Error, match="unknown link type `NOPE`"):
        sluice.Filter("ip", linktype="NOPE")


def test_a_bad_expression_raises_the_clis_message(sluice_bin):
    out = cli(sluice_bin, "-d", "tcp port eighty")
    want = out.stderr.strip().removeprefix("sluice: ")
    with pytest.raises(sluice.FilterError) as e:
        sluice.Filter("tcp port eighty")
    assert str(e.value) == want
    assert isinstance(e.value, sluice.Error)


def test_matches():
    f = sluice.Filter("udp and dst port 53")
    assert f.matches(frame(17))
    assert not f.matches(frame(6))
    assert not f.matches(b"\x00" * 10)
    big = sluice.Filter("greater 100")
    assert not big.matches(frame(size=64))
    assert big.matches(frame(size=64), wire_len=200)
    assert big.matches(bytearray(frame(size=120)))


@pytest.mark.parametrize("name,expr", [
    ("IGMP_V2.pcap", "igmp"),
    ("802.1ad_QinQ.pcap", "vlan"),
    ("LINKTYPE_IPV4.pcap", "udp"),
    ("dns-badcookie.pcap", "udp port 53"),
])
def test_run_over_a_capture_is_sluice_filter_json(name, expr, pcaps, sluice_bin, tmp_path):
    pcap = str(pcaps / name)
    out = cli(sluice_bin, "-r", pcap, expr, "--json", "-w", str(tmp_path / "cli.pcap"))
    assert out.returncode == 0, out.stderr
    want = json.loads(out.stdout)
    res = sluice.Filter(expr).run(pcap=pcap, write=tmp_path / "py.pcap")
    got = res.report
    want["written"] = got["written"]
    assert got == want
    assert res.read == want["read"] and res.matched == want["matched"]
    assert (tmp_path / "py.pcap").read_bytes() == (tmp_path / "cli.pcap").read_bytes()
    t = res.packets
    assert t.column_names == ["index", "timestamp", "length", "wire_length"]
    assert t.num_rows == res.matched
    # The matches read back from the written capture, in order.
    again = sluice.Filter(expr).run(pcap=str(tmp_path / "py.pcap"))
    assert again.matched == res.matched
    assert again.packets.column("length").to_pylist() == t.column("length").to_pylist()
    assert again.packets.column("timestamp").to_pylist() == t.column("timestamp").to_pylist()


def test_run_count_and_indices(tmp_path, sluice_bin):
    frames = [frame(17), frame(6), frame(17, size=90), frame(1), frame(17, size=70)]
    pcap = write_pcap(tmp_path / "five.pcap", frames)
    res = sluice.Filter("udp").run(pcap=pcap)
    assert res.packets.column("index").to_pylist() == [1, 3, 5]
    assert res.packets.column("length").to_pylist() == [64, 90, 70]
    assert res.packets.column("timestamp").cast(pa.int64()).to_pylist() == [1_000_000_000, 1_000_002_000, 1_000_004_000]
    two = sluice.Filter("udp").run(pcap=pcap, count=2)
    want = json.loads(cli(sluice_bin, "-r", pcap, "-c", "2", "udp", "--json").stdout)
    assert two.report == want
    assert two.matched == 2 and two.read == 3
    with pytest.raises(ValueError, match="count"):
        sluice.Filter("udp").run(pcap=pcap, count=0)


def test_run_over_packets_and_generated_traffic(tmp_path):
    frames = [frame(17), frame(6), frame(17, size=90)]
    res = sluice.Filter("udp").run(packets=frames, write=tmp_path / "m.pcap")
    assert (res.read, res.matched) == (3, 2)
    assert res.packets.column("index").to_pylist() == [1, 3]
    assert res.report["input"] == "3 frames in memory"
    assert sluice.Filter("udp").run(pcap=tmp_path / "m.pcap").matched == 2
    gen = sluice.Filter("tcp").run(gen=["udp,count=30", "tcp,count=20"])
    assert (gen.read, gen.matched) == (50, 20)
    assert repr(gen) == "sluice.FilterResult(read=50, matched=20)"


def test_run_errors(tmp_path):
    with pytest.raises(sluice.SourceError, match="missing.pcap: No such file or directory"):
        sluice.Filter("ip").run(pcap=tmp_path / "missing.pcap")
    with pytest.raises(TypeError, match="exactly one of"):
        sluice.Filter("ip").run()


@pytest.mark.parametrize("name", ["nflog.pcap", "LINKTYPE_PKTAP.pcap"])
def test_a_link_type_libpcap_cannot_filter_is_the_clis_error(name, pcaps, sluice_bin):
    pcap = str(pcaps / name)
    out = cli(sluice_bin, "-r", pcap, "ip", "--json")
    assert out.returncode != 0
    want = out.stderr.strip().splitlines()[-1].removeprefix("sluice: ")
    with pytest.raises(sluice.FilterError) as e:
        sluice.Filter("ip").run(pcap=open(pcap, "rb"))
    assert str(e.value) == want


@pytest.mark.parametrize("engine", ["jit", "ebpf-jit"])
@pytest.mark.parametrize("expr", ["udp port 53", "tcp[tcpflags] & tcp-syn != 0", "greater 100", "ip6 or arp"])
def test_engines_agree_with_the_clis_engine_and_the_interpreter(engine, expr, pcaps, sluice_bin, tmp_path):
    pcap = str(pcaps / "dns-badcookie.pcap")
    out = cli(sluice_bin, "-r", pcap, expr, "--json", "--engine", engine, "-w", str(tmp_path / "cli.pcap"))
    assert out.returncode == 0, out.stderr
    want = json.loads(out.stdout)
    res = sluice.Filter(expr).run(pcap=pcap, engine=engine, write=tmp_path / "py.pcap")
    want["written"] = res.report["written"]
    assert res.report == want
    assert res.report["engine"] == engine
    assert (tmp_path / "py.pcap").read_bytes() == (tmp_path / "cli.pcap").read_bytes()
    interp = sluice.Filter(expr).run(pcap=pcap)
    assert res.packets.column("index").to_pylist() == interp.packets.column("index").to_pylist()
    # Frames in memory and generated traffic go through the engine too.
    frames = [frame(17), frame(6), frame(17, size=120), frame(1)]
    mem = sluice.Filter(expr).run(packets=frames, engine=engine)
    assert mem.report["engine"] == engine
    assert mem.matched == sluice.Filter(expr).run(packets=frames).matched


def test_an_unknown_engine_names_the_engines():
    with pytest.raises(ValueError, match=r"engine=bpf: not an engine \(interp, jit, ebpf-jit, kernel\)"):
        sluice.Filter("ip").run(gen="udp,count=1", engine="bpf")
