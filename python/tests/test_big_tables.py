"""A per-packet table of a million rows, read back by pyarrow, pandas,
polars and DuckDB: every reader sees the same rows and the same verdict
counts as the report."""

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import sluice

ROWS = 1_000_000


@pytest.fixture(scope="module")
def res(bpf):
    """xdp_ddos over a million generated packets: one source over its rate
    (dropped), 100 clients under it (passed)."""
    prog = sluice.Object(bpf("xdp_ddos")).program()
    return prog.run(
        gen=[
            "udp,flows=100,count=500000,rate=50000,src=10.1.0.0/16,dport=80",
            "tcp,flows=1,count=500000,rate=50000,src=10.9.9.9/32,dport=443",
        ]
    )


def test_pyarrow_reads_a_million_rows(res):
    t = res.packets
    assert t.num_rows == ROWS == res.count
    assert t.column("index").to_numpy()[-1] == ROWS
    costs = res.report["insns_per_packet"]
    assert pc.mean(t.column("instructions")).as_py() == pytest.approx(costs["mean"], rel=1e-9)
    assert pc.max(t.column("instructions")).as_py() == costs["max"]
    counts = {
        row["values"]: row["counts"] for row in pc.value_counts(t.column("verdict").combine_chunks()).to_pylist()
    }
    assert counts == res.verdicts
    assert set(counts) == {"PASS", "DROP"}
    # The timestamps are the generator's, in order.
    ts = t.column("timestamp").cast(pa.int64())
    assert pc.all(pc.greater_equal(pc.pairwise_diff(ts.combine_chunks())[1:], 0)).as_py()


def test_pandas_reads_a_million_rows(res):
    df = res.packets.to_pandas()
    assert len(df) == ROWS
    assert df["verdict"].value_counts().to_dict() == res.verdicts
    assert int(df["instructions"].max()) == res.report["insns_per_packet"]["max"]


def test_polars_reads_a_million_rows(res):
    df = pl.from_arrow(res.packets)
    assert df.height == ROWS
    counts = dict(df.group_by("verdict").len().iter_rows())
    assert counts == res.verdicts
    # And straight from the PyCapsule stream, without pyarrow's table.
    direct = pl.DataFrame(res.packet_stream)
    assert direct.height == ROWS
    assert direct["instructions"].sum() == df["instructions"].sum()
    assert direct["verdict"].to_list() == df["verdict"].to_list()


def test_duckdb_queries_a_million_rows(res):
    packets = res.packets  # noqa: F841 (DuckDB finds the table by its name)
    rows = duckdb.sql("select verdict, count(*) from packets group by verdict").fetchall()
    assert dict(rows) == res.verdicts
    (n, heaviest) = duckdb.sql("select count(*), max(instructions) from packets").fetchall()[0]
    assert n == ROWS
    assert heaviest == res.report["insns_per_packet"]["max"]
