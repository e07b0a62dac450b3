"""`--out-table` of the command line read with pyarrow and pandas: the rows
of `sluice run` and `sluice monitor flows` equal their `--json` and
Python's own tables."""

import json
import subprocess

import pandas as pd
import pyarrow as pa
import pyarrow.feather
import pyarrow.parquet as pq
import pytest

import sluice


def run(sluice_bin, *args):
    out = subprocess.run([sluice_bin, *args], check=True, capture_output=True, text=True)
    return out.stdout


def test_run_parquet_and_csv_read_with_pyarrow_and_pandas(bpf, sluice_bin, tmp_path):
    obj = bpf("xdp_parse_tx")
    gens = ["--gen", "udp,count=20", "--gen", "tcp,count=10"]
    parquet = tmp_path / "run.parquet"
    report = json.loads(run(sluice_bin, "run", obj, *gens, "--threads", "1", "--json", "--out-table", str(parquet)))
    t = pq.read_table(parquet)
    assert t.num_rows == report["packets"] == 30
    df = t.to_pandas()
    assert df["verdict"].value_counts().to_dict() == report["verdicts"]
    mine = sluice.Object(obj).program().run(gen=["udp,count=20", "tcp,count=10"]).packets
    assert t.column("instructions").to_pylist() == mine.column("instructions").to_pylist()
    assert t.column("verdict").to_pylist() == mine.column("verdict").to_pylist()
    csv = tmp_path / "run.csv"
    run(sluice_bin, "run", obj, *gens, "--out-table", str(csv))
    assert pd.read_csv(csv)["instructions"].tolist() == df["instructions"].tolist()


def test_flows_feather_equals_pythons_flows(sluice_bin, tmp_path):
    spec = "udp,flows=8,count=80"
    path = tmp_path / "flows.feather"
    lines = run(sluice_bin, "monitor", "flows", "--gen", spec, "--json", "--out-table", str(path)).splitlines()
    t = pyarrow.feather.read_table(path)
    assert t.num_rows == len(lines) - 1 == 8
    assert t.equals(sluice.flows(gen=spec).records)
    df = pd.read_feather(path)
    assert df["packetDeltaCount"].sum() == 80
    assert str(df["flowStartMilliseconds"].dtype).startswith("datetime64")


def test_an_unknown_extension_is_refused(bpf, sluice_bin, tmp_path):
    out = subprocess.run(
        [sluice_bin, "run", bpf("xdp_count"), "--gen", "udp,count=1", "--out-table", str(tmp_path / "x.xlsx")],
        capture_output=True,
        text=True,
    )
    assert out.returncode != 0
    assert ".parquet, .arrow, .feather, .ipc or .csv" in out.stderr
