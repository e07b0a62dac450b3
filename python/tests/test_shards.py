"""Shards from Python: sluice.plan over a glob, Program.run_shard over every
shard and Program.merge equal to Program.run over the whole captures and to
`sluice run --json`; pickling of programs, shards, results and redos; the
check and its re-reads with a position forced wrong; per-packet tables and
routes' packets written as partitions."""

import glob
import json
import pickle
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sluice
from conftest import frame, write_pcap

# What differs between one process and a merge: the time taken, what was read.
DIFFERS = {"seconds", "packets_per_second", "source", "merged"}


def same(report):
    return {k: v for k, v in report.items() if k not in DIFFERS}


def cli_json(sluice_bin, *args):
    out = subprocess.run([sluice_bin, "run", *args, "--threads", "1", "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def frames(n, seed=0):
    """N frames: UDP, TCP and ICMP, of sizes that vary, from a few sources."""
    out = []
    for i in range(n):
        x = (i * 2654435761 + seed) % 1000003
        proto = (17, 6, 1)[x % 3]
        src = bytes([10, 0, x % 5, 1 + x % 7])
        out.append(frame(proto, size=64 + x % 400, src=src))
    return out


@pytest.fixture
def captures(tmp_path):
    """Three captures of a few hundred frames, and their concatenation."""
    parts = [frames(300 + 70 * i, seed=i) for i in range(3)]
    paths = [write_pcap(tmp_path / f"cap-{i}.pcap", f, start_ns=10**9 * (i + 1)) for i, f in enumerate(parts)]
    # The records of each after one header: the same packets, timestamps and all.
    whole = tmp_path / "whole.pcap"
    blobs = [open(p, "rb").read() for p in paths]
    whole.write_bytes(blobs[0] + b"".join(b[24:] for b in blobs[1:]))
    return paths, str(whole)


def run_all(prog, shards, **options):
    """Every shard run, the ranges sluice.check lists read again until none
    (these captures' zero-filled frames fool the guess now and then)."""
    results = [prog.run_shard(s, **options) for s in shards]
    while True:
        redo = sluice.check(results)
        if not redo:
            return results
        for r in redo:
            results[r.index] = prog.run_shard(r.shard, proven=r.position, **options)


def test_plan_of_a_glob(tmp_path, captures):
    paths, _ = captures
    shards = sluice.plan(str(tmp_path / "cap-*.pcap"))
    assert [s.path for s in shards] == sorted(paths)
    assert [s.index for s in shards] == [0, 1, 2]
    assert all(s.whole and s.start == 0 and s.end == s.size for s in shards)
    cut = sluice.plan([tmp_path / "cap-0.pcap"], split=4000)
    assert len(cut) > 3
    assert cut[0].start == 0 and cut[-1].end == cut[-1].size
    assert all(a.end == b.start for a, b in zip(cut, cut[1:]))
    assert sluice.plan(str(tmp_path / "cap-0.pcap"), split="4K") == sluice.plan(str(tmp_path / "cap-0.pcap"), split=4096)
    with pytest.raises(sluice.SourceError, match="no file matches"):
        sluice.plan(str(tmp_path / "none-*.pcap"))
    with pytest.raises(sluice.Error, match="split size"):
        sluice.plan(paths, split="lots")


@pytest.mark.parametrize("split", [None, 3000, 777])
def test_run_shard_and_merge_is_one_process(bpf, sluice_bin, captures, split):
    paths, whole = captures
    for name in ["xdp_count", "classify"]:
        prog = sluice.Object(bpf(name)).program()
        results = run_all(prog, sluice.plan(paths, split=split))
        merged = prog.merge(results)
        one = sluice.Object(bpf(name)).program().run(pcap=whole)
        cli = cli_json(sluice_bin, bpf(name), "--pcap", whole)
        costs = {"insns_per_packet", "helper_calls_per_packet"} if name == "classify" else set()
        strip = lambda r: {k: v for k, v in same(r).items() if k not in costs}  # noqa: E731
        assert strip(merged.report) == strip(one.report)
        assert strip(json.loads(merged.to_json())) == strip(cli)
        assert merged.verdicts == one.verdicts and merged.count == one.count
        assert merged.maps == one.maps
        m = merged.report["merged"]
        assert m["shards"] == len(results)
        assert merged.map_policies == m["map_policies"]
        assert one.map_policies is None
        assert sum(r.packets for r in results) == one.count


def test_policies_are_stated_and_overridden(bpf, captures):
    paths, whole = captures
    prog = sluice.Object(bpf("xdp_count")).program()
    results = run_all(prog, sluice.plan(paths, split=5000))
    assert prog.merge(results).map_policies == {"proto_stats": "sum"}
    kept = prog.merge(results, policies={"proto_stats": "keep"})
    assert kept.map_policies == {"proto_stats": "keep"}
    assert len(kept.report["merged"]["kept"]["proto_stats"]) == len(results)
    with pytest.raises(sluice.MergeError, match="no such map; the object has: proto_stats"):
        prog.merge(results, policies={"nope": "sum"})
    with pytest.raises(sluice.MergeError, match="not a policy"):
        prog.merge(results, policies={"proto_stats": "average"})


def test_pickling_round_trips(bpf, captures):
    paths, whole = captures
    prog = sluice.Object(bpf("xdp_ddos")).program(set={"rate_pps": 10**9}, maps={"protected_ports": {53: 1}})
    again = pickle.loads(pickle.dumps(prog))
    assert again.name == prog.name and again.object == prog.object
    assert again.maps["protected_ports"][53] == 1
    shards = sluice.plan(paths, split=4000)
    assert pickle.loads(pickle.dumps(shards)) == shards
    results = [pickle.loads(pickle.dumps(again.run_shard(pickle.loads(pickle.dumps(s))))) for s in shards]
    for r in sluice.check(results):
        results[r.index] = pickle.loads(pickle.dumps(again.run_shard(r.shard, proven=r.position)))
    assert sluice.check(results) == []
    assert [r.index for r in results] == list(range(len(shards)))
    assert results[1].boundary["shard"]["start"] == shards[1].start
    assert sum(r.packets for r in results) == 300 + 370 + 440
    merged = pickle.loads(pickle.dumps(prog)).merge(results, policies={"rate_limit": "union"})
    one = sluice.Object(bpf("xdp_ddos")).program(set={"rate_pps": 10**9}, maps={"protected_ports": {53: 1}}).run(pcap=whole)
    assert merged.verdicts == one.verdicts
    assert merged.maps == one.maps


def test_a_wrong_position_is_found_and_read_again(bpf, captures):
    paths, whole = captures
    prog = sluice.Object(bpf("xdp_count")).program()
    shards = sluice.plan(paths[0], split=2500)
    assert len(shards) >= 4
    results = run_all(prog, shards)
    # Range 2 read from range 1's first record: a record start, but not
    # where range 1 ended.
    forced = results[1].boundary["first"]
    results[2] = prog.run_shard(shards[2], proven=forced)
    assert results[2].redone
    with pytest.raises(sluice.MergeError, match="not proven"):
        prog.merge(results)
    redo = sluice.check(results)
    assert [r.index for r in redo] == [2]
    assert redo[0].shard == shards[2]
    assert redo[0].position == results[1].boundary["next"]
    assert pickle.loads(pickle.dumps(redo))[0].position == redo[0].position
    results[2] = prog.run_shard(redo[0].shard, proven=redo[0].position)
    assert sluice.check(results) == []
    merged = prog.merge(results)
    assert merged.report["merged"]["redone"] == sum(r.redone for r in results) >= 1
    one = sluice.Object(bpf("xdp_count")).program().run(pcap=paths[0])
    assert same(merged.report) == same(one.report)
    with pytest.raises(sluice.Error, match="not a position"):
        prog.run_shard(shards[2], proven={"offset": "here"})
    with pytest.raises(sluice.MergeError, match="missing"):
        prog.merge(results[:-1])


def test_tables_and_outputs_are_written_as_partitions(bpf, tmp_path, captures):
    paths, whole = captures
    prog = sluice.Object(bpf("xdp_drop")).program()
    shards = sluice.plan(paths, split=6000)
    tables, outputs = tmp_path / "table", tmp_path / "out"
    results = run_all(prog, shards, table_dir=tables, output_dir=outputs)
    for r in results:
        assert r.table_path == str(tables / f"part-{r.index:05}.parquet")
        assert r.output_paths["drop"] == str(outputs / "drop" / f"part-{r.index:05}.pcap")
    # No temporary file left; a task run again writes the same files.
    assert sorted(p.name for p in tables.iterdir()) == [f"part-{i:05}.parquet" for i in range(len(shards))]
    prog.run_shard(shards[1], table_dir=tables, output_dir=outputs)
    assert sorted(p.name for p in tables.iterdir()) == [f"part-{i:05}.parquet" for i in range(len(shards))]
    table = pa.concat_tables(pq.read_table(p) for p in sorted(glob.glob(str(tables / "*.parquet"))))
    one = sluice.Object(bpf("xdp_drop")).program().run(pcap=whole, output="drop")
    assert table.num_rows == one.count
    assert table.column("verdict").to_pylist() == one.packets.column("verdict").to_pylist()
    dropped = [sluice.Object(bpf("xdp_pass")).program().run(pcap=p).count for p in sorted(glob.glob(str(outputs / "drop" / "*.pcap")))]
    assert sum(dropped) == len(one.output("drop"))


def test_bad_input_raises_the_sluice_errors(bpf, tmp_path):
    prog = sluice.Object(bpf("xdp_count")).program()
    with pytest.raises(sluice.SourceError):
        prog.run_shard({"path": str(tmp_path / "missing.pcap"), "start": 0, "end": 10, "size": 10, "index": 0})
    with pytest.raises(sluice.Error, match="not a pickled"):
        sluice._sluice._shard_result_from_bytes(b"junk")
    with pytest.raises(sluice.Error, match="not a pickled"):
        sluice._sluice._program_from_bytes(b"junk")
    garbage = tmp_path / "garbage.pcap"
    garbage.write_bytes(b"\x00" * 100)
    with pytest.raises(sluice.SourceError):
        prog.run_shard(sluice.plan(str(garbage))[0])
