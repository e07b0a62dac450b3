#!/usr/bin/env python3
"""Writes programs/xpf/rtt.s, passive RTT in xPF (its header comment, below,
says what it does). The program is long because its table probes are
unrolled (8 per search, 3 searches): this script writes them. Run it after
changing it: `python3 programs/xpf/rtt.py` (`--stdout`: print it instead)."""
import os
import sys

# Header words.
MAXS, MAXNS, SYNMASK, TSMASK, LOGCAP, PENDING, LOST, SYNFULL, TSFULL, SYNBASE, TSBASE, LOGBASE = range(12)
# Working words.
NOWS, NOWNS, CUTS, CUTNS, FLAGS, SEQ, HASTS, IP, L4, END, AT, KIND, OLEN, H, START, SLOT, FREE, THENS, THENNS, REC, T, T2 = range(16, 38)
POS, STEP = 38, 39
KEY, TSVAL = 40, 50
SYN_PROBES, TS_PROBES = 8, 16
REV, TSECR = 52, 62
SYNW, TSW, RECW = 13, 14, 16

out = []
def e(line, comment=None):
    if comment:
        line = f"{line:<24}; {comment}"
    out.append(line)
def ins(op, comment=None, label=None):
    s = f"{(label + ':') if label else '':<8}{op}"
    e(s, comment)

def fresh(pfx, fresh_lbl, stale_lbl, label=None):
    """Jumps to fresh_lbl or stale_lbl for the slot at M[SLOT] (its time at +11, +12)."""
    ins("ldx M[%d]" % SLOT, label=label)
    ins("ld M[x + 11]", "the entry's seconds")
    ins("ldx M[%d]" % CUTS)
    ins(f"jgt x, {fresh_lbl}, {pfx}e")
    ins(f"jeq x, {pfx}n, {stale_lbl}", label=f"{pfx}e")
    ins("ldx M[%d]" % SLOT, label=f"{pfx}n")
    ins("ld M[x + 12]", "nanoseconds")
    ins("ldx M[%d]" % CUTNS)
    ins(f"jge x, {fresh_lbl}, {stale_lbl}")

def scan(name, base, mask, slotw, area, nwords, probes, track_free, found):
    """`probes` unrolled probes, double hashing from M[START] (the first slot
    M[START] & mask, then steps of (M[START] >> 20) | 1, odd, so that they
    are distinct slots); a match goes to `found` with M[SLOT] its slot;
    else falls through after the last (M[FREE]: the first free slot, 0
    none, when track_free)."""
    if track_free:
        ins("ld #0")
        ins("st M[%d]" % FREE, "no free slot yet")
    ins("ld M[%d]" % START)
    ins("rsh #20")
    ins("or #1")
    ins("st M[%d]" % STEP, "the step: odd")
    for i in range(probes):
        p = f"{name}{i}"
        if i == 0:
            ins("ld M[%d]" % START, label=p)
        else:
            ins("ld M[%d]" % POS, label=p)
            ins("ldx M[%d]" % STEP)
            ins("add x")
        ins("ldx M[%d]" % mask)
        ins("and x")
        ins("st M[%d]" % POS)
        ins(f"mul #{slotw}")
        ins("ldx M[%d]" % base)
        ins("add x")
        ins("st M[%d]" % SLOT, f"probe {i}")
        nxt = f"{p}x"
        for w in range(nwords):
            ins("ldx M[%d]" % SLOT)
            ins(f"ld M[x + {w}]")
            ins("ldx M[%d]" % (area + w))
            ins(f"jneq x, {nxt}")
        ins(f"ja {found}", "found")
        if track_free:
            ins("ld M[%d]" % FREE, label=nxt)
            ins(f"jneq #0, {p}d", "a free slot already")
            ins("ldx M[%d]" % SLOT)
            ins("ld M[x + 0]")
            ins(f"jeq #0, {p}f", "empty")
            fresh(f"{p}a", f"{p}d", f"{p}f")
            ins("ld M[%d]" % SLOT, label=f"{p}f")
            ins("st M[%d]" % FREE, "stale or empty: free")
            e(f"{p}d:")
        else:
            e(f"{nxt}:")

