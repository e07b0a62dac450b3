"""Program.profile: the cost model's parameters and per-packet table equal
to `sluice profile --json` on the same packets; the plot; errors."""

import json
import subprocess

import pytest

import sluice
from conftest import frame

SIZES = ["udp,size=64,count=4", "udp,size=256,count=4", "udp,size=1024,count=4"]


def cli_profile(sluice_bin, *args):
    out = subprocess.run([sluice_bin, "profile", *args, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def test_the_model_equals_the_clis(bpf, sluice_bin):
    p = sluice.Object(bpf("xdp_parse_tx")).program().profile(gen=SIZES)
    gens = [a for g in SIZES for a in ("--gen", g)]
    cli = cli_profile(sluice_bin, bpf("xdp_parse_tx"), *gens)
    for key in ["alpha", "beta", "gamma", "delta"]:
        assert getattr(p, key) == pytest.approx(cli[key], abs=1e-9), key
        assert p.report[key] == pytest.approx(cli[key], abs=1e-9), key
    assert p.report["model"] == cli["model"]
    assert p.report["object"] == cli["object"]
    t = p.packets
    assert t.num_rows == cli["model"]["packets"] == 12
    assert sorted(t.column("len").to_pylist()) == [64] * 4 + [256] * 4 + [1024] * 4
    assert set(t.column("verdict").to_pylist()) == {"TX"}
    # The means per length are the model's rows.
    df = t.to_pandas()
    means = df.groupby("len")["insns"].mean().to_dict()
    assert means == {r["len"]: pytest.approx(r["insns_mean"]) for r in cli["model"]["rows"]}


def test_a_capture_and_a_filter(bpf, pcaps, sluice_bin):
    pcap = str(pcaps / "dns_tcp_8053.pcap")
    p = sluice.Object(bpf("xdp_count")).program().profile(pcap=pcap, filter="tcp", limit=5)
    cli = cli_profile(sluice_bin, bpf("xdp_count"), "--pcap", pcap, "--filter", "tcp", "--limit", "5")
    assert p.packets.num_rows == cli["model"]["packets"]
    assert (p.alpha, p.beta) == (pytest.approx(cli["alpha"]), pytest.approx(cli["beta"]))


def test_plot_is_a_figure_of_cost_against_length(bpf):
    matplotlib = pytest.importorskip("matplotlib")
    p = sluice.Object(bpf("xdp_parse_tx")).program().profile(gen=SIZES)
    fig = p.plot()
    assert isinstance(fig, matplotlib.figure.Figure)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "packet length (bytes)"
    (line,) = ax.get_lines()
    xs, ys = line.get_data()
    assert list(xs) == [64, 1024]
    assert ys[0] == pytest.approx(p.alpha + p.beta * 64)
    assert ys[1] == pytest.approx(p.alpha + p.beta * 1024)
    assert len(ax.collections[0].get_offsets()) == 12


def test_packets_in_memory_and_errors(bpf, tmp_path):
    prog = sluice.Object(bpf("xdp_count")).program()
    p = prog.profile(packets=[frame(size=64)] * 3 + [frame(size=200)] * 3)
    assert p.packets.column("len").to_pylist() == [64] * 3 + [200] * 3
    assert "alpha=" in repr(p)
    with pytest.raises(sluice.Error, match="no packet ran to a verdict"):
        prog.profile(packets=[])
    with pytest.raises(sluice.SourceError):
        prog.profile(pcap=str(tmp_path / "missing.pcap"))
