"""Flow-affine mode: Program.partition splits each range of a capture by flow
into N buckets, Program.run_bucket runs one bucket as worker B of N; the
buckets merged (verdicts summed, each worker's per-CPU slot and hash entries
taken) equal `sluice run --threads N --json` on verdicts and maps, for the
DDoS rate limiter (per-source token buckets) and a per-CPU counter."""

import json
import os
import pickle
import struct
import subprocess
import types

import pytest

import sluice

RATE = {"rate_pps": 20, "burst": 4}


def udp_or_tcp(flow):
    """An Ethernet/IPv4 frame of FLOW: its own source address; TCP or UDP."""
    eth = b"\x02\x00\x00\x00\x00\x01" + b"\x02\x00\x00\x00\x00\x02" + b"\x08\x00"
    proto = 6 if flow % 2 else 17
    src = bytes([10, flow // 250, flow % 250, 1])
    l4 = struct.pack("!HHHH", 1000 + flow, 53, 8, 0) if proto == 17 else struct.pack("!HHIIHHHH", 1000 + flow, 80, 0, 0, 0x5002, 0, 0, 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 0, 0, 64, proto, 0, src, b"\xc0\x00\x02\x01")
    return eth + ip + l4


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    """A pcap of 3000 packets of 150 flows sending in bursts (faster than
    the rate limit lets through), every ninth record cut by the snapshot
    length (its wire length longer)."""
    path = tmp_path_factory.mktemp("affine") / "flows.pcap"
    seed = 12345
    at = 1_000_000_000_000
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i in range(3000):
            seed = (seed * 6364136223846793005 + 1442695040888963407) % 2**64
            flow = (seed >> 33) % 150
            at += (seed >> 20) % 400
            data = udp_or_tcp(flow)
            wire = len(data) + (50 if i % 9 == 0 else 0)
            f.write(struct.pack("<IIII", at // 10**6, at % 10**6, len(data), wire))
            f.write(data)
    return str(path)


def plan(sluice_bin, capture, k):
    """The capture in K ranges, as `sluice shards --json` plans them."""
    size = os.path.getsize(capture)
    out = subprocess.run(
        [sluice_bin, "shards", capture, "--split", str(-(-size // k)), "--json"],
        check=True, capture_output=True, text=True,
    ).stdout
    shards = json.loads(out)["shards"]
    assert len(shards) == k
    return [types.SimpleNamespace(index=i, **s) for i, s in enumerate(shards)]


def partitions(prog, shards, n):
    """Every range partitioned; a range whose first record is not the one
    the range before it ends at is read again from there (docs/shards.md)."""
    parts = [prog.partition(s, n) for s in shards]
    for i in range(1, len(parts)):
        before = parts[i - 1][0].boundary["next"]
        if parts[i][0].boundary["first"] != before:
            parts[i] = prog.partition(shards[i], n, proven=before)
    return parts


def cli(sluice_bin, obj, capture, n, sets):
    # Buckets split packets by flow, as --shard symmetric does (auto would read
    # an order-free program's capture by byte ranges: per-CPU values differ).
    args = [sluice_bin, "run", obj, "--pcap", capture, "--threads", str(n), "--shard", "symmetric", "--json"]
    args += ["--map-entries", "100000"]
    for k, v in sets.items():
        args += ["--set", f"{k}={v}"]
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)


def merged(results):
    """Verdicts summed; per-CPU entries: worker B's slot from bucket B;
    other entries: each worker's (a flow's state is in one bucket only)."""
    verdicts, maps = {}, {}
    for r in results:
        report = r.report
        for v, c in report["verdicts"].items():
            verdicts[v] = verdicts.get(v, 0) + c
        for m in report["maps"]:
            entries = maps.setdefault(m["name"], {})
            for e in m["entries"]:
                if e.get("cpus"):
                    # The other CPUs' slots are zeros in this bucket's run.
                    cpus = entries.setdefault(e["key"], list(e["cpus"]))
                    cpus[r.bucket] = e["cpus"][r.bucket]
                else:
                    assert entries.setdefault(e["key"], e["value"]) == e["value"], (m["name"], e)
    return verdicts, maps


def maps_of(report, n):
    maps = {}
    for m in report["maps"]:
        maps[m["name"]] = {e["key"]: e["cpus"] if e.get("cpus") else e["value"] for e in m["entries"]}
    return maps


@pytest.mark.parametrize("program,sets", [("xdp_ddos", RATE), ("xdp_count", {})])
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("n", [1, 2, 4])
def test_buckets_merged_equal_threads(bpf, sluice_bin, capture, program, sets, k, n):
    prog = sluice.Object(bpf(program)).program(set=sets)
    parts = partitions(prog, plan(sluice_bin, capture, k), n)
    assert sum(p.packets for p, _ in parts) == 3000
    results = []
    for b in range(n):
        r = prog.run_bucket(b, n, [blobs[b] for _, blobs in parts], map_entries=100000)
        assert (r.bucket, r.buckets, r.report["threads"]) == (b, n, n)
        results.append(r)
    verdicts, maps = merged(results)
    want = cli(sluice_bin, bpf(program), capture, n, sets)
    assert verdicts == want["verdicts"]
    assert sum(r.packets for r in results) == want["packets"] == 3000
    got = maps
    assert got == maps_of(want, n)
    if program == "xdp_ddos":
        assert want["verdicts"]["DROP"] > 100 and want["verdicts"]["PASS"] > 100
        assert len(got["rate_limit"]) == 150


def test_partitions_and_results_pickle(bpf, sluice_bin, capture):
    prog = sluice.Object(bpf("xdp_ddos")).program(set=RATE)
    shards = plan(sluice_bin, capture, 3)
    part, blobs = prog.partition(shards[1], 2)
    again = pickle.loads(pickle.dumps(part))
    assert isinstance(again, sluice.Partition)
    for name in ["index", "sharding", "buckets", "boundary", "frames", "packets", "per_bucket", "skipped", "snapped"]:
        assert getattr(again, name) == getattr(part, name), name
    assert again._boundary_bytes() == part._boundary_bytes()
    assert json.loads(part._boundary_bytes()) == part.boundary
    assert part.index == 1 and part.boundary["shard"]["start"] == shards[1].start
    assert sum(part.per_bucket) == part.packets == part.frames
    assert part.snapped > 0
    assert all(isinstance(b, bytes) for b in blobs) and len(blobs) == 2
    r = prog.run_bucket(1, 2, [blobs[1]])
    r2 = pickle.loads(pickle.dumps(r))
    assert (r2.bucket, r2.buckets, r2.report, r2.verdicts) == (1, 2, r.report, r.verdicts)
    assert r.packets == part.per_bucket[1]
    # The whole capture by its path: range 0, no boundary.
    whole, wblobs = prog.partition(capture, 2)
    assert whole.boundary is None and whole._boundary_bytes() is None
    assert whole.packets == 3000


def test_bad_arguments_raise_sluice_errors(bpf, sluice_bin, capture):
    prog = sluice.Object(bpf("xdp_count")).program()
    shards = plan(sluice_bin, capture, 3)
    p0, b0 = prog.partition(shards[0], 2)
    p1, b1 = prog.partition(shards[1], 2)
    with pytest.raises(sluice.Error, match=r"blob 0: bucket 0 of 2 \(symmetric\), but the run is bucket 1 of 2"):
        prog.run_bucket(1, 2, [b0[0]])
    with pytest.raises(sluice.Error, match="blob 1: range 0 after range 1"):
        prog.run_bucket(0, 2, [b1[0], b0[0]])
    with pytest.raises(sluice.Error, match="blob 0: not a bucket"):
        prog.run_bucket(0, 2, [b"not a bucket"])
    with pytest.raises(sluice.Error, match="not round-robin"):
        prog.partition(shards[0], 2, sharding="round-robin")
    with pytest.raises(ValueError, match="unknown sharding"):
        prog.partition(shards[0], 2, sharding="sideways")
    with pytest.raises(sluice.SourceError, match="nonexistent"):
        prog.partition("/nonexistent/x.pcap", 2)
    with pytest.raises(ValueError, match="proven=: not a position"):
        prog.partition(shards[1], 2, proven={"offset": "x"})
    with pytest.raises(TypeError, match="shard=: a sluice.Shard"):
        prog.partition(42, 2)