def emit(name, method, after):
    """Appends a record (method, the packet's key, the entry's time, now);
    then `after` (a label or 'ret')."""
    ins("ld M[%d]" % PENDING, label=name)
    ins("ldx M[%d]" % LOGCAP)
    ins(f"jge x, {name}l")
    ins(f"mul #{RECW}")
    ins("ldx M[%d]" % LOGBASE)
    ins("add x")
    ins("st M[%d]" % REC, "the record's first word")
    ins("ld M[%d]" % PENDING)
    ins("add #1")
    ins("st M[%d]" % PENDING)
    ins("ldx M[%d]" % REC)
    ins(f"ld #{method}")
    ins("st M[x + 0]", "method")
    for w in range(10):
        ins("ld M[%d]" % (KEY + w))
        ins(f"st M[x + {1 + w}]")
    ins("ld M[%d]" % THENS)
    ins("st M[x + 11]", "then")
    ins("ld M[%d]" % THENNS)
    ins("st M[x + 12]")
    ins("ld M[%d]" % NOWS)
    ins("st M[x + 13]", "now")
    ins("ld M[%d]" % NOWNS)
    ins("st M[x + 14]")
    ins(f"ja {after}" if after != "ret" else "ret #-1")
    ins("ld M[%d]" % LOST, label=f"{name}l")
    ins("add #1")
    ins("st M[%d]" % LOST, "lost: the log is full")
    ins(f"ja {after}" if after != "ret" else "ret #-1")

def mix_index(src_word, label=None, dst=START):
    """M[dst] = mix(H ^ M[src_word] * C) (the table's first slot, before the mask)."""
    ins("ld M[%d]" % src_word, label=label)
    ins("mul #0x9e3779b1")
    ins("ldx M[%d]" % H)
    ins("xor x")
    ins("mul #0x85ebca6b")
    ins("st M[%d]" % T)
    ins("rsh #15")
    ins("ldx M[%d]" % T)
    ins("xor x")
    ins("st M[%d]" % dst, "the first probe")

HEADER = """; xPF: passive RTT (issue 17; docs/monitor.md "Passive RTT"): the rules of
; the reference, monitor::RttMeter (crates/monitor/src/rtt.rs), and of
; programs/rtt.c, in classic BPF with persistent memory and time loads.
; Two methods: a SYN (SYN without ACK) keeps its flow's seq and time; the
; flow's first pure ACK (ACK without SYN) with seq = SYN + 1 while the SYN
; is fresh gives a handshake sample and forgets the SYN. A segment with a
; timestamp option (TSval not 0; TSecr not 0 unless the flags are exactly
; SYN) records (flow, TSval) with its time unless a fresh entry has it, then
; looks up (the reverse flow, TSecr): fresh and not used, it gives a
; timestamp sample and is marked used. The frames read are segment()'s:
; Ethernet, two VLAN tags, IPv4 (no later fragment) or IPv6 (8 extension
; headers walked), TCP with 20 bytes in the capture, 10 options walked.
; The packet's time is read once (ld #time_sec, ld #time_nsec); an entry is
; fresh when its time is at least now - max age. Passes every frame.
;
; Persistent memory (one block), words:
;    0, 1  max age: seconds (at most 2^32 - 1), nanoseconds
;    2     SYN slots - 1     3 TSval slots - 1 (powers of two)
;    4     log capacity (records)   5 records pending   6 records lost
;    7     SYNs not kept (their 8 slots held by fresh SYNs of other flows)
;    8     TSvals not kept (their 16 slots held by other fresh TSvals)
;    9     the SYN table's first word   10 the TSval table's   11 the log's
;   16..38 this packet's working words: 16, 17 now (s, ns), 18, 19 now -
;          max age (0 when now is under it), 20 flags, 21 seq, 22 1 with a
;          timestamp option, 23 the IP header's offset, 24 TCP's, 25 the
;          options' end, 26 an offset, 27 a header or option kind, 28 an
;          option's length, 29 the flow's hash, 30 the first probe, 31 a
;          slot, 32 the first free slot seen (0: none), 33, 34 an entry's
;          time, 35 a record, 36, 37 temporaries, 38 the slot probed,
;          39 the probes' step
;   40..49 the flow's key: family << 8 | 6, source port << 16 |
;          destination port, source (4 words), destination (4 words;
;          IPv4: the first, the rest 0); 50 TSval
;   52..61 the reverse flow's key; 62 TSecr
;   the log: records of 16 words: method (1 handshake, 2 timestamp), the
;          packet's key (10 words), the entry's time (s, ns), now (s, ns)
;   the SYN table: slots of 13 words: key (10), seq, time (s, ns)
;   the TSval table: slots of 14 words: key (10), TSval, time (s, ns), used
; Word 0 of a slot is 0 when empty (a key's first word never is). An entry
; lives in one of 8 slots (SYN) or 16 (TSval) by double hashing: the first
; h & mask, then steps of (h >> 20) | 1 (odd: distinct slots), masked; all
; are searched; a new entry takes the first that is empty or stale (older
; than the max age: the reference would not match it either, and
; forgets it at its next sweep); with none, it is not kept and counted (7,
; 8). The reference's tables are hash maps with a capacity: equal results
; need tables where no entry finds its slots full (so user space sweeps
; nothing).
; The probes are unrolled (no loop: the program is JIT-able and needs no
; budget). User space writes words 0-4 and 9-11 before the first packet,
; reads the pending records after each packet and writes 0 to word 5.
; Generated by programs/xpf/rtt.py: edit that and run it to change this.
;   sluice monitor rtt --engine xpf --pcap CAPTURE
"""
for l in HEADER.rstrip("\n").split("\n"):
    e(l)

