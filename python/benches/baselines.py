"""Benchmark (3): sluice against the way Python users process traces today,
a loop over the packets in Python with dpkt or scapy, on the same 2M-packet
capture: flow accounting (5-tuple -> packets, IP bytes) and filtering
(`tcp and dst port 80`, counted). sluice: the flow-accounting example
(programs/flows.c) through `prog.run(pcap=...)`, its `flows` map read
from the report; the filter through `prog.run(pcap=..., filter=...)`.
scapy is slow: it runs on the first SCAPY_PACKETS packets, its time scaled
per packet to the whole capture (said in the output). Every tool's counts
are checked against the others'. Targets: >= 50x dpkt, >= 500x scapy."""

import re
import time
from collections import defaultdict

import dpkt
from scapy.layers.inet import IP, TCP, UDP
from scapy.utils import PcapReader

import sluice
from common import PACKETS, best, capture, line, obj

SCAPY_PACKETS = 20_000
EXPR = "tcp and dst port 80"


def dpkt_flows(pcap, limit=None):
    """5-tuple -> [packets, IP bytes], with dpkt."""
    flows = defaultdict(lambda: [0, 0])
    with open(pcap, "rb") as f:
        for n, (_, buf) in enumerate(dpkt.pcap.Reader(f)):
            if n == limit:
                break
            ip = dpkt.ethernet.Ethernet(buf).data
            if not isinstance(ip, dpkt.ip.IP):
                continue
            l4 = ip.data
            ports = (l4.sport, l4.dport) if isinstance(l4, (dpkt.tcp.TCP, dpkt.udp.UDP)) else (0, 0)
            flow = flows[(ip.src, ip.dst, ip.p, *ports)]
            flow[0] += 1
            flow[1] += ip.len
    return dict(flows)


def dpkt_filter(pcap, limit=None):
    """Packets of `tcp and dst port 80`, with dpkt."""
    n_match = 0
    with open(pcap, "rb") as f:
        for n, (_, buf) in enumerate(dpkt.pcap.Reader(f)):
            if n == limit:
                break
            ip = dpkt.ethernet.Ethernet(buf).data
            if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.tcp.TCP) and ip.data.dport == 80:
                n_match += 1
    return n_match


def scapy_flows(pcap, limit):
    """5-tuple -> [packets, IP bytes], with scapy, over the first LIMIT packets."""
    flows = defaultdict(lambda: [0, 0])
    with PcapReader(pcap) as reader:
        for n, pkt in enumerate(reader):
            if n == limit:
                break
            if IP not in pkt:
                continue
            ip = pkt[IP]
            l4 = TCP if TCP in pkt else UDP if UDP in pkt else None
            ports = (pkt[l4].sport, pkt[l4].dport) if l4 else (0, 0)
            flow = flows[(ip.src, ip.dst, ip.proto, *ports)]
            flow[0] += 1
            flow[1] += ip.len
    return dict(flows)


def scapy_filter(pcap, limit):
    """Packets of `tcp and dst port 80`, with scapy, over the first LIMIT packets."""
    n_match = 0
    with PcapReader(pcap) as reader:
        for n, pkt in enumerate(reader):
            if n == limit:
                break
            if TCP in pkt and pkt[TCP].dport == 80:
                n_match += 1
    return n_match


def sluice_flows(prog, pcap):
    """(flows, packets, bytes) of the flows map after a run over the capture."""
    res = prog.run(pcap=pcap, per_packet=False, map_entries=1 << 20)
    flows = next(m for m in res.report["maps"] if m["name"] == "flows")
    packets = sum(int(re.search(r"packets: (\d+)", e["value"]).group(1)) for e in flows["entries"])
    nbytes = sum(int(re.search(r"bytes: (\d+)", e["value"]).group(1)) for e in flows["entries"])
    return flows["len"], packets, nbytes


def report(task, t_sluice, t_dpkt, t_scapy_each):
    t_scapy = t_scapy_each * PACKETS
    line(f"{task}: sluice", t_sluice, PACKETS)
    line(f"{task}: dpkt", t_dpkt, PACKETS)
    line(f"{task}: scapy (scaled from {SCAPY_PACKETS:,} packets)", t_scapy, PACKETS)
    print(f"  {task}: sluice is {t_dpkt / t_sluice:.0f}x dpkt, {t_scapy / t_sluice:.0f}x scapy")


def main():
    pcap = capture()
    print(f"(3) sluice vs per-packet Python loops (dpkt {dpkt.__version__}, scapy) over {PACKETS:,} packets:")
    flows_prog = sluice.Object(obj("flows")).program()
    t_sluice, (n_flows, n_packets, n_bytes) = best(lambda: sluice_flows(flows_prog, pcap))
    t_dpkt, by_dpkt = best(lambda: dpkt_flows(pcap), runs=1)
    assert (n_flows, n_packets, n_bytes) == (
        len(by_dpkt),
        sum(v[0] for v in by_dpkt.values()),
        sum(v[1] for v in by_dpkt.values()),
    ), ((n_flows, n_packets, n_bytes), len(by_dpkt))
    t0 = time.perf_counter()
    by_scapy = scapy_flows(pcap, SCAPY_PACKETS)
    t_scapy_each = (time.perf_counter() - t0) / SCAPY_PACKETS
    assert sorted(v for v in by_scapy.values()) == sorted(dpkt_flows(pcap, SCAPY_PACKETS).values())
    print(f"  flow accounting: {n_flows:,} flows, {n_packets:,} packets, {n_bytes:,} IP bytes (all three agree)")
    report("flows", t_sluice, t_dpkt, t_scapy_each)

    pass_prog = sluice.Object(obj("xdp_pass")).program()
    t_sluice, res = best(lambda: pass_prog.run(pcap=pcap, filter=EXPR, per_packet=False))
    t_dpkt, n_dpkt = best(lambda: dpkt_filter(pcap), runs=1)
    assert res.count == n_dpkt > 0, (res.count, n_dpkt)
    t0 = time.perf_counter()
    n_scapy = scapy_filter(pcap, SCAPY_PACKETS)
    t_scapy_each = (time.perf_counter() - t0) / SCAPY_PACKETS
    assert n_scapy == dpkt_filter(pcap, SCAPY_PACKETS)
    print(f"  filter `{EXPR}`: {n_dpkt:,} packets (sluice and dpkt agree; scapy on its subset too)")
    report("filter", t_sluice, t_dpkt, t_scapy_each)


if __name__ == "__main__":
    main()
