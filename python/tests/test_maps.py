"""Maps: an object's maps listed; a program's maps read, written, deleted,
iterated, as dicts and Arrow tables, decoded through BTF; runs that continue
on the maps and reset(); globals and map sizes (--set, --map-size) and map
contents before a run, against `sluice run --json`; per-CPU maps and
threads; RunResult.maps; the errors of a bad map, key or value."""

import ipaddress
import json
import subprocess

import pyarrow as pa
import pytest

import sluice
from conftest import frame, write_pcap

TIMING = {"seconds", "packets_per_second"}

# A hash with a struct key (an address, a pad left out) and a struct value
# (an enum, a nested struct with a MAC address, an array); globals in
# .rodata, .data and .bss.
SHAPES = """
#define SEC(n) __attribute__((section(n), used))
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name
typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;

enum color { RED, GREEN = 5, BLUE };
struct inner { __u16 port; __u8 mac[6]; };
struct key { __u32 saddr; __u16 sport; __u16 pad; };
struct value { __u64 count; enum color color; struct inner in; __u32 hist[4]; };

struct {
    __uint(type, 1); /* BPF_MAP_TYPE_HASH */
    __uint(max_entries, 8);
    __type(key, struct key);
    __type(value, struct value);
} table SEC(".maps");

volatile const __u32 limit = 7;
__u32 mode = 1;
__u64 seen;

SEC("xdp") int shapes(void *ctx)
{
    struct key k = { .saddr = 0x0100000a, .sport = 53 };
    struct value *v = bpf_map_lookup_elem(&table, &k);
    if (v)
        v->count++;
    seen++;
    return limit > 3 ? 2 : 1;
}
char _license[] SEC("license") = "GPL";
"""


def cli_json(sluice_bin, *args):
    out = subprocess.run([sluice_bin, "run", *args, "--threads", "1", "--json"], check=True, capture_output=True, text=True)
    return {k: v for k, v in json.loads(out.stdout).items() if k not in TIMING}


def cli_error(sluice_bin, *args):
    """The message `sluice run ARGS` fails with (after `sluice: `)."""
    out = subprocess.run([sluice_bin, "run", *args], capture_output=True, text=True)
    assert out.returncode != 0
    line = out.stderr.strip().splitlines()[0]
    assert line.startswith("sluice: "), out.stderr
    return line[len("sluice: "):]


def untimed(report):
    return {k: v for k, v in report.items() if k not in TIMING}


def test_an_object_lists_its_maps(bpf):
    maps = {m["name"]: m for m in sluice.Object(bpf("xdp_ddos")).maps}
    assert maps["blocklist_v4"] == {
        "name": "blocklist_v4", "type": "lpm_trie", "key_size": 8, "value_size": 8,
        "max_entries": 4096, "flags": 1, "cpus": 1,
    }
    assert maps["drop_stats"]["type"] == "percpu_array"
    assert maps["rate_limit"]["type"] == "lru_hash"
    assert (maps["rate_limit"]["key_size"], maps["rate_limit"]["value_size"]) == (16, 16)
    assert maps["protected_ports"]["max_entries"] == 64
    assert any(m["type"] == "array" and "rodata" in m["name"] for m in maps.values())


def test_the_first_run_is_the_clis_and_later_runs_continue(bpf, tmp_path, sluice_bin):
    pcap = write_pcap(tmp_path / "five.pcap", [frame(17)] * 3 + [frame(6, size=80)] * 2)
    prog = sluice.Object(bpf("xdp_count")).program()
    res = prog.run(pcap=pcap)
    assert untimed(res.report) == cli_json(sluice_bin, bpf("xdp_count"), "--pcap", pcap)
    assert res.maps["proto_stats"] == {17: {"packets": 3, "bytes": 192}, 6: {"packets": 2, "bytes": 160}}
    stats = prog.maps["proto_stats"]
    assert stats[17] == [{"packets": 3, "bytes": 192}]
    assert stats.info == {
        "name": "proto_stats", "type": "percpu_array", "key_size": 4, "value_size": 16,
        "max_entries": 256, "flags": 0, "cpus": 1,
    }
    again = prog.run(pcap=pcap)
    assert again.maps["proto_stats"][17] == {"packets": 6, "bytes": 384}
    assert res.maps["proto_stats"][17] == {"packets": 3, "bytes": 192}
    assert stats[17] == [{"packets": 6, "bytes": 384}]
    prog.reset()
    assert stats[17] == [{"packets": 0, "bytes": 0}]
    assert untimed(prog.run(pcap=pcap).report) == untimed(res.report)


