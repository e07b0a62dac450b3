#!/usr/bin/env python3
"""Writes des_tables.h and aes_tables.h (beside this script) for the ESP
programs: constant tables derived from the standards' own definitions.

DES (FIPS 46-3): the S-boxes, P, IP, PC-1 and PC-2 are the standard's
tables; from them come the SP tables (S-box j's output put
through P, one 32-bit word per 6-bit input) and the nibble tables of IP and
IP^-1 (the 64-bit permutation as the OR of 16 lookups, one per nibble).

AES (FIPS 197): the S-box is computed (multiplicative inverse in GF(2^8)
modulo x^8+x^4+x^3+x+1, then the affine transform of section 5.1.1), and
T0..T3 are the S-box times the MixColumns column (2, 1, 1, 3), rotated.

Run it again after changing it: python3 programs/include/esp_tables.py
"""

import os

# FIPS 46-3, bits numbered from 1 = the most significant.
IP = [58, 50, 42, 34, 26, 18, 10, 2, 60, 52, 44, 36, 28, 20, 12, 4,
      62, 54, 46, 38, 30, 22, 14, 6, 64, 56, 48, 40, 32, 24, 16, 8,
      57, 49, 41, 33, 25, 17, 9, 1, 59, 51, 43, 35, 27, 19, 11, 3,
      61, 53, 45, 37, 29, 21, 13, 5, 63, 55, 47, 39, 31, 23, 15, 7]
P = [16, 7, 20, 21, 29, 12, 28, 17, 1, 15, 23, 26, 5, 18, 31, 10,
     2, 8, 24, 14, 32, 27, 3, 9, 19, 13, 30, 6, 22, 11, 4, 25]
PC1 = [57, 49, 41, 33, 25, 17, 9, 1, 58, 50, 42, 34, 26, 18,
       10, 2, 59, 51, 43, 35, 27, 19, 11, 3, 60, 52, 44, 36,
       63, 55, 47, 39, 31, 23, 15, 7, 62, 54, 46, 38, 30, 22,
       14, 6, 61, 53, 45, 37, 29, 21, 13, 5, 28, 20, 12, 4]
PC2 = [14, 17, 11, 24, 1, 5, 3, 28, 15, 6, 21, 10,
       23, 19, 12, 4, 26, 8, 16, 7, 27, 20, 13, 2,
       41, 52, 31, 37, 47, 55, 30, 40, 51, 45, 33, 48,
       44, 49, 39, 56, 34, 53, 46, 42, 50, 36, 29, 32]
