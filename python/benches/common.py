"""What the Python benchmarks share: where the build is (the release
`sluice` binary and example objects, or SLUICE_BIN and SLUICE_BPF_DIR), the
2M-packet capture they run over (written once by sluice's generator into
target/bench-python/), and a timer that keeps the best of a few runs."""

import os
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
SLUICE = os.environ.get("SLUICE_BIN", str(TARGET / "release" / "sluice"))
BPF = Path(os.environ.get("SLUICE_BPF_DIR", TARGET / "bpf"))
WORK = TARGET / "bench-python"

# The capture: 2,000,000 packets over 2,600 flows, HTTP, HTTPS and DNS
# clients, interleaved in time (each stream paced by its rate).
PACKETS = 2_000_000
TRAFFIC = [
    "tcp,flows=1000,count=800000,rate=400000,src=10.1.0.0/16,dport=80",
    "tcp,flows=600,count=600000,rate=300000,src=10.2.0.0/16,dport=443",
    "udp,flows=1000,count=600000,rate=300000,src=10.3.0.0/16,dport=53",
]


def obj(name):
    """The example object NAME's path."""
    return str(BPF / f"{name}.o")


def capture():
    """The benchmarks' capture (written the first time): its path."""
    path = WORK / "mix-2m.pcap"
    if not path.exists():
        WORK.mkdir(parents=True, exist_ok=True)
        gen = [a for spec in TRAFFIC for a in ("--gen", spec)]
        tmp = path.with_suffix(".tmp")
        subprocess.run(
            [SLUICE, "run", obj("xdp_pass"), *gen, "--threads", "1", "--out-pass", str(tmp), "--json"],
            check=True,
            capture_output=True,
        )
        tmp.rename(path)
    return str(path)


def best(f, runs=3):
    """(seconds, result): the fastest of RUNS calls of f()."""
    times, result = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        result = f()
        times.append(time.perf_counter() - t0)
    return min(times), result


def best_of_each(fs, runs=5):
    """[(seconds, result)] per function of FS: the fastest of RUNS calls
    each, the calls interleaved (a, b, c, a, b, c, ...) so that a change in
    the machine's load falls on all of them alike."""
    times = [[] for _ in fs]
    results = [None] * len(fs)
    for _ in range(runs):
        for i, f in enumerate(fs):
            t0 = time.perf_counter()
            results[i] = f()
            times[i].append(time.perf_counter() - t0)
    return [(min(t), r) for t, r in zip(times, results)]


def line(what, seconds, packets):
    """A result line: what, seconds, packets per second."""
    print(f"  {what:<48} {seconds:8.3f} s  {packets / seconds / 1e6:8.2f} M packets/s")
