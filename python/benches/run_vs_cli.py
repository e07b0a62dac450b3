"""Benchmark (1): `Program.run(pcap=...)` against `sluice run --pcap` on the
same 2M-packet capture, the DDoS filter example, in the same run (the
calls interleaved, the best of ten each); one thread and one per core. The command line's time is its whole process
(start, load, verify, replay, report); Python's is the call. Prints the
ratio Python / command line (the target: within 1.1x)."""

import json
import subprocess

import sluice
from common import PACKETS, SLUICE, best_of_each, capture, line, obj


def cli(pcap, threads):
    out = subprocess.run(
        [SLUICE, "run", obj("xdp_ddos"), "--pcap", pcap, "--threads", str(threads), "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout)


def main():
    pcap = capture()
    prog = sluice.Object(obj("xdp_ddos")).program()
    print(f"(1) xdp_ddos over {pcap} ({PACKETS:,} packets), best of 10, interleaved:")
    for threads in (1, 0):
        label = "1 thread" if threads == 1 else "threads=0 (one per core)"
        (t_cli, report), (t_py, res), (t_rows, rows) = best_of_each(
            [
                lambda: cli(pcap, threads),
                lambda: prog.run(pcap=pcap, threads=threads, per_packet=False),
                lambda: prog.run(pcap=pcap, threads=threads),
            ],
            runs=10,
        )
        assert report["packets"] == res.count == rows.count == PACKETS
        if threads == 1:
            assert res.verdicts == rows.verdicts == report["verdicts"], (res.verdicts, report["verdicts"])
        print(f" {label}:")
        line("sluice run --pcap (the process)", t_cli, PACKETS)
        line("prog.run(pcap=..., per_packet=False)", t_py, PACKETS)
        line("prog.run(pcap=...) (with the per-packet table)", t_rows, PACKETS)
        print(f"  ratio Python / command line: {t_py / t_cli:.2f}x without rows, {t_rows / t_cli:.2f}x with rows")


if __name__ == "__main__":
    main()