def test_globals_and_map_sizes_as_the_cli_sets_them(bpf, sluice_bin):
    obj = sluice.Object(bpf("xdp_ddos"))
    prog = obj.program(set={"rate_pps": 1, "burst": 2}, map_size={"rate_limit": 16})
    res = prog.run(gen="udp,flows=4,count=100")
    cli = cli_json(sluice_bin, bpf("xdp_ddos"), "--gen", "udp,flows=4,count=100",
                   "--set", "rate_pps=1", "--set", "burst=2", "--map-size", "rate_limit=16")
    assert res.verdicts == cli["verdicts"]
    assert res.report["maps"] == cli["maps"]
    assert prog.maps["rate_limit"].info["max_entries"] == 16
    rodata = next(n for n in prog.maps if "rodata" in n)
    assert prog.maps[rodata][0] == {"rate_pps": 1, "burst": 2}
    assert res.maps[rodata] == {0: {"rate_pps": 1, "burst": 2}}


def test_map_contents_before_a_run_as_the_cli_writes_them(bpf, sluice_bin):
    packets = [frame(17, src=bytes([10, 1, 2, 3]))] * 4 + [frame(17, src=bytes([192, 168, 0, 1]))] * 2
    prog = sluice.Object(bpf("xdp_ddos")).program()
    blocklist = prog.maps["blocklist_v4"]
    blocklist["10.0.0.0/8"] = 0
    res = prog.run(packets=packets)
    assert res.verdicts == {"DROP": 4, "PASS": 2}
    assert blocklist.keys() == [ipaddress.ip_network("10.0.0.0/8")]
    assert blocklist[ipaddress.ip_network("10.0.0.0/8")] == 4
    assert blocklist["10.9.9.9/32"] == 4  # the longest match, as the kernel's lookup
    # The same as --map-update, as maps= of Object.program.
    pcap_args = ["--gen", "udp,count=5"]
    prog2 = sluice.Object(bpf("xdp_ddos")).program(maps={"protected_ports": {53: 1}})
    cli = cli_json(sluice_bin, bpf("xdp_ddos"), *pcap_args, "--map-update", "protected_ports", "53", "1")
    res2 = prog2.run(gen="udp,count=5")
    assert res2.verdicts == cli["verdicts"]
    assert res2.report["maps"] == cli["maps"]
    prog2.reset()
    assert prog2.maps["protected_ports"].to_dict() == {53: 1}


def test_a_map_as_a_dict(bpf):
    prog = sluice.Object(bpf("xdp_ddos")).program()
    ports = prog.maps["protected_ports"]
    assert len(ports) == 0 and 53 not in ports
    ports[53] = 1
    ports[b"\x50\x00"] = 2  # port 80, little-endian bytes of the key's size
    ports["443"] = 3  # text, as --map-update takes it
    assert len(ports) == 3 and 53 in ports
    assert ports[80] == 2 and ports.get(443) == 3 and ports.get(8080) is None and ports.get(8080, 0) == 0
    assert sorted(ports) == [53, 80, 443]
    assert sorted(ports.items()) == [(53, 1), (80, 2), (443, 3)]
    assert sorted(ports.values()) == [1, 2, 3]
    assert ports.to_dict() == {53: 1, 80: 2, 443: 3}
    del ports[80]
    with pytest.raises(KeyError):
        ports[80]
    with pytest.raises(KeyError):
        del ports[80]
    assert sorted(prog.maps) == sorted(m["name"] for m in sluice.Object(bpf("xdp_ddos")).maps)
    assert "protected_ports" in prog.maps and "nope" not in prog.maps
    assert len(prog.maps) == len(list(prog.maps))
    assert repr(ports).startswith('sluice.Map("protected_ports", type="hash"')