# --- Parsing -------------------------------------------------------------
ins("bsp", "every M[] below is the persistent block")
ins("ld #0")
ins("st M[%d]" % HASTS)
ins("ldh [12]")
ins("ldx #14")
ins("jeq #0x8100, vlan1")
ins("jeq #0x88a8, vlan1")
ins("ja l3")
ins("ldh [16]", label="vlan1")
ins("ldx #18")
ins("jeq #0x8100, vlan2")
ins("jeq #0x88a8, vlan2")
ins("ja l3")
ins("ldh [20]", label="vlan2")
ins("ldx #22")
ins("stx M[%d]" % IP, "the IP header's offset", label="l3")
ins("jeq #0x800, v4")
ins("jeq #0x86dd, v6")
ins("ret #-1")
# IPv4
ins("ldb [x + 19]", "20 bytes of header", label="v4")
ins("ldb [x + 0]")
ins("rsh #4")
ins("jeq #4, v4ok")
ins("ret #-1")
ins("ldb [x + 0]", label="v4ok")
ins("and #15")
ins("lsh #2")
ins("jge #20, v4ihl")
ins("ret #-1")
ins("st M[%d]" % T, "header bytes", label="v4ihl")
ins("ldh [x + 2]", "total length")
ins("jeq #0, v4len")
ins("ldx M[%d]" % T)
ins("jge x, v4len")
ins("ret #-1", "shorter than its header")
ins("ldx M[%d]" % IP, label="v4len")
ins("ldb [x + 9]")
ins("jeq #6, v4tcp")
ins("ret #-1")
ins("ldh [x + 6]", label="v4tcp")
ins("and #0x1fff")
ins("jeq #0, v4first")
ins("ret #-1", "a later fragment")
ins("ld M[%d]" % T, label="v4first")
ins("add x")
ins("st M[%d]" % L4)
ins("ld #0x406")
ins("st M[%d]" % KEY, "family << 8 | protocol")
ins("ld [x + 12]")
ins("st M[%d]" % (KEY + 2), "source")
ins("ld [x + 16]")
ins("st M[%d]" % (KEY + 6), "destination")
ins("ld #0")
for w in (3, 4, 5, 7, 8, 9):
    ins("st M[%d]" % (KEY + w))
ins("ja tcp")
# IPv6
ins("ld [x + 36]", "40 bytes of header", label="v6")
ins("ldb [x + 0]")
ins("rsh #4")
ins("jeq #6, v6ok")
ins("ret #-1")
ins("ld #0x606", label="v6ok")
ins("st M[%d]" % KEY, "family << 8 | protocol")
for w in range(8):
    ins(f"ld [x + {8 + 4 * w}]")
    ins("st M[%d]" % (KEY + 2 + w), "addresses")
