#!/usr/bin/env python3
"""Seeds fuzz/corpus/<target>/ (not in git) from what the repository and the
shared data hold: the BPF conformance suite's programs, the shared tcpdump
captures (whole files, and their frames one by one), the example objects'
program sections and BTF, and the tests' text inputs (tc lines, ovs-ofctl
flows, tcpdump expressions, route tables, --gen specs). Run by
`./dev.sh fuzz` before the targets; quick (a few seconds).

Usage: seed.py CORPUS_DIR CONFORMANCE_DIR PCAP_DIR OBJECT_DIR
Writes the conformance programs' assembly to CORPUS/assemble/*.s; dev.sh
then turns them into bytes (isa's `asm2bin` example) for the bytecode
targets.
"""

import glob
import hashlib
import os
import re
import struct
import sys

corpus, conformance, pcaps, objects = sys.argv[1:5]
counts = {}


def put(target, data, name=None):
    if isinstance(data, str):
        data = data.encode()
    d = os.path.join(corpus, target)
    os.makedirs(d, exist_ok=True)
    name = name or hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)
    counts[target] = counts.get(target, 0) + 1


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


# The conformance suite: assembly for `assemble` (and, through dev.sh, bytes).
for path in sorted(glob.glob(os.path.join(conformance, "*.data"))):
    section, asm, raw = None, [], []
    for line in read(path).splitlines():
        if line.startswith("--"):
            section = line[2:].strip()
        elif section == "asm":
            asm.append(line)
        elif section == "raw":
            w = line.split("#")[0].strip()
            if w:
                raw.append(int(w, 0))
    stem = os.path.basename(path)[:-5]
    put("assemble", "\n".join(asm) + "\n", stem + ".s")
    if raw:
        code = b"".join(struct.pack("<Q", w) for w in raw)
        put("decode", code, stem)
        put("interp", bytes([8] * 8) + code, stem)
        put("jit", bytes([8] * 8) + code, stem)
        put("verifier", b"\x01" + code, stem)

# Captures: whole files for `captures`, frames for `packet` (the selector
# byte picks the file's link-type conversion).
PACKET_LINKTYPES = [1, 101, 105, 113, 119, 127, 163, 276, 9]


def pcap_frames(data):
    if len(data) < 24:
        return None, []
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        e = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        e = ">"
    else:
        return None, []  # pcapng: whole files only
    linktype = struct.unpack(e + "I", data[20:24])[0] & 0xFFFF
    out, at = [], 24
    while at + 16 <= len(data) and len(out) < 20:
        incl = struct.unpack(e + "I", data[at + 8 : at + 12])[0]
        out.append(data[at + 16 : at + 16 + incl])
        at += 16 + incl
    return linktype, out


for path in sorted(glob.glob(os.path.join(pcaps, "*.pcap*"))):
    if os.path.getsize(path) > 64 * 1024:
        continue
    with open(path, "rb") as f:
        data = f.read()
    put("captures", data)
    lt, frames = pcap_frames(data)
    sel = PACKET_LINKTYPES.index(lt) if lt in PACKET_LINKTYPES else 0
    for fr in frames:
        put("packet", bytes([sel]) + fr[:2048])

# Objects: whole for `elf`, program sections for the bytecode targets,
# .BTF and .BTF.ext for `btf`.
for path in sorted(glob.glob(os.path.join(objects, "*.o"))):
    with open(path, "rb") as f:
        data = f.read()
    put("elf", data)
    if data[:4] != b"\x7fELF" or data[4] != 2:
        continue
    shoff, = struct.unpack("<Q", data[0x28:0x30])
    shentsize, shnum, shstrndx = struct.unpack("<HHH", data[0x3A:0x40])
    secs = [struct.unpack("<IIQQQQIIQQ", data[shoff + i * shentsize : shoff + (i + 1) * shentsize])
            for i in range(shnum)]
    strtab = secs[shstrndx]
    names = data[strtab[4] : strtab[4] + strtab[5]]
    for name_off, sh_type, flags, _, off, size, *_ in secs:
        name = names[name_off : names.index(b"\0", name_off)].decode()
        body = data[off : off + size]
        if sh_type == 1 and flags & 4 and size:  # PROGBITS, EXECINSTR
            put("decode", body)
            put("verifier", b"\x01" + body)
            put("interp", bytes([8] * 8) + body)
            put("jit", bytes([8] * 8) + body)
        elif name in (".BTF", ".BTF.ext"):
            put("btf", body)