def test_struct_keys_and_values_through_btf(compile_c):
    prog = sluice.Object(compile_c(SHAPES, "shapes")).program()
    table = prog.maps["table"]
    key = {"saddr": "10.0.0.1", "sport": 53}
    table[key] = {"count": 1, "color": "GREEN", "in": {"port": 80, "mac": "02:00:00:00:00:01"}, "hist": (1, 2, 3, 4)}
    table[{"saddr": ipaddress.ip_address("10.0.0.2"), "sport": 1}] = {"color": 6}
    res = prog.run(gen="udp,count=3")
    assert res.verdicts == {"PASS": 3}
    assert table[key] == {
        "count": 4, "color": "GREEN",
        "in": {"port": 80, "mac": "02:00:00:00:00:01"}, "hist": (1, 2, 3, 4),
    }
    other = table[{"saddr": "10.0.0.2", "sport": 1}]
    assert other["color"] == "BLUE" and other["count"] == 0 and other["hist"] == (0, 0, 0, 0)
    keys = table.keys()
    assert {"saddr": ipaddress.ip_address("10.0.0.1"), "sport": 53} in keys
    d = table.to_dict()
    assert d[(ipaddress.ip_address("10.0.0.1"), 53)]["count"] == 4
    assert table[(ipaddress.ip_address("10.0.0.1"), 53)]["count"] == 4  # a dict key back
    assert res.maps["table"][(ipaddress.ip_address("10.0.0.1"), 53)]["count"] == 4
    # Global data: .rodata read-only, .data and .bss written by name.
    names = list(prog.maps)
    data = next(n for n in names if n.endswith(".data"))
    bss = next(n for n in names if n.endswith(".bss"))
    assert prog.maps[bss][0] == {"seen": 3}
    prog.maps[data][0] = {"mode": 9}
    assert prog.maps[data][0] == {"mode": 9}
    rodata = next(n for n in names if n.endswith(".rodata"))
    with pytest.raises(sluice.MapError, match="read-only"):
        prog.maps[rodata][0] = {"limit": 1}


def test_maps_as_arrow_tables(bpf, compile_c):
    prog = sluice.Object(bpf("xdp_count")).program()
    prog.run(packets=[frame(17)] * 3)
    t = prog.maps["proto_stats"].to_arrow()
    assert isinstance(t, pa.Table)
    assert t.column_names == ["key", "cpu", "packets", "bytes"]
    assert t.schema.field("packets").type == pa.uint64()
    assert t.num_rows == 256
    row = t.filter(pa.compute.equal(t["key"], 17)).to_pylist()
    assert row == [{"key": 17, "cpu": 0, "packets": 3, "bytes": 192}]

    prog = sluice.Object(bpf("xdp_ddos")).program()
    prog.maps["blocklist_v4"]["10.0.0.0/8"] = 7
    t = prog.maps["blocklist_v4"].to_arrow()
    assert t.to_pylist() == [{"key": "10.0.0.0/8", "value": 7}]
    assert prog.maps["rate_limit"].to_arrow().column_names == ["key", "tokens", "last_ns"]

    prog = sluice.Object(compile_c(SHAPES, "shapes")).program()
    prog.maps["table"][{"saddr": "10.0.0.1", "sport": 53}] = {"color": "RED", "hist": (1, 2, 3, 4)}
    t = prog.maps["table"].to_arrow()
    assert t.column_names == ["saddr", "sport", "count", "color", "in", "hist"]
    assert t.schema.field("sport").type == pa.uint16()
    assert t.schema.field("in").type == pa.struct(
        [pa.field("port", pa.uint16(), nullable=False), pa.field("mac", pa.string(), nullable=False)])
    assert t.schema.field("hist").type == pa.list_(pa.field("item", pa.uint32(), nullable=False), 4)
    assert t.to_pylist()[0]["saddr"] == "10.0.0.1"
    assert t.to_pylist()[0]["hist"] == [1, 2, 3, 4]


