"""RunResult.coverage: the C source lines, branches and functions a run
exercised, for a program compiled with clang -g in the test whose branches
the packets take one way; coverages adding up; the tracefile equal to the
one `sluice run --coverage` writes; threads and engines alike; genhtml
drawing it."""

import json
import shutil
import subprocess

import pytest

import sluice
from conftest import frame, write_pcap

SOURCE = r"""typedef unsigned int __u32;
typedef unsigned long long __u64;
#define SEC(n) __attribute__((section(n), used))
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name
struct xdp_md { __u32 data, data_end, data_meta, ingress_ifindex, rx_queue_index, egress_ifindex; };
static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *) 1;
char _license[] SEC("license") = "GPL";
struct { __uint(type, 2); __uint(max_entries, 4); __type(key, __u32); __type(value, __u64); } seen SEC(".maps");

static __attribute__((noinline)) int count(__u32 k)
{
    __u64 *v = bpf_map_lookup_elem(&seen, &k);
    if (!v) /* NULL */
        return 0;
    *v += k; /* COUNT */
    return 1;
}

static __attribute__((noinline)) int too_short(struct xdp_md *ctx)
{
    return count(ctx->ingress_ifindex) ? 1 : 0; /* SHORT */
}

SEC("xdp") int cover(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *end = (void *)(long)ctx->data_end;
    if (data + 100 > end) /* SHORT? */
        return too_short(ctx); /* CALL */
    return count(2) + 1; /* LONG */
}
"""

LONG, SHORT = frame(size=128), frame(size=64)


def line_of(marker):
    """The line of MARKER in SOURCE, from 1."""
    return next(i for i, l in enumerate(SOURCE.splitlines(), 1) if marker in l)


@pytest.fixture
def cover(compile_c):
    """The program and its source file's path (as its line info names it)."""
    obj = compile_c(SOURCE, "cover")
    return sluice.Object(obj).program(), obj[: -len(".o")] + ".c"


def ways(cov, src, line):
    """The counts of the two ways of LINE's jumps, sorted."""
    return sorted(n for (f, l, _, _), n in cov.branches.items() if (f, l) == (src, line))


def test_lines_branches_and_functions_of_one_way_packets(cover):
    prog, src = cover
    res = prog.run(packets=[LONG] * 5, coverage=True)
    assert res.report["engine"] == "interpreter"
    cov = res.coverage
    assert isinstance(cov, sluice.Coverage)
    lines = cov.lines
    assert lines[(src, line_of("/* SHORT? */"))] == 5
    assert lines[(src, line_of("/* LONG */"))] == 5
    assert lines[(src, line_of("/* CALL */"))] == 0
    assert lines[(src, line_of("/* SHORT */"))] == 0
    assert lines[(src, line_of("/* COUNT */"))] == 5
    assert ways(cov, src, line_of("/* SHORT? */")) == [0, 5]
    assert ways(cov, src, line_of("/* NULL */")) == [0, 5]
    assert cov.functions == {(src, "cover"): 5, (src, "count"): 5, (src, "too_short"): 0}
    s = cov.summary
    assert s == res.report["coverage"]
    assert s["lines"]["found"] == len(lines)
    assert s["lines"]["hit"] == sum(1 for n in lines.values() if n > 0)
    assert s["branches"]["hit"] < s["branches"]["found"]
    assert s["functions"] == {"found": 3, "hit": 2}
    assert "lines " in repr(cov)


def test_coverages_add_up(cover):
    prog, src = cover
    a = prog.run(packets=[LONG] * 3, coverage=True).coverage
    b = prog.run(packets=[SHORT] * 2, coverage=True).coverage
    both = prog.run(packets=[LONG] * 3 + [SHORT] * 2, coverage=True).coverage
    assert a + b == both
    total = sluice.Coverage()
    assert total.lines == {}
    total += a
    total.add(b)
    assert total == both
    assert total.lines[(src, line_of("/* SHORT */"))] == 2
    assert total.lines[(src, line_of("/* CALL */"))] == 2
    assert total.functions[(src, "too_short")] == 2
    assert total.lines[(src, line_of("/* LONG */"))] == 3
    assert ways(total, src, line_of("/* SHORT? */")) == [2, 3]
    assert total.functions[(src, "count")] == 5
    # Adding did not change the addends.
    assert a.lines[(src, line_of("/* SHORT */"))] == 0
    assert b.lines[(src, line_of("/* LONG */"))] == 0
    assert sum([a, b], sluice.Coverage()) == both


def test_the_tracefile_is_the_clis(cover, tmp_path, sluice_bin):
    prog, src = cover
    pcap = write_pcap(tmp_path / "mixed.pcap", [LONG, SHORT, LONG, LONG])
    out = tmp_path / "cli.info"
    cli = subprocess.run(
        [sluice_bin, "run", prog.object, "--pcap", pcap, "--threads", "1",
         "--coverage", str(out), "--json"],
        check=True, capture_output=True, text=True,
    )
    res = prog.run(pcap=pcap, coverage=True)
    assert res.coverage.lcov() == out.read_text()
    assert res.report["coverage"] == json.loads(cli.stdout)["coverage"]
    text = res.coverage.lcov("unit tests")
    assert text.startswith(f"TN:unit_tests\nSF:{src}\n")
    assert f"DA:{line_of('/* SHORT */')},1\n" in text
    assert f"DA:{line_of('/* LONG */')},3\n" in text
    assert "FNDA:4,count\n" in text
    assert text.endswith("end_of_record\n")


def test_threads_and_engines_count_alike(cover):
    prog, _ = cover
    packets = [LONG, SHORT] * 20
    one = prog.run(packets=packets, coverage=True).coverage
    assert prog.run(packets=packets, coverage=True, threads=2).coverage == one
    assert prog.run(packets=packets, coverage=True, engine="interpreter").coverage == one


def test_without_coverage_there_is_none(cover):
    prog, _ = cover
    res = prog.run(packets=[LONG])
    assert res.coverage is None
    assert "coverage" not in res.report


def test_genhtml_draws_it(cover, tmp_path):
    genhtml = shutil.which("genhtml")
    if genhtml is None:
        pytest.fail("genhtml is missing: install the Debian package lcov (./dev.sh setup does)")
    prog, _ = cover
    info = tmp_path / "cover.info"
    prog.run(packets=[LONG, SHORT], coverage=True).coverage.write(info)
    html = tmp_path / "html"
    subprocess.run(
        [genhtml, "--branch-coverage", "--quiet", str(info), "--output-directory", str(html)],
        check=True,
    )
    assert (html / "index.html").exists()
    page = next(html.rglob("cover.c.gcov.html"))
    assert "too_short" in page.read_text()


def test_a_write_that_fails_raises(cover, tmp_path):
    prog, _ = cover
    cov = prog.run(packets=[LONG], coverage=True).coverage
    path = tmp_path / "no" / "such" / "x.info"
    with pytest.raises(sluice.Error, match=f"^{path}: "):
        cov.write(path)
