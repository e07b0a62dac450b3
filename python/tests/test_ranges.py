"""Program.run(threads=N) over a capture file: order-free programs run by
byte ranges (shard="auto"), equal to one thread and to `sluice run --threads
N --json`; others sharded by flow, with the reason; RunResult.shard and
shard_note as the report's keys."""

import json
import subprocess

import pytest

import sluice
from conftest import frame, write_pcap

# What differs between thread counts: time, threads, how they shared, each
# CPU's part of per-CPU values (their sum stays).
VARYING = {"seconds", "packets_per_second", "threads", "shard", "shard_note"}


def comparable(report):
    out = {k: v for k, v in report.items() if k not in VARYING}
    for m in out["maps"]:
        for e in m["entries"]:
            e.pop("cpus", None)
            e.pop("summed", None)
    return out


def untimed(report):
    return {k: v for k, v in report.items() if k not in {"seconds", "packets_per_second"}}


def cli_json(sluice_bin, *args):
    out = subprocess.run([sluice_bin, "run", *args, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


@pytest.fixture
def capture(tmp_path):
    """3000 packets of many flows and protocols, some malformed."""
    frames = []
    for i in range(3000):
        src = bytes([10, 0, i % 7, i % 251])
        frames.append(frame([17, 6, 1][i % 3], size=64 + i % 50, src=src))
        if i % 97 == 0:
            frames.append(b"\x01" * (i % 30))
    return write_pcap(tmp_path / "many.pcap", frames)


@pytest.mark.parametrize("name", ["xdp_count", "xdp_parse_tx"])
def test_ranges_give_one_threads_result_and_the_clis_report(bpf, capture, sluice_bin, name):
    obj = sluice.Object(bpf(name))
    one = obj.program(cpus=4).run(pcap=capture)
    assert one.shard is None and one.shard_note is None
    for threads in (2, 4):
        res = obj.program(cpus=4).run(pcap=capture, threads=threads)
        assert res.shard == "ranges"
        assert res.shard_note is None
        assert comparable(res.report) == comparable(one.report)
        assert res.packets.to_pylist() == one.packets.to_pylist()
        cli = cli_json(sluice_bin, bpf(name), "--pcap", capture, "--threads", str(threads), "--cpus", "4")
        assert cli["shard"] == "ranges"
        assert comparable(cli) == comparable(res.report)


def test_order_bound_programs_are_sharded_by_flow_and_say_why(bpf, capture, sluice_bin):
    prog = sluice.Object(bpf("classify")).program(cpus=2)
    res = prog.run(pcap=capture, threads=2)
    assert res.shard == "symmetric"
    assert res.shard_note == "not by ranges: classify calls bpf_map_update_elem"
    cli = cli_json(sluice_bin, bpf("classify"), "--pcap", capture, "--threads", "2")
    assert (cli["shard"], cli["shard_note"]) == (res.shard, res.shard_note)
    # Asked for, ranges are refused with the command line's message.
    with pytest.raises(sluice.Error) as e:
        sluice.Object(bpf("classify")).program(cpus=2).run(pcap=capture, threads=2, shard="ranges")
    assert str(e.value) == "--shard ranges: classify calls bpf_map_update_elem (--shard auto shards it by flow)"
    failed = subprocess.run(
        [sluice_bin, "run", bpf("classify"), "--pcap", capture, "--threads", "2", "--shard", "ranges"],
        capture_output=True,
        text=True,
    )
    assert failed.returncode != 0 and str(e.value) in failed.stderr


def test_a_flow_sharding_is_taken_as_asked(bpf, capture):
    prog = sluice.Object(bpf("xdp_count")).program(cpus=2)
    res = prog.run(pcap=capture, threads=2, shard="directional")
    assert res.shard == "directional"
    # Packets in memory cannot be cut: auto shards them by flow.
    mem = sluice.Object(bpf("xdp_count")).program(cpus=2).run(packets=[frame()] * 10, threads=2)
    assert mem.shard == "symmetric"
    assert "not a capture file that can be cut" in mem.shard_note
    with pytest.raises(ValueError, match="shard=: unknown sharding `bytes`"):
        prog.run(pcap=capture, threads=2, shard="bytes")
