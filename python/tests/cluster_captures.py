"""Captures of the cluster tests, written by the tests: a set of small
captures whose flows cross from file to file (TCP and UDP, FINs, an idle
gap that ends flows), their concatenation (what one process reads), and
one capture over 1 GB written with numpy (about a million packets of
about 1,000 bytes, timestamps increasing)."""

import struct

import numpy as np

PCAP_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)


def _frame(proto, src, sport, dport, size, fin=False):
    """An Ethernet/IPv4 TCP or UDP frame of ``size`` bytes from 10.0.0.SRC."""
    eth = b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x08\x00"
    total = size - len(eth)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 0, 0, 64, proto, 0, bytes([10, 0, src >> 8, src & 255]),
                     b"\xc0\xa8\x00\x01")  # fmt: skip
    if proto == 6:
        l4 = struct.pack("!HHIIBBHHH", sport, dport, 0, 0, 0x50, 0x11 if fin else 0x10, 1024, 0, 0)
    else:
        l4 = struct.pack("!HHHH", sport, dport, total - 20, 0)
    return eth + ip + l4 + b"\x00" * (total - 20 - len(l4))


def write_set(folder, files=16, per_file=1500, seed=7):
    """``files`` captures in ``folder`` and their concatenation
    (``all.pcap``): packets of 300 flows, one per source (each flow's packets spread over
    the files), 1 ms apart, a 30 s silence in the middle of the sixth file (flows
    end idle there), every 97th TCP packet a FIN. (paths, concatenation)."""
    rng = np.random.default_rng(seed)
    # Flow i from source 10.0.0.0 + i + 1: a source's state is its flow's.
    flows = [(int(rng.choice([6, 17])), i + 1, int(rng.integers(1024, 65535)), int(rng.choice([53, 80, 443])))
             for i in range(300)]  # fmt: skip
    ts, paths, records = 1_700_000_000_000_000, [], []
    for k in range(files):
        body = []
        for i in range(per_file):
            if k == 5 and i == per_file // 2:
                ts += 30_000_000
            proto, src, sport, dport = flows[int(rng.integers(0, len(flows)))]
            data = _frame(proto, src, sport, dport, int(rng.integers(64, 600)), fin=proto == 6 and i % 97 == 0)
            body.append(struct.pack("<IIII", ts // 1_000_000, ts % 1_000_000, len(data), len(data)) + data)
            ts += 1000
        records.append(b"".join(body))
        path = folder / f"part-{k:02}.pcap"
        path.write_bytes(PCAP_HEADER + records[-1])
        paths.append(str(path))
    whole = folder / "all.pcap"
    whole.write_bytes(PCAP_HEADER + b"".join(records))
    return paths, str(whole)


def write_big(path, packets=1_000_000, seed=1):
    """A capture of ``packets`` Ethernet/IPv4 frames of 960 to 1,040
    bytes (TCP and UDP from 256 sources, 16 ports each), timestamps
    increasing by about 7 us; built in memory with numpy. Its size."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(960, 1041, packets, dtype=np.int64)
    starts = np.empty(packets, dtype=np.int64)
    starts[0] = len(PCAP_HEADER)
    np.cumsum(lengths[:-1] + 16, out=starts[1:])
    starts[1:] += len(PCAP_HEADER)
    buf = np.zeros(int(starts[-1] + 16 + lengths[-1]), dtype=np.uint8)
    buf[: len(PCAP_HEADER)] = np.frombuffer(PCAP_HEADER, np.uint8)

    def put(offset, values, dtype):
        """Writes ``values`` (one per record) at ``offset`` from each record's start."""
        b = np.ascontiguousarray(values.astype(dtype)).view(np.uint8).reshape(packets, -1)
        for k in range(b.shape[1]):
            buf[starts + offset + k] = b[:, k]

    ts = 1_700_000_000_000_000 + np.arange(packets, dtype=np.int64) * 7 + rng.integers(0, 5, packets)
    put(0, ts // 1_000_000, "<u4")
    put(4, ts % 1_000_000, "<u4")
    put(8, lengths, "<u4")
    put(12, lengths, "<u4")
    eth = b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x08\x00\x45"
    for k, v in enumerate(eth):
        buf[starts + 16 + k] = v
    put(16 + 16, lengths - 14, ">u2")
    buf[starts + 16 + 22] = 64
    buf[starts + 16 + 23] = np.where(rng.random(packets) < 0.7, 6, 17).astype(np.uint8)
    src = rng.integers(0, 256, packets)
    put(16 + 26, 0x0A000000 + src, ">u4")
    put(16 + 30, np.full(packets, 0xC0A80001), ">u4")
    put(16 + 34, 1024 + src * 16 + rng.integers(0, 16, packets), ">u2")
    put(16 + 36, rng.choice([53, 80, 443], packets), ">u2")
    buf.tofile(path)
    return len(buf)
