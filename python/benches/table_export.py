"""Benchmark (2): the per-packet table handed to pyarrow, in rows per
second (the target: >= 20M rows/s), for 2M rows; then what keeping the rows
costs the run itself, and pandas and polars reading the same table."""

import polars as pl
import pyarrow as pa

import sluice
from common import PACKETS, best, capture, obj


def main():
    pcap = capture()
    prog = sluice.Object(obj("xdp_ddos")).program()
    print(f"(2) the per-packet table of xdp_ddos over {PACKETS:,} packets (runs: best of 3; reads: best of 5):")
    t_without, _ = best(lambda: prog.run(pcap=pcap, per_packet=False))
    t_with, res = best(lambda: prog.run(pcap=pcap))
    rows = res.count
    t_export, table = best(lambda: res.packets, runs=5)
    assert isinstance(table, pa.Table) and table.num_rows == rows
    print(f"  into pyarrow (res.packets): {t_export * 1e3:.3f} ms: {rows / t_export / 1e6:,.0f} M rows/s "
          f"({table.nbytes / 1e6:.0f} MB, not copied)")
    t_stream, _ = best(lambda: pa.table(res.packet_stream), runs=5)
    print(f"  pa.table(res.packet_stream): {t_stream * 1e3:.3f} ms: {rows / t_stream / 1e6:,.0f} M rows/s")
    keep = t_with - t_without
    print(f"  the run keeping rows: {t_with:.3f} s, without: {t_without:.3f} s: "
          f"{keep * 1e3:+.0f} ms, {rows / keep / 1e6:.0f} M rows/s recorded" if keep > 0 else
          f"  the run keeping rows: {t_with:.3f} s, without: {t_without:.3f} s (within noise)")
    t_pandas, df = best(lambda: table.to_pandas())
    print(f"  .to_pandas(): {t_pandas:.3f} s: {rows / t_pandas / 1e6:.1f} M rows/s")
    t_polars, pdf = best(lambda: pl.from_arrow(table))
    print(f"  pl.from_arrow(): {t_polars * 1e3:.3f} ms: {rows / t_polars / 1e6:,.0f} M rows/s")
    assert len(df) == pdf.height == rows


if __name__ == "__main__":
    main()
