"""Flows and tcpdump filters over the shards of a capture, merged:
sluice.flows_shard + sluice.merge_flows equal sluice.flows over the whole
capture and `sluice monitor flows --json`; Filter.run_shard + Filter.merge
equal Filter.run; every part pickles; what cannot be merged is refused
with a clear message."""

import json
import pickle
import random
import struct
import subprocess

import pytest

import sluice


def tcp_udp_frame(src, dst, sport, dport, tcp, flags, payload):
    """An Ethernet/IPv4 frame: TCP (with FLAGS) or UDP, PAYLOAD bytes after the header."""
    eth = b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x08\x00"
    l4 = struct.pack("!HHIIBBHHH", sport, dport, 0, 0, 0x50, flags, 0, 0, 0) if tcp else struct.pack("!HHHH", sport, dport, 8 + payload, 0)
    total = 20 + len(l4) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 0, 0, 64, 6 if tcp else 17, 0, bytes([10, 0, 0, src]), bytes([10, 0, 1, dst]))
    return eth + ip + l4 + b"\x00" * payload


@pytest.fixture(scope="module")
def traffic(tmp_path_factory):
    """A capture of 3000 packets over 24 keys, TCP with FIN and RST, some gaps longer than a 1 s idle timeout."""
    rng = random.Random(44)
    path = tmp_path_factory.mktemp("shards") / "traffic.pcap"
    ts = 1_700_000_000_000_000_000
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for _ in range(3000):
            ts += rng.randrange(0, 3_000_000_000) if rng.random() < 0.05 else rng.randrange(0, 30_000_000)
            tcp = rng.random() < 0.6
            flags = rng.choice([0x10] * 8 + [0x11, 0x14, 0x02]) if tcp else 0
            data = tcp_udp_frame(rng.randrange(3), rng.randrange(2), 1000 + rng.randrange(2), 80, tcp, flags, rng.randrange(0, 900))
            f.write(struct.pack("<IIII", ts // 10**9, ts % 10**9 // 1000, len(data), len(data)))
            f.write(data)
    return path


def shards(path, n):
    """PATH cut into N shards (dicts, as sluice.plan's Shard gives them)."""
    size = path.stat().st_size
    cuts = [size * i // n for i in range(n + 1)]
    return [{"path": str(path), "start": a, "end": b, "size": size, "index": i} for i, (a, b) in enumerate(zip(cuts, cuts[1:]))]


def read_proven(plan, read):
    """Every shard read by READ(shard, proven), those whose start is not proven read again (as sluice.check says)."""
    parts = [read(s, None) for s in plan]
    while True:
        redo = [i for i in range(1, len(parts)) if parts[i - 1].boundary["next"] is not None and parts[i].boundary["first"] != parts[i - 1].boundary["next"]]
        if not redo:
            return parts
        for i in redo:
            parts[i] = read(plan[i], parts[i - 1].boundary["next"])


def cli_flows(sluice_bin, pcap, *args):
    out = subprocess.run([sluice_bin, "monitor", "flows", "--pcap", str(pcap), *args, "--json"], check=True, capture_output=True, text=True)
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    return lines[:-1], lines[-1]["summary"]


def same_as_cli(res, lines, summary):
    """RES's records and summary are the CLI's lines and summary (times as integers, as the CLI prints them)."""
    times = ["flowStartMilliseconds", "flowEndMilliseconds", "flowStartNanoseconds", "flowEndNanoseconds"]
    t = res.records.drop_columns(times)
    got = [{k: v for k, v in r.items() if v is not None} for r in t.to_pylist()]
    assert got == [{k: v for k, v in line.items() if k not in times} for line in lines]
    for name in times:
        assert res.records.column(name).cast("int64").to_pylist() == [line[name] for line in lines]
    for key, value in res.summary.items():
        assert summary[key] == value, key


@pytest.mark.parametrize("n", [1, 3, 8, 29])
def test_flows_over_shards_merge_into_one_read_and_the_cli(traffic, sluice_bin, n):
    parts = read_proven(shards(traffic, n), lambda s, p: sluice.flows_shard(s, p, idle=1.0, active=2.0))
    assert sum(p.packets for p in parts) == 3000
    merged = sluice.merge_flows(parts)
    whole = sluice.flows(pcap=str(traffic), idle=1.0, active=2.0)
    assert merged.records.to_pylist() == whole.records.to_pylist()
    assert merged.summary == whole.summary
    lines, summary = cli_flows(sluice_bin, traffic, "--idle", "1", "--active", "2")
    same_as_cli(merged, lines, summary)
    # Reasons of every kind were met: the test tells something.
    s = merged.summary
    assert s["idle_timeout"] > 20 and s["active_timeout"] > 0 and s["end_of_flow"] > 20 and s["forced_end"] > 0


@pytest.mark.parametrize("name", ["dns_tcp_8053.pcap", "bigtcp-ipv6.pcap", "spb.pcap", "bgp-as-path-oobr.pcap"])
def test_flows_over_shards_of_real_captures(pcaps, sluice_bin, name):
    pcap = pcaps / name
    parts = read_proven(shards(pcap, 4), lambda s, p: sluice.flows_shard(s, p))
    merged = sluice.merge_flows(parts)
    whole = sluice.flows(pcap=str(pcap))
    assert merged.records.to_pylist() == whole.records.to_pylist()
    assert merged.summary == whole.summary
    lines, summary = cli_flows(sluice_bin, pcap)
    same_as_cli(merged, lines, summary)


def test_parts_pickle_and_merge_the_same(traffic):
    parts = read_proven(shards(traffic, 5), lambda s, p: sluice.flows_shard(s, p, idle=1.0))
    back = [pickle.loads(pickle.dumps(p)) for p in parts]
    assert [b.boundary for b in back] == [p.boundary for p in parts]
    assert [b.index for b in back] == list(range(5))
    assert [b._boundary_bytes() for b in back] == [p._boundary_bytes() for p in parts]
    assert sluice.merge_flows(back).records.to_pylist() == sluice.merge_flows(parts).records.to_pylist()
    f = sluice.Filter("tcp")
    fparts = read_proven(shards(traffic, 5), lambda s, p: f.run_shard(s, p))
    fback = [pickle.loads(pickle.dumps(p)) for p in fparts]
    assert [b.boundary for b in fback] == [p.boundary for p in fparts]
    assert f.merge(fback).report == f.merge(fparts).report
    assert type(back[0]) is sluice.FlowsShard and type(fback[0]) is sluice.FilterShard


@pytest.mark.parametrize("expr", ["tcp", "udp and src host 10.0.0.3", "ip"])
def test_filter_over_shards_equals_filter_run(traffic, tmp_path, expr):
    f = sluice.Filter(expr)
    out = tmp_path / "parts"
    out.mkdir()
    parts = read_proven(shards(traffic, 6), lambda s, p: f.run_shard(s, p, output_dir=out))
    merged = f.merge(parts)
    whole = f.run(pcap=str(traffic), write=str(tmp_path / "whole.pcap"))
    assert merged.packets.to_pylist() == whole.packets.to_pylist()
    report, want = merged.report, whole.report
    assert report.pop("written") == str(out) and want.pop("written") == str(tmp_path / "whole.pcap")
    assert report == want
    # The partitions, in order, hold what one run writes.
    joined = [r for i in range(6) for r in sluice.Filter(expr).run(pcap=str(out / f"part-{i:05}.pcap")).packets.to_pylist()]
    assert [(r["timestamp"], r["length"]) for r in joined] == [(r["timestamp"], r["length"]) for r in whole.packets.to_pylist()]
    assert parts[2].written == str(out / "part-00002.pcap")


def test_filter_shards_of_real_captures(pcaps):
    for name in ["dns_tcp_8053.pcap", "spb.pcap", "bigtcp-ipv4-vxlan-ipv4.pcap"]:
        pcap = pcaps / name
        f = sluice.Filter("ip or ip6", pcap=str(pcap))
        parts = read_proven(shards(pcap, 3), lambda s, p: f.run_shard(s, p))
        merged, whole = f.merge(parts), f.run(pcap=str(pcap))
        assert merged.report == whole.report and merged.packets.to_pylist() == whole.packets.to_pylist()


def test_what_cannot_be_merged_is_refused(traffic):
    parts = read_proven(shards(traffic, 4), lambda s, p: sluice.flows_shard(s, p))
    with pytest.raises(sluice.Error, match=r"its ranges end at byte \d+, not at its end \(\d+\): a range is missing"):
        sluice.merge_flows(parts[:3])
    with pytest.raises(sluice.Error, match=r"no parts to merge"):
        sluice.merge_flows([])
    with pytest.raises(sluice.Error, match=r"accounted with capacity 65536, idle 15000000000 ns"):
        sluice.merge_flows(parts, idle=2.0)
    with pytest.raises(TypeError, match=r"each a sluice.FlowsShard"):
        sluice.merge_flows([1, 2])
    with pytest.raises(ValueError, match=r"by \"table\" only"):
        sluice.flows_shard(shards(traffic, 1)[0], engine="ebpf")
    with pytest.raises(TypeError, match=r"no size"):
        sluice.flows_shard({"path": str(traffic), "start": 0, "end": 10})
    with pytest.raises(sluice.SourceError, match=r"missing.pcap"):
        sluice.flows_shard({"path": str(traffic.parent / "missing.pcap"), "start": 0, "end": 10, "size": 10})
    with pytest.raises(sluice.Error, match=r"not a flows part"):
        sluice.FlowsShard.from_bytes(b"\x00" * 20)
    with pytest.raises(ValueError, match=r"proven=: not a position"):
        sluice.flows_shard(shards(traffic, 2)[1], {"offset": "x"})