# The rotations of C and D per round (1 in rounds 1, 2, 9 and 16, else 2)
# are in esp_3des.c, where a table of 16 bytes would land in .rodata.cst16.
S = [
    [[14, 4, 13, 1, 2, 15, 11, 8, 3, 10, 6, 12, 5, 9, 0, 7],
     [0, 15, 7, 4, 14, 2, 13, 1, 10, 6, 12, 11, 9, 5, 3, 8],
     [4, 1, 14, 8, 13, 6, 2, 11, 15, 12, 9, 7, 3, 10, 5, 0],
     [15, 12, 8, 2, 4, 9, 1, 7, 5, 11, 3, 14, 10, 0, 6, 13]],
    [[15, 1, 8, 14, 6, 11, 3, 4, 9, 7, 2, 13, 12, 0, 5, 10],
     [3, 13, 4, 7, 15, 2, 8, 14, 12, 0, 1, 10, 6, 9, 11, 5],
     [0, 14, 7, 11, 10, 4, 13, 1, 5, 8, 12, 6, 9, 3, 2, 15],
     [13, 8, 10, 1, 3, 15, 4, 2, 11, 6, 7, 12, 0, 5, 14, 9]],
    [[10, 0, 9, 14, 6, 3, 15, 5, 1, 13, 12, 7, 11, 4, 2, 8],
     [13, 7, 0, 9, 3, 4, 6, 10, 2, 8, 5, 14, 12, 11, 15, 1],
     [13, 6, 4, 9, 8, 15, 3, 0, 11, 1, 2, 12, 5, 10, 14, 7],
     [1, 10, 13, 0, 6, 9, 8, 7, 4, 15, 14, 3, 11, 5, 2, 12]],
    [[7, 13, 14, 3, 0, 6, 9, 10, 1, 2, 8, 5, 11, 12, 4, 15],
     [13, 8, 11, 5, 6, 15, 0, 3, 4, 7, 2, 12, 1, 10, 14, 9],
     [10, 6, 9, 0, 12, 11, 7, 13, 15, 1, 3, 14, 5, 2, 8, 4],
     [3, 15, 0, 6, 10, 1, 13, 8, 9, 4, 5, 11, 12, 7, 2, 14]],
    [[2, 12, 4, 1, 7, 10, 11, 6, 8, 5, 3, 15, 13, 0, 14, 9],
     [14, 11, 2, 12, 4, 7, 13, 1, 5, 0, 15, 10, 3, 9, 8, 6],
     [4, 2, 1, 11, 10, 13, 7, 8, 15, 9, 12, 5, 6, 3, 0, 14],
     [11, 8, 12, 7, 1, 14, 2, 13, 6, 15, 0, 9, 10, 4, 5, 3]],
    [[12, 1, 10, 15, 9, 2, 6, 8, 0, 13, 3, 4, 14, 7, 5, 11],
     [10, 15, 4, 2, 7, 12, 9, 5, 6, 1, 13, 14, 0, 11, 3, 8],
     [9, 14, 15, 5, 2, 8, 12, 3, 7, 0, 4, 10, 1, 13, 11, 6],
     [4, 3, 2, 12, 9, 5, 15, 10, 11, 14, 1, 7, 6, 0, 8, 13]],
    [[4, 11, 2, 14, 15, 0, 8, 13, 3, 12, 9, 7, 5, 10, 6, 1],
     [13, 0, 11, 7, 4, 9, 1, 10, 14, 3, 5, 12, 2, 15, 8, 6],
     [1, 4, 11, 13, 12, 3, 7, 14, 10, 15, 6, 8, 0, 5, 9, 2],
     [6, 11, 13, 8, 1, 4, 10, 7, 9, 5, 0, 15, 14, 2, 3, 12]],
    [[13, 2, 8, 4, 6, 15, 11, 1, 10, 9, 3, 14, 5, 0, 12, 7],
     [1, 15, 13, 8, 10, 3, 7, 4, 12, 5, 6, 11, 0, 14, 9, 2],
     [7, 11, 4, 1, 9, 12, 14, 2, 0, 6, 10, 13, 15, 3, 5, 8],
     [2, 1, 14, 7, 4, 10, 8, 13, 15, 12, 9, 0, 3, 5, 6, 11]],
]


def permute(x, table, nin):
    """Output bit i (from the most significant) is input bit table[i]."""
    out = 0
    for src in table:
        out = (out << 1) | ((x >> (nin - src)) & 1)
    return out


def des_tables():
    for box in S:
        for row in box:
            assert sorted(row) == list(range(16))
    assert sorted(IP) == list(range(1, 65)) and sorted(P) == list(range(1, 33))
    fp = [0] * 64
    for i, src in enumerate(IP):
        fp[src - 1] = i + 1
    sp = []
    for j in range(8):
        words = []
        for v in range(64):
            row = ((v >> 4) & 2) | (v & 1)
            col = (v >> 1) & 15
            words.append(permute(S[j][row][col] << (28 - 4 * j), P, 32))
        sp.append(words)
    ipt = [[permute(b << (60 - 4 * k), IP, 64) for b in range(16)] for k in range(16)]
    fpt = [[permute(b << (60 - 4 * k), fp, 64) for b in range(16)] for k in range(16)]
    out = [HEAD.format(what="DES (FIPS 46-3)", guard="SLUICE_DES_TABLES_H")]
    out.append(arr("__u8", "des_pc1", "[56]", PC1, 14, "PC-1: 56 key bits, numbered 1..64 from the most significant"))
    out.append(arr("__u8", "des_pc2", "[48]", PC2, 12, "PC-2: 48 bits of C||D, numbered 1..56"))
    out.append(arr2("__u32", "des_sp", "[8][64]", sp, 6, "0x%08x",
                    "S-box j+1 then P: des_sp[j][6-bit input] (FIPS bit order)"))
    out.append(arr2("__u64", "des_ip", "[16][16]", ipt, 4, "0x%016xULL",
                    "IP as the OR of des_ip[k][nibble k of the block (big-endian)]"))
    out.append(arr2("__u64", "des_fp", "[16][16]", fpt, 4, "0x%016xULL",
                    "IP^-1, the same way"))
    out.append("#endif\n")
    return "".join(out)


