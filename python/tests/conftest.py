"""Fixtures of the sluice package's tests: the example objects (built by the
programs crate into the target directory's bpf/), the shared captures, the
sluice binary (to compare with `sluice run --json`), frames and captures
written byte by byte, and objects compiled with clang."""

import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))


@pytest.fixture(scope="session")
def bpf():
    """The path of example object NAME (target/bpf/NAME.o)."""
    root = Path(os.environ.get("SLUICE_BPF_DIR", TARGET / "bpf"))
    if not (root / "xdp_count.o").exists():
        pytest.fail(f"no example objects in {root}: cargo build -p programs")
    return lambda name: str(root / f"{name}.o")


@pytest.fixture(scope="session")
def pcaps():
    """The shared captures (tcpdump's test captures)."""
    root = Path(os.environ.get("SLUICE_PCAP_DIR", REPO.parent / "shared/pcaps/tcpdump"))
    if not root.is_dir():
        pytest.skip(f"no shared captures at {root} (SLUICE_PCAP_DIR)")
    return root


@pytest.fixture(scope="session")
def sluice_bin():
    """The sluice command line (SLUICE_BIN, or the target directory's debug build)."""
    path = Path(os.environ.get("SLUICE_BIN", TARGET / "debug/sluice"))
    if not path.exists():
        pytest.skip(f"no sluice binary at {path} (SLUICE_BIN)")
    return str(path)


def frame(proto=17, size=64, src=b"\x0a\x00\x00\x01", dst=b"\x0a\x00\x00\x02"):
    """An Ethernet/IPv4 frame of SIZE bytes carrying IP protocol PROTO."""
    eth = b"\x02\x00\x00\x00\x00\x01" + b"\x02\x00\x00\x00\x00\x02" + b"\x08\x00"
    total = size - len(eth)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 0, 0, 64, proto, 0, src, dst)
    l4 = struct.pack("!HHHH", 1000, 53, total - 20, 0) if proto == 17 else b"\x00" * 8
    return eth + ip + l4 + b"\x00" * (total - 28)


def write_pcap(path, frames, start_ns=1_000_000_000, step_ns=1000):
    """A pcap file (microsecond timestamps, Ethernet) of FRAMES."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, data in enumerate(frames):
            ts = start_ns + i * step_ns
            f.write(struct.pack("<IIII", ts // 10**9, ts % 10**9 // 1000, len(data), len(data)))
            f.write(data)
    return str(path)


@pytest.fixture
def compile_c(tmp_path):
    """Compiles C source to an eBPF object with clang; its path."""
    clang = shutil.which("clang-19") or shutil.which("clang")
    if clang is None:
        pytest.skip("no clang")

    def build(source, name="prog"):
        c = tmp_path / f"{name}.c"
        c.write_text(source)
        o = tmp_path / f"{name}.o"
        subprocess.run([clang, "-target", "bpf", "-O2", "-g", "-c", str(c), "-o", str(o)], check=True)
        return str(o)

    return build


def pytest_configure(config):
    """The marks of the suite: ``-m "not cluster"`` leaves out the Ray tests."""
    config.addinivalue_line("markers", "cluster: starts a local two-node Ray cluster (test_cluster.py)")
