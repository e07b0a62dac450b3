; xPF: trajectory sampling (Duffield and Grossglauser; issue 17;
; docs/monitor.md). The same rules as programs/sample.c and the reference
; in crates/monitor/src/sample.rs, word for word: h(x) over the invariant
; words of the IP header (no TOS/traffic class, TTL/hop limit, checksum,
; flow label) and the first 16 bytes after it (inside the datagram); the
; packet is sampled when h mod A < B; the label g over the flow (family,
; protocol, addresses, ports). A sampled packet appends a sample record to
; the log, preceded by a flow record the first time its label is seen.
;
; Persistent memory (one block), words:
;    0 A        1 B        3 mask (the table's slots - 1)
;    4 log capacity (records)   5 records pending   6 records lost
;    7 packets hashed   8 sampled   9 flow records   10 flow records a
;   full table could not remember   11 labels kept   13 the log's first word
;   16 .. 16 + slots: the label table (open addressing: a label lives in
;   one of the 8 slots from label & mask on, wrapping; 0 = empty: labels
;   are never 0); a label that finds neither itself nor an empty slot in
;   its 8 is not remembered (the table is full for it).
;   The log: records of 12 words. Sample: 1, label, h, seconds,
;   nanoseconds (5..11 unused). Flow: 2, label, family << 8 | protocol,
;   sport << 16 | dport (ICMP: type << 8 | code), source (4 words),
;   destination (4 words; IPv4: the first word, the rest 0).
; User space writes words 0-4 and 13 before the first packet, reads the
; pending records after each packet and writes 0 to word 5.
;
; Scratch: M[0] the IP header's offset, M[1] h, M[2] g, M[3] payload bytes
; (at most 16), M[4] the payload's offset, M[5] ports, M[6] family << 8 |
; protocol, M[7] a temporary, M[8] the label, M[9] h final, M[10] a
; slot, M[11] a word being built, M[12] 1 for a later IPv4 fragment.
;   sluice monitor sample --engine xpf --pcap CAPTURE
        ldh [12]
        ldx #14
        jeq #0x8100, vlan1
        jeq #0x88a8, vlan1
        ja l3
vlan1:  ldh [16]
        ldx #18
        jeq #0x8100, vlan2
        jeq #0x88a8, vlan2
        ja l3
vlan2:  ldh [20]
        ldx #22
l3:     stx M[0]                ; A: the EtherType
        jeq #0x800, v4
        jeq #0x86dd, v6
        ret #-1
v4:     ldb [x + 0]
        rsh #4
        jeq #4, v4ok
        ret #-1
v4ok:   ldb [x + 0]
        and #15
        jge #5, v4ihl
        ret #-1
v4ihl:  lsh #2
        st M[7]                 ; header bytes
        add x
        st M[4]                 ; the payload's offset
        ld #0x243f6a88
        st M[1]                 ; h's seed
        ldx M[0]
        ld [x + 0]
        and #0xff00ffff
        ldx M[1]
        xor x
        mul #0x9e3779b1
        st M[1]
        rsh #15
        ldx M[1]
        xor x
        st M[1]
        ldx M[0]
        ld [x + 4]
        ldx M[1]
        xor x
        mul #0x9e3779b1
        st M[1]
        rsh #15
        ldx M[1]
        xor x
        st M[1]
        ldx M[0]
        ld [x + 8]
        and #0x00ff0000
        ldx M[1]
        xor x
        mul #0x9e3779b1
        st M[1]
        rsh #15
        ldx M[1]
        xor x
        st M[1]
        ldx M[0]
        ld [x + 12]
        ldx M[1]
        xor x
        mul #0x9e3779b1
        st M[1]
        rsh #15
        ldx M[1]
        xor x
        st M[1]
        ldx M[0]
        ld [x + 16]
        ldx M[1]
        xor x
        mul #0x9e3779b1
        st M[1]
        rsh #15
        ldx M[1]
        xor x
        st M[1]
        ldx M[0]
        ldb [x + 9]
        or #0x400
        st M[6]                 ; 4 << 8 | protocol
        ld #0xb7e15162
        st M[2]                 ; g's seed
        ld M[6]
        ldx M[2]
        xor x
        mul #0x2545f491
        st M[2]
        rsh #15
        ldx M[2]
        xor x
        st M[2]
        ldx M[0]
        ld [x + 12]
        ldx M[2]
        xor x
        mul #0x2545f491
        st M[2]
        rsh #15
        ldx M[2]
        xor x
        st M[2]
        ldx M[0]
        ld [x + 16]
        ldx M[2]
        xor x
        mul #0x2545f491
        st M[2]
        rsh #15
        ldx M[2]
        xor x
        st M[2]
        ldx M[0]
        ldh [x + 6]
        and #0x1fff
        jeq #0, v4end
        ld #1
        st M[12]                ; a later fragment: no ports
v4end:  ld #len
        ldx M[0]
        sub x
        st M[3]                 ; the datagram's end: the frame's
        ldh [x + 2]             ; total length
        jeq #0, room
        ldx M[3]
        jgt x, room
        st M[3]                 ; or the datagram's
        ja room
v6:     ldb [x + 0]
        rsh #4
        jeq #6, v6ok
        ret #-1
v6ok:   ld [x + 36]             ; the header is in the frame
        txa
        add #40
        st M[4]                 ; the payload's offset
        ld #40
        st M[7]                 ; header bytes
        ld #0x243f6a88
        st M[1]                 ; h's seed
        ldx M[0]
        ld [x + 0]
        and #0xf0000000
        ldx M[1]
        xor x
        mul #0x9e3779b1
        st M[1]
        rsh #15
        ldx M[1]
        xor x
        st M[1]
        ldx M[0]
        ld [x + 4]
        and #0xffffff00
        ldx M[1]
        xor x
        mul #0x9e3779b1
        st M[1]
        rsh #15
        ldx M[1]
        xor x
        st M[1]
        ldx M[0]
        ld [x + 8]
        ldx M[1]
        xor x
        mul #0x9e3779b1
        st M[1]
        rsh #15
        ldx M[1]
        xor x
        st M[1]
        ldx M[0]
        ld [x + 12]
        ldx M[1]
        xor x
        mul #0x9e3779b1
        st M[1]
        rsh #15
        ldx M[1]
        xor x
        st M[1]
        ldx M[0]
        ld [x + 16]
        ldx M[1]
        xor x
        mul #0x9e3779b1
        st M[1]
        rsh #15
        ldx M[1]
        xor x
        st M[1]
        ldx M[0]
        ld [x + 20]
        ldx M[1]
        xor x
        mul #0x9e3779b1
        st M[1]
        rsh #15
        ldx M[1]
        xor x
        st M[1]
        ldx M[0]
        ld [x + 24]
        ldx M[1]
        xor x
        mul #0x9e3779b1
        st M[1]
        rsh #15
        ldx M[1]
        xor x
        st M[1]
        ldx M[0]
        ld [x + 28]
        ldx M[1]
        xor x
        mul #0x9e3779b1
        st M[1]
        rsh #15
        ldx M[1]
        xor x
        st M[1]
        ldx M[0]
        ld [x + 32]
        ldx M[1]
        xor x
        mul #0x9e3779b1
        st M[1]
        rsh #15
        ldx M[1]
        xor x
        st M[1]
        ldx M[0]
        ld [x + 36]
        ldx M[1]
        xor x
        mul #0x9e3779b1
        st M[1]
        rsh #15
        ldx M[1]
        xor x
        st M[1]
        ldx M[0]
        ldb [x + 6]
        or #0x600
        st M[6]                 ; 6 << 8 | next header
        ld #0xb7e15162
        st M[2]                 ; g's seed
        ld M[6]
        ldx M[2]
        xor x
        mul #0x2545f491
        st M[2]
        rsh #15
        ldx M[2]
        xor x
        st M[2]
        ldx M[0]
        ld [x + 8]
        ldx M[2]
        xor x
        mul #0x2545f491
        st M[2]
        rsh #15
        ldx M[2]
        xor x
        st M[2]
        ldx M[0]
        ld [x + 12]
        ldx M[2]
        xor x
        mul #0x2545f491
        st M[2]
        rsh #15
        ldx M[2]
        xor x
        st M[2]
        ldx M[0]
        ld [x + 16]
        ldx M[2]
        xor x
        mul #0x2545f491
        st M[2]
        rsh #15
        ldx M[2]
        xor x
        st M[2]
        ldx M[0]
        ld [x + 20]
        ldx M[2]
        xor x
        mul #0x2545f491
        st M[2]
        rsh #15
        ldx M[2]
        xor x
        st M[2]
        ldx M[0]
        ld [x + 24]
        ldx M[2]
        xor x
        mul #0x2545f491
        st M[2]
        rsh #15
        ldx M[2]
        xor x
        st M[2]
        ldx M[0]
        ld [x + 28]
        ldx M[2]
        xor x
        mul #0x2545f491
        st M[2]
        rsh #15
        ldx M[2]
        xor x
        st M[2]
        ldx M[0]
        ld [x + 32]
        ldx M[2]
        xor x
        mul #0x2545f491
        st M[2]
        rsh #15
        ldx M[2]
        xor x
        st M[2]
        ldx M[0]
        ld [x + 36]
        ldx M[2]
        xor x
        mul #0x2545f491
        st M[2]
        rsh #15
        ldx M[2]
        xor x
        st M[2]
        ld #len
        ldx M[0]
        sub x
        st M[3]                 ; the datagram's end: the frame's
        ldh [x + 4]             ; payload length
        jeq #0, room
        add #40
        ldx M[3]
        jgt x, room
        st M[3]                 ; or the datagram's
room:   ld M[3]
        ldx M[7]
        jgt x, some
        ld #0
        ja clamp
some:   sub x
clamp:  jle #16, roomok
        ld #16
roomok: st M[3]                 ; payload bytes to hash
w0:     ld M[3]
        jgt #0, w0in
        ja hashed
w0in:   jge #4, w0full
        ldx M[4]                ; a last partial word
        ldb [x + 0]
        lsh #24
        st M[11]
        ld M[3]
        jgt #1, w0b1
        ja w0part
w0b1:   ldx M[4]
        ldb [x + 1]
        lsh #16
        ldx M[11]
        or x
        st M[11]
        ld M[3]
        jgt #2, w0b2
        ja w0part
w0b2:   ldx M[4]
        ldb [x + 2]
        lsh #8
        ldx M[11]
        or x
        st M[11]
w0part: ld M[11]
        ldx M[1]
        xor x
        mul #0x9e3779b1
        st M[1]
        rsh #15
        ldx M[1]
        xor x
        st M[1]
        ja hashed
w0full: ldx M[4]
        ld [x + 0]
        ldx M[1]
        xor x
        mul #0x9e3779b1
        st M[1]
        rsh #15
        ldx M[1]
        xor x
        st M[1]
w1:     ld M[3]
        jgt #4, w1in
        ja hashed
w1in:   jge #8, w1full
        ldx M[4]                ; a last partial word
        ldb [x + 4]
        lsh #24
        st M[11]
        ld M[3]
        jgt #5, w1b1
        ja w1part
w1b1:   ldx M[4]
        ldb [x + 5]
        lsh #16
        ldx M[11]
        or x
        st M[11]
        ld M[3]
        jgt #6, w1b2
        ja w1part
w1b2:   ldx M[4]
        ldb [x + 6]
        lsh #8
        ldx M[11]
        or x
        st M[11]
w1part: ld M[11]
        ldx M[1]
        xor x
        mul #0x9e3779b1
        st M[1]
        rsh #15
        ldx M[1]
        xor x
        st M[1]
        ja hashed
w1full: ldx M[4]
        ld [x + 4]
        ldx M[1]
        xor x
        mul #0x9e3779b1
        st M[1]
        rsh #15
        ldx M[1]
        xor x
        st M[1]
w2:     ld M[3]
        jgt #8, w2in
        ja hashed
w2in:   jge #12, w2full
        ldx M[4]                ; a last partial word
        ldb [x + 8]
        lsh #24
        st M[11]
        ld M[3]
        jgt #9, w2b1
        ja w2part
w2b1:   ldx M[4]
        ldb [x + 9]
        lsh #16
        ldx M[11]
        or x
        st M[11]
        ld M[3]
        jgt #10, w2b2
        ja w2part
w2b2:   ldx M[4]
        ldb [x + 10]
        lsh #8
        ldx M[11]
        or x
        st M[11]
w2part: ld M[11]
        ldx M[1]
        xor x
        mul #0x9e3779b1
        st M[1]
        rsh #15
        ldx M[1]
        xor x
        st M[1]
        ja hashed
w2full: ldx M[4]
        ld [x + 8]
        ldx M[1]
        xor x
        mul #0x9e3779b1
        st M[1]
        rsh #15
        ldx M[1]
        xor x
        st M[1]
w3:     ld M[3]
        jgt #12, w3in
        ja hashed
w3in:   jge #16, w3full
        ldx M[4]                ; a last partial word
        ldb [x + 12]
        lsh #24
        st M[11]
        ld M[3]
        jgt #13, w3b1
        ja w3part
w3b1:   ldx M[4]
        ldb [x + 13]
        lsh #16
        ldx M[11]
        or x
        st M[11]
        ld M[3]
        jgt #14, w3b2
        ja w3part
w3b2:   ldx M[4]
        ldb [x + 14]
        lsh #8
        ldx M[11]
        or x
        st M[11]
w3part: ld M[11]
        ldx M[1]
        xor x
        mul #0x9e3779b1
        st M[1]
        rsh #15
        ldx M[1]
        xor x
        st M[1]
        ja hashed
w3full: ldx M[4]
        ld [x + 12]
        ldx M[1]
        xor x
        mul #0x9e3779b1
        st M[1]
        rsh #15
        ldx M[1]
        xor x
        st M[1]
hashed: ; h = fmix32(h)
        ld M[1]
        st M[7]
        rsh #16
        ldx M[7]
        xor x
        mul #0x85ebca6b
        st M[7]
        rsh #13
        ldx M[7]
        xor x
        mul #0xc2b2ae35
        st M[7]
        rsh #16
        ldx M[7]
        xor x
        st M[9]                 ; h
        ld M[12]
        jneq #0, ports
        ld M[6]
        and #0xff
        jeq #6, p4
        jeq #17, p4
        jeq #132, p4
        jeq #136, p4
        jeq #1, p2
        jeq #58, p2
        ja ports
p4:     ld M[3]
        jlt #4, ports
        ldx M[4]
        ld [x + 0]
        st M[5]
        ja ports
p2:     ld M[3]
        jlt #2, ports
        ldx M[4]
        ldh [x + 0]
        st M[5]
ports:  ld M[5]
        ldx M[2]
        xor x
        mul #0x2545f491
        st M[2]
        rsh #15
        ldx M[2]
        xor x
        st M[2]
        ld M[2]
        st M[7]
        rsh #16
        ldx M[7]
        xor x
        mul #0x85ebca6b
        st M[7]
        rsh #13
        ldx M[7]
        xor x
        mul #0xc2b2ae35
        st M[7]
        rsh #16
        ldx M[7]
        xor x
        jneq #0, labeled
        ld #1                   ; 0 is no label
labeled:st M[8]                 ; the label
        bsp
        ld M[7]
        add #1
        st M[7]                 ; hashed
        ld M[0]
        jneq #0, nonzero
        ret #-1                 ; A = 0: nothing is sampled
nonzero:tax
        bss
        ld M[9]
        mod x
        bsp
        ldx M[1]
        jlt x, chosen
        ret #-1                 ; h mod A >= B
chosen: ld M[8]
        add #1
        st M[8]                 ; sampled
        bss
        ld M[8]
        bsp
        ldx M[3]
        and x
        bss
        st M[10]                ; the label's first slot
probe0: ldx M[10]
        bsp
        ld M[x + 16]
        bss
        ldx M[8]
        jneq x, probe0o
        ja sample               ; seen before
probe0o:jneq #0, probe0n
        ja new                  ; an empty slot
probe0n:ld M[10]
        add #1
        bsp
        ldx M[3]
        and x
        bss
        st M[10]                ; the next slot
probe1: ldx M[10]
        bsp
        ld M[x + 16]
        bss
        ldx M[8]
        jneq x, probe1o
        ja sample               ; seen before
probe1o:jneq #0, probe1n
        ja new                  ; an empty slot
probe1n:ld M[10]
        add #1
        bsp
        ldx M[3]
        and x
        bss
        st M[10]                ; the next slot
probe2: ldx M[10]
        bsp
        ld M[x + 16]
        bss
        ldx M[8]
        jneq x, probe2o
        ja sample               ; seen before
probe2o:jneq #0, probe2n
        ja new                  ; an empty slot
probe2n:ld M[10]
        add #1
        bsp
        ldx M[3]
        and x
        bss
        st M[10]                ; the next slot
probe3: ldx M[10]
        bsp
        ld M[x + 16]
        bss
        ldx M[8]
        jneq x, probe3o
        ja sample               ; seen before
probe3o:jneq #0, probe3n
        ja new                  ; an empty slot
probe3n:ld M[10]
        add #1
        bsp
        ldx M[3]
        and x
        bss
        st M[10]                ; the next slot
probe4: ldx M[10]
        bsp
        ld M[x + 16]
        bss
        ldx M[8]
        jneq x, probe4o
        ja sample               ; seen before
probe4o:jneq #0, probe4n
        ja new                  ; an empty slot
probe4n:ld M[10]
        add #1
        bsp
        ldx M[3]
        and x
        bss
        st M[10]                ; the next slot
probe5: ldx M[10]
        bsp
        ld M[x + 16]
        bss
        ldx M[8]
        jneq x, probe5o
        ja sample               ; seen before
probe5o:jneq #0, probe5n
        ja new                  ; an empty slot
probe5n:ld M[10]
        add #1
        bsp
        ldx M[3]
        and x
        bss
        st M[10]                ; the next slot
probe6: ldx M[10]
        bsp
        ld M[x + 16]
        bss
        ldx M[8]
        jneq x, probe6o
        ja sample               ; seen before
probe6o:jneq #0, probe6n
        ja new                  ; an empty slot
probe6n:ld M[10]
        add #1
        bsp
        ldx M[3]
        and x
        bss
        st M[10]                ; the next slot
probe7: ldx M[10]
        bsp
        ld M[x + 16]
        bss
        ldx M[8]
        jneq x, probe7o
        ja sample               ; seen before
probe7o:jneq #0, probe7n
        ja new                  ; an empty slot
probe7n:ld M[10]
        add #1
        bsp
        ldx M[3]
        and x
        bss
        st M[10]                ; the next slot
        ja full                 ; eight slots taken by others
new:    bsp
        ld M[11]
        add #1
        st M[11]                ; labels kept
        bss
        ldx M[10]
        ld M[8]
        bsp
        st M[x + 16]            ; remembered
        ja flow
full:   bsp
        ld M[10]
        add #1
        st M[10]                ; sent, not remembered
flow:   ld M[5]
        ldx M[4]
        jge x, lost
        mul #12
        ldx M[13]
        add x
        bss
        st M[7]                 ; the record's first word
        bsp
        ld M[5]
        add #1
        st M[5]                 ; pending
        ld M[9]
        add #1
        st M[9]                 ; flow records
        bss
        ldx M[7]
        ld #2
        bsp
        st M[x + 0]
        bss
        ld M[8]
        bsp
        st M[x + 1]
        bss
        ld M[6]
        bsp
        st M[x + 2]
        bss
        ld M[5]
        bsp
        st M[x + 3]
        bss
        ld M[6]
        jge #0x600, flow6
        bss
        ldx M[0]
        ld [x + 12]
        ldx M[7]
        bsp
        st M[x + 4]
        bss
        ldx M[0]
        ld [x + 16]
        ldx M[7]
        bsp
        st M[x + 8]
        ld #0
        st M[x + 5]
        st M[x + 6]
        st M[x + 7]
        st M[x + 9]
        st M[x + 10]
        st M[x + 11]
        ja sample
flow6:  ldx M[0]
        ld [x + 8]
        ldx M[7]
        bsp
        st M[x + 4]
        bss
        ldx M[0]
        ld [x + 12]
        ldx M[7]
        bsp
        st M[x + 5]
        bss
        ldx M[0]
        ld [x + 16]
        ldx M[7]
        bsp
        st M[x + 6]
        bss
        ldx M[0]
        ld [x + 20]
        ldx M[7]
        bsp
        st M[x + 7]
        bss
        ldx M[0]
        ld [x + 24]
        ldx M[7]
        bsp
        st M[x + 8]
        bss
        ldx M[0]
        ld [x + 28]
        ldx M[7]
        bsp
        st M[x + 9]
        bss
        ldx M[0]
        ld [x + 32]
        ldx M[7]
        bsp
        st M[x + 10]
        bss
        ldx M[0]
        ld [x + 36]
        ldx M[7]
        bsp
        st M[x + 11]
        ja sample
lost:   ld M[6]
        add #1
        st M[6]                 ; lost
sample: bsp
        ld M[5]
        ldx M[4]
        jge x, lost2
        mul #12
        ldx M[13]
        add x
        tax                     ; the record's first word
        ld M[5]
        add #1
        st M[5]                 ; pending
        ld #1
        st M[x + 0]
        bss
        ld M[8]
        bsp
        st M[x + 1]
        bss
        ld M[9]
        bsp
        st M[x + 2]
        ld #time_sec
        st M[x + 3]
        ld #time_nsec
        st M[x + 4]
        ret #-1
lost2:  ld M[6]
        add #1
        st M[6]                 ; lost
pass:   ret #-1