def gmul(a, b):
    r = 0
    while b:
        if b & 1:
            r ^= a
        a <<= 1
        if a & 0x100:
            a ^= 0x11b
        b >>= 1
    return r


def aes_tables():
    sbox = []
    for x in range(256):
        inv = 0 if x == 0 else next(y for y in range(1, 256) if gmul(x, y) == 1)
        s = 0
        for i in range(8):
            bit = ((inv >> i) ^ (inv >> ((i + 4) % 8)) ^ (inv >> ((i + 5) % 8))
                   ^ (inv >> ((i + 6) % 8)) ^ (inv >> ((i + 7) % 8)) ^ (0x63 >> i)) & 1
            s |= bit << i
        sbox.append(s)
    assert sbox[0] == 0x63 and sbox[1] == 0x7c and sorted(sbox) == list(range(256))
    t0 = [(gmul(s, 2) << 24) | (s << 16) | (s << 8) | gmul(s, 3) for s in sbox]

    def rotr(w, n):
        return ((w >> n) | (w << (32 - n))) & 0xffffffff

    ts = [[rotr(w, 8 * k) for w in t0] for k in range(4)]
    rcon = []
    r = 1
    for _ in range(10):
        rcon.append(r << 24)
        r = gmul(r, 2)
    out = [HEAD.format(what="AES (FIPS 197)", guard="SLUICE_AES_TABLES_H")]
    out.append(arr("__u8", "aes_sbox", "[256]", sbox, 16, "SubBytes", "0x%02x"))
    out.append(arr("__u32", "aes_rcon", "[10]", rcon, 5, "Rcon[i/Nk] as words", "0x%08x"))
    out.append(arr2("__u32", "aes_t", "[4][256]", ts, 6, "0x%08x",
                    "SubBytes and MixColumns: aes_t[k][x] is S(x)*(2,1,1,3) rotated right by 8k"))
    out.append("#endif\n")
    return "".join(out)


HEAD = """/* {what} tables for the ESP programs, generated by esp_tables.py (which
 * says how each is derived from the standard): do not edit. */
#ifndef {guard}
#define {guard}

"""


def rows(vals, per, fmt):
    lines = []
    for i in range(0, len(vals), per):
        lines.append("\t" + ", ".join(fmt % v for v in vals[i:i + per]) + ",")
    return "\n".join(lines)


def arr(ty, name, dims, vals, per, comment, fmt="%d"):
    return f"/* {comment}. */\nstatic const {ty} {name}{dims} = {{\n{rows(vals, per, fmt)}\n}};\n\n"


def arr2(ty, name, dims, tables, per, fmt, comment):
    body = "\n".join("\t{\n" + rows(t, per, fmt).replace("\t", "\t\t") + "\n\t}," for t in tables)
    return f"/* {comment}. */\nstatic const {ty} {name}{dims} = {{\n{body}\n}};\n\n"


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "des_tables.h"), "w") as f:
        f.write(des_tables())
    with open(os.path.join(here, "aes_tables.h"), "w") as f:
        f.write(aes_tables())
