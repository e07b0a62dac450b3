"""sluice.Tc: a tc configuration (lines in) that packets run through,
counters out: the report equal to `sluice run --tc FILE --json` on the same
packets, verdicts, mirred's deliveries, every filter's counters as text and
as a pyarrow table, packets kept per route, and the errors of bad lines."""

import json
import subprocess

import pytest

import sluice
from conftest import frame, write_pcap

TIMING = {"seconds", "packets_per_second"}

RULES = [
    "qdisc add dev v0 clsact",
    "qdisc add dev v1 clsact",
    "# UDP: mirrored to v1 and on; TCP: dropped",
    "filter add dev v0 ingress prio 1 protocol ip u32 match ip protocol 17 0xff action mirred egress mirror dev v1",
    "filter add dev v0 ingress prio 2 protocol ip u32 match ip protocol 6 0xff action drop",
    "filter add dev v0 egress prio 5 matchall action pass",
    "filter add dev v1 egress prio 3 protocol ip flower ip_proto udp action drop",
]


def untimed(report):
    return {k: v for k, v in report.items() if k not in TIMING}


def cli_json(sluice_bin, *args):
    out = subprocess.run([sluice_bin, "run", *args, "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture
def rules(tmp_path):
    path = tmp_path / "rules.tc"
    path.write_text("\n".join(RULES) + "\n")
    return path


@pytest.fixture
def capture(tmp_path):
    frames = [frame(17), frame(6, size=80), frame(17, size=100), frame(1), frame(17)]
    return write_pcap(tmp_path / "in.pcap", frames)


def test_a_run_is_the_clis(rules, capture, sluice_bin):
    tc = sluice.Tc(path=rules)
    res = tc.run(pcap=capture, dev="v0")
    cli = cli_json(sluice_bin, "--tc", str(rules), "--tc-dev", "v0", "--pcap", capture)
    assert untimed(res.report) == untimed(cli)
    # UDP goes on through mirred's pipe, TCP is shot, ICMP meets no filter.
    assert res.verdicts == cli["verdicts"] == {"PIPE": 3, "SHOT": 1, "UNSPEC": 1}
    assert res.count == 5
    assert res.sent == [{"dev": "v1", "hook": "egress", "delivered": 0, "consumed": 3}]


def test_egress_and_generated_traffic_are_the_clis(rules, sluice_bin):
    res = sluice.Tc(path=rules).run(gen="udp,count=20", dev="v1", hook="egress")
    cli = cli_json(sluice_bin, "--tc", str(rules), "--tc-dev", "v1", "--tc-hook", "egress", "--gen", "udp,count=20")
    assert untimed(res.report) == untimed(cli)
    assert res.verdicts == {"SHOT": 20}


def test_lines_and_a_file_give_the_same_counters(rules, capture):
    from_file = sluice.Tc(path=rules).run(pcap=capture, dev="v0")
    from_lines = sluice.Tc(RULES).run(pcap=capture, dev="v0")
    from_text = sluice.Tc("\n".join(RULES), name="mine").run(pcap=capture, dev="v0")
    assert from_lines.report["config"] == "<lines>"
    assert from_text.report["config"] == "mine"
    for res in (from_lines, from_text):
        assert {k: v for k, v in untimed(res.report).items() if k != "config"} == {
            k: v for k, v in untimed(from_file.report).items() if k != "config"
        }


def test_every_filters_counters(rules, capture):
    res = sluice.Tc(path=rules).run(pcap=capture, dev="v0")
    shown = res.shown
    assert list(shown) == ["v0 ingress", "v0 egress", "v1 egress"]
    assert "action order 1: mirred (Egress Mirror to device v1) pipe" in shown["v0 ingress"]
    # At ingress the bytes are past the Ethernet header (skb->len), as tc counts them.
    assert "Sent 186 bytes 3 pkt" in shown["v0 ingress"]
    t = res.filters
    assert t.column_names == [
        "dev", "hook", "chain", "prio", "protocol", "kind", "handle", "order", "action",
        "packets", "bytes", "drops", "overlimits",
    ]
    rows = t.to_pylist()
    mirred = next(r for r in rows if r["action"] == "mirred")
    assert (mirred["dev"], mirred["hook"], mirred["prio"], mirred["kind"]) == ("v0", "ingress", 1, "u32")
    assert (mirred["handle"], mirred["order"]) == ("800::800", 1)
    assert (mirred["packets"], mirred["bytes"]) == (3, 64 + 100 + 64 - 3 * 14)
    drop = next(r for r in rows if r["prio"] == 2 and r["action"])
    assert (drop["action"], drop["packets"], drop["bytes"], drop["drops"]) == ("gact", 1, 66, 1)
    # u32's hash table heads a filter's rules: a row without an action.
    table = next(r for r in rows if r["handle"] == "800:")
    assert table["action"] is None and table["packets"] is None
    flower = next(r for r in rows if r["kind"] == "flower")
    assert (flower["dev"], flower["hook"], flower["packets"], flower["bytes"]) == ("v1", "egress", 3, 228)
    idle = next(r for r in rows if r["kind"] == "matchall")
    assert (idle["hook"], idle["packets"]) == ("egress", 0)
    # The table is the report's JSON in columns.
    for r in (r for r in rows if r["action"]):
        entries = res.report["filters"][f"{r['dev']} {r['hook']}"]
        e = next(e for e in entries if e["pref"] == r["prio"] and e.get("options", {}).get("actions"))
        a = next(a for a in e["options"]["actions"] if a["order"] == r["order"])
        assert a["stats"]["packets"] == r["packets"]


def test_packets_per_route(rules, capture):
    res = sluice.Tc(path=rules).run(pcap=capture, dev="v0", output=["pass", "SHOT"])
    assert [len(p) for p in res.output("drop")] == [80]
    assert [len(p) for p in res.output("pass")] == [64, 100, 64, 64]
    assert res.output("SHOT") == res.output("drop")
    with pytest.raises(ValueError, match="kept no redirect packets"):
        res.output("redirect")


def test_bad_configurations(tmp_path, sluice_bin, capture):
    bad = ["qdisc add dev v0 clsact", "filter add dev v0 ingress prio 1 u32 match nonsense"]
    path = tmp_path / "bad.tc"
    path.write_text("\n".join(bad) + "\n")
    out = subprocess.run([sluice_bin, "run", "--tc", str(path), "--pcap", capture], capture_output=True, text=True)
    want = out.stderr.strip().splitlines()[-1].removeprefix("sluice: ")
    with pytest.raises(sluice.TcError) as e:
        sluice.Tc(path=path)
    assert str(e.value) == want
    with pytest.raises(sluice.TcError, match="^<lines>: "):
        sluice.Tc(bad)
    two = sluice.Tc(["qdisc add dev a clsact", "qdisc add dev b clsact"])
    with pytest.raises(sluice.TcError, match="which device"):
        two.run(gen="udp,count=1")
    with pytest.raises(sluice.TcError, match="no qdisc"):
        sluice.Tc([]).run(gen="udp,count=1")
    with pytest.raises(ValueError, match="hook"):
        two.run(gen="udp,count=1", dev="a", hook="sideways")
    with pytest.raises(TypeError, match="exactly one of lines=, path="):
        sluice.Tc()
