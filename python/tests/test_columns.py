"""The per-packet table's cost columns: memory accesses per region (with
count_memory=True) and the error each run stopped with, summed against the
totals of `sluice run --json` on the same capture."""

import json
import subprocess

import pyarrow as pa
import pytest

import sluice
from conftest import frame, write_pcap

REGIONS = ["stack", "context", "packet", "map"]

# Long frames make bpf_trace_printk fail (its format ends inside a
# conversion): an error at run time that the verifier lets through.
FAULTY = r"""typedef unsigned int __u32;
#define SEC(n) __attribute__((section(n), used))
struct xdp_md { __u32 data, data_end, data_meta, ingress_ifindex, rx_queue_index, egress_ifindex; };
static long (*bpf_trace_printk)(const char *fmt, __u32 fmt_size, ...) = (void *) 6;
char _license[] SEC("license") = "GPL";

SEC("xdp") int faulty(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *end = (void *)(long)ctx->data_end;
    if (data + 100 > end)
        return 2;
    char fmt[] = "long %";
    bpf_trace_printk(fmt, sizeof(fmt));
    return 1;
}
"""


def cli_json(sluice_bin, obj, pcap, *args):
    out = subprocess.run(
        [sluice_bin, "run", obj, "--pcap", pcap, "--threads", "1", "--json", *args],
        capture_output=True, text=True,
    )
    return json.loads(out.stdout)


def column_sum(t, name):
    return sum(t.column(name).to_pylist())


def check_totals(t, report):
    """The table's columns add up to REPORT's totals."""
    n = report["packets"]
    assert t.num_rows == n
    assert column_sum(t, "helper_calls") == pytest.approx(report["helper_calls_per_packet"] * n)
    assert t.column("error").null_count == n - report["errors"]
    memory = report.get("memory_per_packet")
    if memory is None:
        assert not [c for c in t.column_names if c.endswith("_loads")]
        return
    for region in REGIONS:
        loads, stores = memory[region]
        assert column_sum(t, f"{region}_loads") == pytest.approx(loads * n)
        assert column_sum(t, f"{region}_stores") == pytest.approx(stores * n)


def test_memory_columns_add_up_to_the_clis_totals(bpf, tmp_path, sluice_bin):
    frames = [frame(17)] * 4 + [frame(6, size=90)] * 2 + [frame(1, size=70)]
    pcap = write_pcap(tmp_path / "seven.pcap", frames)
    obj = bpf("xdp_count")
    res = sluice.Object(obj).program().run(pcap=pcap, count_memory=True)
    cli = cli_json(sluice_bin, obj, pcap, "--count-memory")
    assert res.report["memory_per_packet"] == cli["memory_per_packet"]
    t = res.packets
    assert t.column_names[7:] == [
        "stack_loads", "stack_stores", "context_loads", "context_stores",
        "packet_loads", "packet_stores", "map_loads", "map_stores", "error",
    ]
    check_totals(t, cli)
    # xdp_count reads the packet and updates a map value for every packet.
    assert min(t.column("packet_loads").to_pylist()) > 0
    assert min(t.column("map_stores").to_pylist()) > 0
    # Threads and engines give the same rows.
    for kw in ({"threads": 2}, {"engine": "interpreter"}):
        other = sluice.Object(obj).program().run(pcap=pcap, count_memory=True, **kw).packets
        assert other.select(t.column_names[7:-1]).equals(t.select(t.column_names[7:-1]))


def test_a_shared_capture_adds_up(bpf, pcaps, sluice_bin):
    pcap = str(pcaps / "IGMP_V2.pcap")
    obj = bpf("xdp_parse_tx")
    res = sluice.Object(obj).program().run(pcap=pcap, count_memory=True)
    check_totals(res.packets, cli_json(sluice_bin, obj, pcap, "--count-memory"))


def test_without_counting_there_are_no_memory_columns(bpf):
    res = sluice.Object(bpf("xdp_count")).program().run(gen="udp,count=10")
    t = res.packets
    assert "packet_loads" not in t.column_names
    assert t.column("error").null_count == 10
    check_totals(t, res.report)


def test_errors_column(compile_c, tmp_path, sluice_bin):
    obj = compile_c(FAULTY, "faulty")
    frames = [frame(size=64), frame(size=128), frame(size=64), frame(size=150), frame(size=160)]
    pcap = write_pcap(tmp_path / "five.pcap", frames)
    res = sluice.Object(obj).program().run(pcap=pcap, count_memory=True)
    cli = cli_json(sluice_bin, obj, pcap, "--count-memory")
    assert cli["errors"] == 3
    t = res.packets
    check_totals(t, cli)
    assert t.schema.field("error").type == pa.dictionary(pa.uint32(), pa.string())
    errors = t.column("error").to_pylist()
    assert [e is None for e in errors] == [True, False, True, False, False]
    # The messages are the report's, packet by packet.
    first = {e["packet"]: e["message"] for e in cli["first_errors"]}
    assert {i + 1: e for i, e in enumerate(errors) if e is not None} == first
    assert "format string ends inside a conversion" in errors[1]
    # One dictionary entry per distinct message.
    assert len(t.column("error").chunk(0).dictionary) == len(set(first.values()))
    # A failed run's costs are zeros.
    assert t.column("instructions").to_pylist()[1] == 0
    assert t.column("stack_stores").to_pylist()[1] == 0
    assert t.column("verdict").to_pylist()[1] == "ERROR"
