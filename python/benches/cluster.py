"""Benchmark (4): sluice.cluster on two single-CPU Ray nodes (two ``ray
start`` processes on this machine, each pinned to a CPU of its own with
taskset) against one process on one CPU (``sluice run --threads 1``
under taskset, one file after another), the same capture set: COPIES
copies of the 2M-packet capture, the DDoS example. Prints the speed-up
(the goal: at least 1.7x), then the scaling model's terms measured on
the same cluster (per-task overhead, the driver's cost per result, the
flow-affine shuffle's cost per packet) and what they predict for 100
nodes on a 10 TB trace set (docs/performance.md, docs/cluster.md)."""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import sluice
import sluice.cluster
from common import SLUICE, WORK, capture, obj

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from cluster_captures import write_set  # noqa: E402
from ray_cluster import Cluster  # noqa: E402

# 24 copies (48M packets, 72 ranges): enough work per task that the
# fixed costs (tasks, Ray's own processes) do not hide the scaling.
COPIES = int(os.environ.get("CLUSTER_COPIES", "24"))
PROGRAM = "xdp_ddos"
NODES = 2


def capture_set():
    """COPIES hard links to the 2M-packet capture: (paths, packets)."""
    pcap = Path(capture())
    folder = WORK / "cluster-set"
    folder.mkdir(exist_ok=True)
    paths = []
    for k in range(COPIES):
        p = folder / f"mix-{k:02}.pcap"
        if not p.exists():
            os.link(pcap, p)
        paths.append(str(p))
    return paths


def one_cpu(paths):
    """Seconds and packets of ``sluice run`` over each file, one process after another on CPU 0."""
    seconds, packets = 0.0, 0
    for p in paths:
        t0 = time.perf_counter()
        out = subprocess.run(
            ["taskset", "-c", "0", SLUICE, "run", obj(PROGRAM), "--pcap", p, "--threads", "1", "--json"],
            check=True,
            capture_output=True,
        )
        seconds += time.perf_counter() - t0
        packets += json.loads(out.stdout)["packets"]
    return seconds, packets


def timed(f, runs=3):
    """The best of ``runs`` calls of ``f``: (seconds, result)."""
    best, result = None, None
    for _ in range(runs):
        t0 = time.perf_counter()
        result = f()
        t = time.perf_counter() - t0
        best = t if best is None else min(best, t)
    return best, result


def main():
    paths = capture_set()
    t_one, packets = min((one_cpu(paths) for _ in range(3)), key=lambda r: r[0])
    print(f"(4) {PROGRAM} over {COPIES} x 2M packets ({packets:,}), best of 3:", flush=True)
    print(f"  one process on one CPU (sluice run --threads 1, file after file) {t_one:8.3f} s", flush=True)
    with tempfile.TemporaryDirectory() as marks:
        # Object stores of 1 GiB: a flow-affine bucket of the 2M packets fits.
        c = Cluster(marks, pin=[0, 1], object_store=1 << 30)
        os.environ.update(c.token_env)
        import ray  # after the cluster's token is set: Ray reads it once

        try:
            ray.init(address=c.address, logging_level="WARNING", log_to_driver=False)
            run = lambda **kw: sluice.cluster.run(obj(PROGRAM), paths, progress=False, **kw)  # noqa: E731
            run()  # workers started, the object read once
            t_two, res = timed(run)
            assert res.count == packets, (res.count, packets)
            ranges = len(sluice.plan(paths, 64 << 20))
            print(f"  two single-CPU Ray nodes (sluice.cluster.run, {ranges} ranges) {t_two:8.3f} s", flush=True)
            print(f"  speed-up: {t_one / t_two:.2f}x (goal: >= 1.7x)", flush=True)
            model(paths, packets, t_one, t_two, run)
        finally:
            ray.shutdown()
            c.stop()


def model(paths, packets, t_one, t_two, run):
    """The scaling model's terms, measured, and its prediction."""
    per_packet = t_one / packets
    with tempfile.TemporaryDirectory() as d:
        tiny, _ = write_set(Path(d), files=64, per_file=10)
        t_tiny, _ = timed(lambda: sluice.cluster.run(obj(PROGRAM), tiny, progress=False))
        prog = sluice.Object(obj(PROGRAM)).program()
        results = [prog.run_shard(s) for s in sluice.plan(tiny)]
        t_merge, _ = timed(lambda: (sluice.check(results), prog.merge(results)))
    per_result = t_merge / len(tiny)
    # A task's cost beyond its packets, in a node's CPU-seconds.
    per_task = max(0.0, (t_tiny - t_merge) * NODES / len(tiny))
    # The shuffle on one copy (its buckets fit in the object stores).
    one = paths[:1]
    t_plain, res = timed(lambda: sluice.cluster.run(obj(PROGRAM), one, progress=False))
    t_aff, _ = timed(
        lambda: sluice.cluster.run(obj(PROGRAM), one, progress=False, flow_affine=True, buckets=NODES), runs=2
    )
    shuffle = max(0.0, (t_aff - t_plain) * NODES / res.count)
    print("  the model, measured:", flush=True)
    print(f"    packet cost c            {per_packet * 1e9:8.1f} ns per packet (one CPU)")
    print(f"    per-task overhead o      {per_task * 1e3:8.2f} ms per task (node CPU, 64 tiny tasks)")
    print(f"    driver per result m      {per_result * 1e3:8.3f} ms per result (check and merge)")
    print(f"    shuffle s                {shuffle * 1e9:8.1f} ns per packet (flow-affine, 2 buckets, one copy:"
          f" {t_aff:.3f} s against {t_plain:.3f} s)")
    tasks_two = len(sluice.plan(paths, 64 << 20))
    predicted = (packets * per_packet + tasks_two * per_task) / NODES + tasks_two * per_result
    print(f"    predicted for the run above: {predicted:.3f} s (measured {t_two:.3f} s)")
    size = sum(os.path.getsize(p) for p in paths)
    for record in (size / packets, 800):
        total = 10e12 / record
        tasks = 10e12 / (64 << 20)
        for nodes in (100,):
            t = (total * per_packet + tasks * per_task) / nodes + tasks * per_result
            ta = t + total * shuffle / nodes
            print(
                f"    {nodes} nodes, 10 TB of {record:.0f}-byte records ({total:.2e} packets, {tasks:,.0f} ranges"
                f" of 64 MiB): {t / 60:.1f} min; flow-affine {ta / 60:.1f} min (CPU only, reads not counted)"
            )


if __name__ == "__main__":
    main()