ins("ldb [x + 6]")
ins("st M[%d]" % KIND, "the next header")
ins("txa")
ins("add #40")
ins("st M[%d]" % AT, "its offset")
for i in range(8):
    ins("ld M[%d]" % KIND, label=f"x6h{i}")
    ins(f"jeq #0, x6e{i}")
    ins(f"jeq #43, x6e{i}")
    ins(f"jeq #60, x6e{i}")
    ins(f"jeq #44, x6f{i}")
    ins("ja x6done")
    ins("ldx M[%d]" % AT, "hop-by-hop, routing, destination options", label=f"x6e{i}")
    ins("ldb [x + 1]")
    ins("add #1")
    ins("lsh #3")
    ins("add x")
    ins("st M[%d]" % T)
    ins("ldb [x + 0]")
    ins("st M[%d]" % KIND)
    ins("ld M[%d]" % T)
    ins("st M[%d]" % AT)
    ins(f"ja x6h{i + 1}" if i < 7 else "ja x6done")
    ins("ldx M[%d]" % AT, "a fragment header", label=f"x6f{i}")
    ins("ld [x + 4]", "8 bytes")
    ins("ldh [x + 2]")
    ins("rsh #3")
    ins(f"jeq #0, x6g{i}")
    ins("ret #-1", "not the first fragment")
    ins("ldb [x + 0]", label=f"x6g{i}")
    ins("st M[%d]" % KIND)
    ins("txa")
    ins("add #8")
    ins("st M[%d]" % AT)
    if i < 7:
        ins(f"ja x6h{i + 1}")
ins("ld M[%d]" % KIND, label="x6done")
ins("jeq #6, v6tcp")
ins("ret #-1")
ins("ld M[%d]" % AT, label="v6tcp")
ins("st M[%d]" % L4)
# TCP
ins("ldx M[%d]" % L4, label="tcp")
ins("ldb [x + 19]", "20 bytes of TCP header")
ins("ldb [x + 12]")
ins("rsh #4")
ins("lsh #2")
ins("jge #20, doff")
ins("ret #-1")
ins("add x", label="doff")
ins("st M[%d]" % END, "the header's end")
ins("ld #len")
ins("ldx M[%d]" % END)
ins("jge x, optend")
ins("st M[%d]" % END, "or the capture's")
ins("ldx M[%d]" % L4, label="optend")
ins("ld [x + 0]")
ins("st M[%d]" % (KEY + 1), "ports")
ins("ld [x + 4]")
ins("st M[%d]" % SEQ)
ins("ldb [x + 13]")
ins("st M[%d]" % FLAGS)
ins("txa")
ins("add #20")
ins("st M[%d]" % AT, "the first option")
for i in range(10):
    nxt = f"opt{i + 1}" if i < 9 else "optsdone"
    z = f"opt{i}z"  # out of the options, near enough for a conditional jump
    ins("ld M[%d]" % AT, label=f"opt{i}")
    ins("ldx M[%d]" % END)
    ins(f"jge x, {z}")
    ins("ldx M[%d]" % AT)
    ins("ldb [x + 0]")
    ins(f"jeq #0, {z}")
    ins(f"jeq #1, opt{i}n")
    ins("st M[%d]" % KIND)
    ins("txa")
    ins("add #1")
    ins("ldx M[%d]" % END)
    ins(f"jge x, {z}")
    ins("ldx M[%d]" % AT)
    ins("ldb [x + 1]")
    ins(f"jlt #2, {z}")
    ins("st M[%d]" % OLEN)
    ins("ld M[%d]" % KIND)
    ins(f"jneq #8, opt{i}a")
    ins("ld M[%d]" % OLEN)
    ins(f"jneq #10, opt{i}a")
    ins("txa")
    ins("add #10")
    ins("ldx M[%d]" % END)
    ins(f"jgt x, opt{i}a")
    ins("ja optts")
    ins("ld M[%d]" % AT, label=f"opt{i}a")
    ins("ldx M[%d]" % OLEN)
    ins("add x")
    ins("st M[%d]" % AT)
    ins(f"ja {nxt}")
    ins("ld M[%d]" % AT, "a NOP", label=f"opt{i}n")
    ins("add #1")
    ins("st M[%d]" % AT)
    ins(f"ja {nxt}")
    ins("ja optsdone", label=z)