def test_per_cpu_maps_and_threads(bpf, sluice_bin):
    # A fresh program is loaded again with a CPU per thread.
    prog = sluice.Object(bpf("xdp_count")).program()
    res = prog.run(gen="udp,flows=8,count=400", threads=2)
    assert prog.cpus == 2
    cli = cli_json(sluice_bin, bpf("xdp_count"), "--gen", "udp,flows=8,count=400")
    assert res.maps["proto_stats"][17] == {"packets": 400, "bytes": cli_bytes(cli)}
    per_cpu = prog.maps["proto_stats"][17]
    assert len(per_cpu) == 2 and sum(c["packets"] for c in per_cpu) == 400
    with pytest.raises(sluice.MapError, match="threads=3: this program's per-CPU maps hold values for 2 CPUs"):
        prog.run(gen="udp,count=10", threads=3)
    # Given up front.
    prog = sluice.Object(bpf("xdp_count")).program(cpus=4)
    stats = prog.maps["proto_stats"]
    assert stats.info["cpus"] == 4
    stats[17] = [{"packets": i} for i in range(4)]
    assert [c["packets"] for c in stats[17]] == [0, 1, 2, 3]
    stats[17] = {"packets": 5}  # one value: every CPU's
    assert [c["packets"] for c in stats[17]] == [5] * 4
    prog.run(gen="udp,count=100", threads=4)
    assert sum(c["packets"] for c in stats[17]) == 120
    with pytest.raises(sluice.MapError, match="3 per-CPU values given; the map has 4 CPUs"):
        stats[17] = [{"packets": 1}] * 3


def cli_bytes(report):
    stats = next(m for m in report["maps"] if m["name"] == "proto_stats")
    value = next(e for e in stats["entries"] if e["key"] == "17")["value"]
    return int(value.split("bytes: ")[1].rstrip("}"))


def test_bad_maps_keys_and_values_raise(bpf, sluice_bin):
    prog = sluice.Object(bpf("xdp_ddos")).program()
    with pytest.raises(sluice.MapError, match=r"no map `nope`; the object has: blocklist_v4, "):
        prog.maps["nope"]
    ports = prog.maps["protected_ports"]
    with pytest.raises(sluice.MapError, match=r"map protected_ports: key: 3 bytes given; this needs 2"):
        ports[b"abc"] = 1
    with pytest.raises(sluice.MapError, match=r"key: a struct \(dict\) given; this is an unsigned 2-byte integer"):
        ports[{"port": 1}] = 1
    with pytest.raises(sluice.MapError, match=r"value: 300 does not fit an unsigned 1-byte integer"):
        ports[53] = 300
    with pytest.raises(sluice.MapError, match="an int, bytes, str, dict, tuple or ipaddress object, not float"):
        ports[53] = 1.5
    with pytest.raises(sluice.MapError, match=r"value: no field `tokenz`; the fields are: tokens, last_ns"):
        prog.maps["rate_limit"]["::1"] = {"tokenz": 1}
    with pytest.raises(sluice.MapError, match=r"an LPM key is ADDR/LEN, not `10.0.0.0`"):
        prog.maps["blocklist_v4"]["10.0.0.0"] = 1
    with pytest.raises(sluice.MapError, match="array entries are not deleted"):
        del prog.maps["drop_stats"][0]
    with pytest.raises(sluice.MapError, match=r"maps=.*protected_ports"):
        sluice.Object(bpf("xdp_ddos")).program(maps={"protected_ports": 1})
    with pytest.raises(sluice.MapError, match="no map `nope`"):
        sluice.Object(bpf("xdp_ddos")).program(maps={"nope": {1: 1}})
    # --set and --map-size of what the object lacks: the CLI's messages.
    obj = sluice.Object(bpf("xdp_ddos"))
    with pytest.raises(sluice.ObjectError) as e:
        obj.program(set={"nope": 1})
    assert str(e.value) == cli_error(sluice_bin, bpf("xdp_ddos"), "--gen", "udp,count=1", "--set", "nope=1")
    with pytest.raises(sluice.ObjectError) as e:
        obj.program(map_size={"nope": 1})
    assert str(e.value) == cli_error(sluice_bin, bpf("xdp_ddos"), "--gen", "udp,count=1", "--map-size", "nope=1")
    with pytest.raises(sluice.ObjectError) as e:
        obj.program(set={"burst": 1 << 70})
    assert "does not fit" in str(e.value)