# Text inputs of the tests.
def literals(path):
    return [bytes(s, "utf-8").decode("unicode_escape") for s in re.findall(r'"((?:[^"\\]|\\.)*)"', read(path))]


for s in re.findall(r'^\s*"([^"]+)",$', read("crates/cbpf/tests/common/mod.rs"), re.M):
    put("expr", b"\x01\x00" + s.encode())
    put("expr", b"\x02\x06" + s.encode())

for path in ["crates/openflow/tests/ofctl_parse.rs", "crates/openflow/tests/ofctl_files.rs"]:
    for s in literals(path):
        if "=" in s or "," in s:
            put("ofctl", s)

for path in glob.glob("crates/tc/tests/*.rs") + ["crates/cli/tests/tc.rs"]:
    for s in literals(path):
        s = re.sub(r"\{[^}]*\}", "1", s)
        if re.match(r"\s*(filter|actions|qdisc) ", s):
            dev = re.search(r"dev (\S+)", s)
            head = f"qdisc add dev {dev.group(1)} clsact\n" if dev else ""
            put("tc", head + s.strip() + "\n")

m = re.search(r'const IP_ROUTE: &str = "\\\n(.*?)";', read("crates/lpm/src/parse.rs"), re.S)
if m:
    table = m.group(1).replace("\\t", "\t")
    put("routes", table)
    for line in table.splitlines():
        put("routes", line + "\n")
put("routes", "10.0.0.0/8 192.0.2.1\n10.1.0.0/16 192.0.2.2\n0.0.0.0/0 192.0.2.3\n")
put("routes", "TABLE_DUMP2|1700000000|B|192.0.2.1|64500|10.0.0.0/8|64500 64501|IGP|192.0.2.1|0|0||NAG||\n")

for path in ["README.md"] + glob.glob("docs/*.md"):
    for s in re.findall(r"--gen ([^\s`'\"]+)", read(path)):
        put("genspec", s)
for s in ["1/100", "0.01", "1/1"]:
    put("genspec", s)

for sel, s in [(2, "10.66.0.0/16"), (10, "10.0.0.0/8"), (26, "10.0.0.0/8"), (3, "0x1234"),
               (2, "-1"), (4, "hex:00112233445566778899aabbccddeeff"), (2, "192.0.2.1"), (4, "2001:db8::1")]:
    put("mapupdate", bytes([sel]) + s.encode())

# IPFIX: a template set for sluice's IPv4 and IPv6 records and one data
# record each, as one message (ids from RFC 7012).
def ipfix_message():
    v4 = [(8, 4), (12, 4), (7, 2), (11, 2), (4, 1), (32, 2), (2, 8), (1, 8), (152, 8), (153, 8), (6, 2), (136, 1)]
    v6 = [(27, 16), (28, 16)] + v4[2:5] + [(139, 2)] + v4[6:]
    tmpl = b""
    for tid, fields in [(256, v4), (257, v6)]:
        tmpl += struct.pack(">HH", tid, len(fields)) + b"".join(struct.pack(">HH", i, n) for i, n in fields)
    sets = struct.pack(">HH", 2, 4 + len(tmpl)) + tmpl
    rec4 = bytes([10, 0, 0, 1, 10, 0, 0, 2]) + struct.pack(">HHBHQQQQHB", 1000, 80, 6, 0, 3, 180,
                                                           1_750_000_000_000, 1_750_000_000_500, 0x12, 3)
    rec6 = bytes(range(32)) + struct.pack(">HHBHQQQQHB", 0, 0x8000, 58, 0x8000, 1, 104,
                                          1_750_000_000_000, 1_750_000_000_000, 0, 1)
    sets += struct.pack(">HH", 256, 4 + len(rec4)) + rec4
    sets += struct.pack(">HH", 257, 4 + len(rec6)) + rec6
    return struct.pack(">HHIII", 10, 16 + len(sets), 1_750_000_000, 0, 1) + sets


put("ipfix", ipfix_message())
put("ipfix", ipfix_message() * 2)

print(" ".join(f"{t}:{n}" for t, n in sorted(counts.items())))