ins("ldx M[%d]" % AT, "the timestamp option", label="optts")
ins("ld [x + 2]")
ins("st M[%d]" % TSVAL)
ins("ld [x + 6]")
ins("st M[%d]" % TSECR)
ins("ld #1")
ins("st M[%d]" % HASTS)
# --- The packet's time, the oldest fresh time, the flow's hash ------------
ins("ld #time_sec", label="optsdone")
ins("st M[%d]" % NOWS)
ins("ld #time_nsec")
ins("st M[%d]" % NOWNS)
ins("ld M[%d]" % NOWS)
ins("ldx M[%d]" % MAXS)
ins("jgt x, cutsub")
ins("jeq x, cuteq, cut0")
ins("ld M[%d]" % NOWNS, label="cuteq")
ins("ldx M[%d]" % MAXNS)
ins("jge x, cutsub, cut0")
ins("ld M[%d]" % NOWS, "now - max age", label="cutsub")
ins("ldx M[%d]" % MAXS)
ins("sub x")
ins("st M[%d]" % CUTS)
ins("ld M[%d]" % NOWNS)
ins("ldx M[%d]" % MAXNS)
ins("jge x, cutnb")
ins("add #1000000000")
ins("sub x")
ins("st M[%d]" % CUTNS)
ins("ld M[%d]" % CUTS)
ins("sub #1")
ins("st M[%d]" % CUTS, "borrowed a second")
ins("ja hash")
ins("sub x", label="cutnb")
ins("st M[%d]" % CUTNS)
ins("ja hash")
ins("ld #0", "now is under the max age: all is fresh", label="cut0")
ins("st M[%d]" % CUTS)
ins("st M[%d]" % CUTNS)
# The symmetric hash of the flow (a flow and its reverse hash alike).
ins("ld M[%d]" % (KEY + 2), label="hash")
for w in (3, 4, 5):
    ins("ldx M[%d]" % (KEY + w))
    ins("xor x")
ins("st M[%d]" % T, "source words")
ins("ld M[%d]" % (KEY + 6))
for w in (7, 8, 9):
    ins("ldx M[%d]" % (KEY + w))
    ins("xor x")
ins("ldx M[%d]" % T)
ins("add x")
ins("mul #0x9e3779b1")
ins("st M[%d]" % T, "(source + destination) * C")
ins("ld M[%d]" % (KEY + 1))
ins("rsh #16")
ins("st M[%d]" % T2)
ins("ld M[%d]" % (KEY + 1))
ins("and #0xffff")
ins("ldx M[%d]" % T2)
ins("add x")
ins("ldx M[%d]" % T)
ins("xor x")
ins("st M[%d]" % T, "fmix32")
ins("rsh #16")
ins("ldx M[%d]" % T)
ins("xor x")
ins("mul #0x85ebca6b")
ins("st M[%d]" % T)
ins("rsh #13")
ins("ldx M[%d]" % T)
ins("xor x")
ins("mul #0xc2b2ae35")
ins("st M[%d]" % T)
ins("rsh #16")
ins("ldx M[%d]" % T)
ins("xor x")
ins("st M[%d]" % H)
# --- Handshake ------------------------------------------------------------
ins("ld M[%d]" % FLAGS)
ins("and #0x12")
ins("jeq #0x02, syn")
ins("jeq #0x10, syn")
ins("ja ts", "neither a SYN nor a pure ACK")
ins("ld M[%d]" % H, label="syn")
ins("st M[%d]" % START)
scan("s", SYNBASE, SYNMASK, SYNW, KEY, 10, SYN_PROBES, True, "sfound")
# not found
ins("ld M[%d]" % FLAGS)
ins("and #0x12")
ins("jeq #0x02, snew")
ins("ja ts", "an ACK without its SYN")
ins("ld M[%d]" % FREE, label="snew")
ins("jneq #0, sput")
ins("ld M[%d]" % SYNFULL)
ins("add #1")
ins("st M[%d]" % SYNFULL, "its slots held by fresh SYNs: full")
ins("ja ts")
ins("st M[%d]" % SLOT, label="sput")
ins("tax")
for w in range(10):
    ins("ld M[%d]" % (KEY + w))
    ins(f"st M[x + {w}]", "the key" if w == 0 else None)
ins("ja sset")
ins("ld M[%d]" % FLAGS, label="sfound")
ins("and #0x12")
ins("jeq #0x10, sack")
ins("ldx M[%d]" % SLOT, "a SYN again: the latest counts", label="sset")
ins("ld M[%d]" % SEQ)
ins("st M[x + 10]")
ins("ld M[%d]" % NOWS)
ins("st M[x + 11]")
ins("ld M[%d]" % NOWNS)
ins("st M[x + 12]")
ins("ja ts")
ins("ldx M[%d]" % SLOT, label="sack")
ins("ld M[x + 10]")
ins("add #1")
ins("ldx M[%d]" % SEQ)
ins("jeq x, sseq")
ins("ja ts", "not the SYN's seq + 1")
fresh("sfr", "shs", "ts", label="sseq")
ins("ldx M[%d]" % SLOT, label="shs")
ins("ld M[x + 11]")
ins("st M[%d]" % THENS)
ins("ld M[x + 12]")
ins("st M[%d]" % THENNS)
ins("ld #0")
ins("st M[x + 0]", "the SYN is forgotten")
emit("hsrec", 1, "ts")
# --- Timestamps -----------------------------------------------------------
ins("ld M[%d]" % HASTS, label="ts")
ins("jneq #0, tsok")
ins("ret #-1")
ins("ld M[%d]" % TSVAL, label="tsok")
ins("jneq #0, tsv")
ins("ret #-1", "TSval 0")
ins("ld M[%d]" % TSECR, label="tsv")
ins("jneq #0, tsrec")
ins("ld M[%d]" % FLAGS)
ins("jeq #0x02, tsrec")
ins("ret #-1", "TSecr 0 and not a bare SYN")
mix_index(TSVAL, label="tsrec")
scan("r", TSBASE, TSMASK, TSW, KEY, 11, TS_PROBES, True, "rfound")
ins("ld M[%d]" % FREE)
ins("jneq #0, rput")
ins("ld M[%d]" % TSFULL)
ins("add #1")
ins("st M[%d]" % TSFULL, "its slots held by fresh TSvals: full")
ins("ja echo")
ins("st M[%d]" % SLOT, label="rput")
ins("tax")
for w in range(11):
    ins("ld M[%d]" % (KEY + w))
    ins(f"st M[x + {w}]", "the key and TSval" if w == 0 else None)
ins("ja rset")
fresh("rfr", "echo", "rset", label="rfound")
ins("ldx M[%d]" % SLOT, "recorded: now, not used", label="rset")
ins("ld M[%d]" % NOWS)
ins("st M[x + 11]")
ins("ld M[%d]" % NOWNS)
ins("st M[x + 12]")
ins("ld #0")
ins("st M[x + 13]")
# The echo: the reverse flow's (key, TSecr).
ins("ld M[%d]" % KEY, label="echo")
ins("st M[%d]" % REV)
ins("ld M[%d]" % (KEY + 1))
ins("lsh #16")
ins("st M[%d]" % T)
ins("ld M[%d]" % (KEY + 1))
ins("rsh #16")
ins("ldx M[%d]" % T)
ins("or x")
ins("st M[%d]" % (REV + 1), "the ports swapped")
for w in range(4):
    ins("ld M[%d]" % (KEY + 6 + w))
    ins("st M[%d]" % (REV + 2 + w))
    ins("ld M[%d]" % (KEY + 2 + w))
    ins("st M[%d]" % (REV + 6 + w))
mix_index(TSECR)
scan("c", TSBASE, TSMASK, TSW, REV, 11, TS_PROBES, False, "cfound")
ins("ret #-1", "no such TSval")
ins("ldx M[%d]" % SLOT, label="cfound")
ins("ld M[x + 13]")
ins("jeq #0, cunused")
ins("ret #-1", "echoed before")
fresh("cfr", "cfresh", "pass", label="cunused")
ins("ldx M[%d]" % SLOT, label="cfresh")
ins("ld #1")
ins("st M[x + 13]", "used")
ins("ld M[x + 11]")
ins("st M[%d]" % THENS)
ins("ld M[x + 12]")
ins("st M[%d]" % THENNS)
emit("tsrec2", 2, "ret")
ins("ret #-1", label="pass")

def check_reach(lines):
    """Conditional jumps reach at most 255 instructions ahead."""
    import re
    at, labels, jumps = 0, {}, []
    for l in lines:
        code = l.split(";")[0]
        m = re.match(r"^([A-Za-z0-9_]+):", code)
        if m:
            labels[m.group(1)] = at
            code = code[m.end():]
        code = code.strip()
        if not code:
            continue
        if code.startswith("j") and not code.startswith("ja "):
            jumps.append((at, [t.strip() for t in code.split(",")[1:]], l))
        at += 1
    for pc, targets, l in jumps:
        for t in targets:
            d = labels[t] - pc - 1
            assert 0 <= d <= 255, f"{l.strip()}: {d} ahead"
    return at

n = check_reach(out)
assert n <= 4096, n
text = "\n".join(out) + "\n"
if "--stdout" in sys.argv:
    sys.stdout.write(text)  # what a test compares with rtt.s
else:
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rtt.s")
    with open(path, "w") as f:
        f.write(text)
