; xPF flow accounting: programs/flows.c's rules in classic BPF with
; persistent memory and loops (docs/monitor.md, "The xPF version"). Per
; 5-tuple flow: packets, IP bytes, first and last time, the OR of TCP
; flags; a flow ends at its next packet after the idle or active timeout,
; or at a TCP FIN or RST; a full table sends the packet as a one-packet
; record "lack of resources", counted. Ended flows go to a log in memory
; that user space empties after each packet (monitor::XpfFlows); user space
; ends what is left at the end. Passes every frame (no load leaves it).
;
; Persistent words (user space sets 0..5 before the first packet):
;    0, 1  idle timeout: seconds, nanoseconds
;    2, 3  active timeout: seconds, nanoseconds
;    4     slots - 1 (slots: a power of two)
;    5     capacity: flows held at once
;    6     flows held
;    7     packets a full table could not account (each sent as a record)
;    8     records lost to a full log
;    9     records pending in the log
;   10     packets over budget (the exception handler)
;   12..31 this packet's flow, as a slot (below)
;   32..111 the log: 4 records of 20 words, each a slot with the
;          flowEndReason (IPFIX) in place of the state
;   112..  the table: slot n at 112 + 20 n
; A slot: [0] state (0 free, 1 a flow, 2 free again), [1..4] source address,
; [5..8] destination (IPv4: the first word), [9] source port << 16 |
; destination port, [10] protocol | family << 8, [11, 12] packets (low,
; high word), [13, 14] bytes, [15, 16] first time (s, ns), [17, 18] last
; time, [19] TCP flags.
;
; Scratch: M[0] IP bytes, M[1] TCP flags, M[2] header offset, M[3]
; transport offset, M[4] walk count then slots - 1, M[5] later fragment
; then the probe index, M[6] slot base, M[7] probes left, M[8] a free slot
; (0: none), M[9] now (s), M[10] now (ns), M[11], M[12], M[13] copy from, to,
; words left (M[13]: the frame's length while parsing), M[14] where to go
; after a copy, M[15] flowEndReason.
        ja start

; Copies M[13] words from persistent word M[11] + 1 to M[12] + 1, then
; goes where M[14] says. Entered and left with the scratch bank.
copy:   ldx M[11]
        bsp
        ld M[x + 1]
        bss
        ldx M[12]
        bsp
        st M[x + 1]
        bss
        ld M[11]
        add #1
        st M[11]
        ld M[12]
        add #1
        st M[12]
        ld M[13]
        sub #1
        st M[13]
        jeq #0, copied
        ja copy
copied: ld M[14]
        jeq #1, to_reset
        jeq #2, to_delete
        jeq #3, to_pass
        ja inserted
to_reset:
        ja reset
to_delete:
        ja delete
to_pass:
        ja pass

; Sends slot M[6] to the log with reason M[15], then goes where M[14]
; says. Entered with the scratch bank.
emit:   bsp
        ld M[9]
        jge #4, lost
        tax
        add #1
        st M[9]
        txa
        mul #20
        add #32
        bss
        st M[12]
        tax
        ld M[15]
        bsp
        st M[x + 0]
        bss
        ld M[6]
        st M[11]
        ld #19
        st M[13]
        ja copy
lost:   ld M[8]
        add #1
        st M[8]
        bss
        ja copied

; The flow's key and facts, from the frame; anything not IP passes.
start:  ld #len
        st M[13]
        jlt #14, early
        ldh [12]
        ldx #14
        jeq #0x8100, vlan
        jeq #0x88a8, vlan
        ja l3
vlan:   stx M[2]
        ld M[13]
        sub #4
        jlt x, early            ; no room for the tag
        ldh [x + 2]
        ldx M[2]
        st M[3]
        txa
        add #4
        tax
        ld M[3]
        jeq #0x8100, vlan2
        jeq #0x88a8, vlan2
        ja l3
vlan2:  stx M[2]
        ld M[13]
        sub #4
        jlt x, early
        ldh [x + 2]
        ldx M[2]
        st M[3]
        txa
        add #4
        tax
        ld M[3]
l3:     stx M[2]               ; the IP header's offset
        jeq #0x0800, ipv4
        jeq #0x86dd, ipv6
early:  ret #-1                ; not IP, or cut short before its header

ipv4:   ld M[13]
        sub #20
        jlt x, pass4            ; no room for the header
        ldb [x + 0]
        rsh #4
        jneq #4, pass4
        ldb [x + 0]
        and #0xf
        jlt #5, pass4
        lsh #2
        add x
        st M[3]                ; the transport header's offset
        ldh [x + 2]            ; total length
        jneq #0, v4len
        ld M[13]               ; 0: what the frame holds
        sub x
        ja v4bytes
v4len:  st M[0]
        ld M[3]
        sub x                  ; the header's length
        tax
        ld M[0]
        jlt x, pass4            ; a header longer than the datagram
v4bytes:
        st M[0]
        ldx M[2]
        ldb [x + 9]
        st M[4]                ; the protocol, for now
        bsp
        ld #0
        st M[13]
        st M[14]
        st M[15]
        st M[16]
        st M[17]
        st M[18]
        st M[19]
        st M[20]
        st M[21]
        st M[22]
        bss
        ld M[4]
        or #0x400              ; family 4
        bsp
        st M[22]
        ld [x + 12]
        st M[13]
        ld [x + 16]
        st M[17]
        bss
        ldh [x + 6]
        and #0x1fff
        jneq #0, account       ; a later fragment: no ports
        ldx M[3]
        ja transport
pass4:  ret #-1                ; not an IPv4 datagram

ipv6:   ld M[13]
        sub #40
        jlt x, pass6
        ldb [x + 0]
        rsh #4
        jneq #6, pass6
        ldh [x + 4]            ; payload length
        jeq #0, v6whole
        add #40
        ja v6bytes
v6whole:
        ld M[13]
        sub x
v6bytes:
        st M[0]
        bsp
        ld #0
        st M[21]
        ld [x + 8]
        st M[13]
        ld [x + 12]
        st M[14]
        ld [x + 16]
        st M[15]
        ld [x + 20]
        st M[16]
        ld [x + 24]
        st M[17]
        ld [x + 28]
        st M[18]
        ld [x + 32]
        st M[19]
        ld [x + 36]
        st M[20]
        bss
        ldb [x + 6]
        st M[1]                ; the next header, for now
        txa
        add #40
        st M[3]
        ld #8
        st M[4]
        ld #0
        st M[5]
walk:   ld M[4]                ; at most eight extension headers
        jeq #0, walked
        sub #1
        st M[4]
        ld M[1]
        jeq #0, ext
        jeq #43, ext
        jeq #60, ext
        jeq #44, frag
        ja walked
ext:    ldx M[3]
        ld M[13]
        sub #2
        jlt x, pass6            ; no room for the header's first two bytes
        ldb [x + 0]
        st M[1]
        ldb [x + 1]
        add #1
        lsh #3
        add x
        st M[3]
        ja walk
frag:   ldx M[3]
        ld M[13]
        sub #8
        jlt x, pass6
        ldb [x + 0]
        st M[1]
        ldh [x + 2]
        rsh #3
        st M[5]                ; nonzero: a later fragment
        txa
        add #8
        st M[3]
        ja walk
pass6:  ret #-1                ; not an IPv6 datagram, or its headers cut short
walked: ld M[1]
        or #0x600              ; family 6
        bsp
        st M[22]
        bss
        ld #0                  ; M[1]: TCP's flags from here
        st M[1]
        ld M[5]
        jneq #0, account
        ldx M[3]

; The ports (and TCP's flags) of the transport header at X, if there.
transport:
        bsp
        ld M[22]
        bss
        and #0xff
        jeq #6, ports
        jeq #17, ports
        jeq #132, ports
        jeq #136, ports
        jeq #1, icmp
        jeq #58, icmp
        ja account
ports:  st M[2]
        ld M[13]
        sub #4
        jlt x, account
        ld [x + 0]
        bsp
        st M[21]
        bss
        ld M[2]
        jneq #6, account
        ld M[13]
        sub #14
        jlt x, account
        ldb [x + 13]
        st M[1]
        ja account
icmp:   ld M[13]
        sub #2
        jlt x, account
        ldh [x + 0]
        bsp
        st M[21]
        bss

; The flow's slot: hash the key, probe from there.
account:
        ld #time_sec
        st M[9]
        ld #time_nsec
        st M[10]
        bsp
        ld M[13]
        mul #0x9e3779b1
        ldx M[14]
        xor x
        mul #0x9e3779b1
        ldx M[15]
        xor x
        mul #0x9e3779b1
        ldx M[16]
        xor x
        mul #0x9e3779b1
        ldx M[17]
        xor x
        mul #0x9e3779b1
        ldx M[18]
        xor x
        mul #0x9e3779b1
        ldx M[19]
        xor x
        mul #0x9e3779b1
        ldx M[20]
        xor x
        mul #0x9e3779b1
        ldx M[21]
        xor x
        mul #0x9e3779b1
        ldx M[22]
        xor x
        mul #0x9e3779b1
        tax
        rsh #16
        xor x
        ldx M[4]
        bss
        stx M[4]               ; slots - 1
        and x
        st M[5]
        txa
        add #1
        st M[7]                ; probes left: every slot once
        ld #0
        st M[8]
probe:  ld M[5]
        mul #20
        add #112
        st M[6]
        tax
        bsp
        ld M[x + 0]
        jeq #0, empty
        jeq #2, grave
        ld M[x + 1]
        ldx M[13]
        jneq x, next
        bss
        ldx M[6]
        bsp
        ld M[x + 2]
        ldx M[14]
        jneq x, next
        bss
        ldx M[6]
        bsp
        ld M[x + 3]
        ldx M[15]
        jneq x, next
        bss
        ldx M[6]
        bsp
        ld M[x + 4]
        ldx M[16]
        jneq x, next
        bss
        ldx M[6]
        bsp
        ld M[x + 5]
        ldx M[17]
        jneq x, next
        bss
        ldx M[6]
        bsp
        ld M[x + 6]
        ldx M[18]
        jneq x, next
        bss
        ldx M[6]
        bsp
        ld M[x + 7]
        ldx M[19]
        jneq x, next
        bss
        ldx M[6]
        bsp
        ld M[x + 8]
        ldx M[20]
        jneq x, next
        bss
        ldx M[6]
        bsp
        ld M[x + 9]
        ldx M[21]
        jneq x, next
        bss
        ldx M[6]
        bsp
        ld M[x + 10]
        ldx M[22]
        jneq x, next
        bss
        ja found
grave:  bss
        ld M[8]                ; the first free slot seen
        jneq #0, next
        ld M[6]
        st M[8]
next:   bss
        ld M[7]
        sub #1
        st M[7]
        jeq #0, notfound
        ld M[5]
        add #1
        ldx M[4]
        and x
        st M[5]
        ja probe
empty:  bss
        ld M[8]
        jneq #0, notfound
        ld M[6]
        st M[8]
notfound:
        ld M[8]
        jeq #0, full
        bsp
        ld M[6]
        ldx M[5]
        jge x, full_p          ; as many flows as the capacity
        add #1
        st M[6]
        ; a fresh flow in the staging slot, copied to the free slot
        ld #0
        st M[23]
        st M[24]
        st M[25]
        st M[26]
        st M[31]
        bss
        ld M[9]
        bsp
        st M[27]
        st M[29]
        bss
        ld M[10]
        bsp
        st M[28]
        st M[30]
        bss
        ld M[8]
        st M[6]
        tax
        ld #1
        bsp
        st M[x + 0]
        bss
        ld #12
        st M[11]
        txa
        st M[12]
        ld #19
        st M[13]
        ld #4
        st M[14]
        ja copy
full_p: bss
full:   bsp                    ; this packet as a record of its own
        ld M[7]
        add #1
        st M[7]
        ld #1
        st M[23]
        ld #0
        st M[24]
        st M[26]
        bss
        ld M[0]
        bsp
        st M[25]
        bss
        ld M[1]
        bsp
        st M[31]
        bss
        ld M[9]
        bsp
        st M[27]
        st M[29]
        bss
        ld M[10]
        bsp
        st M[28]
        st M[30]
        bss
        ld #12
        st M[6]
        ld #5
        st M[15]
        ld #3
        st M[14]
        ja emit

; Slot M[6] holds the flow: first, has it run out?
found:  ldx M[6]
        bsp
        ld M[x + 18]           ; idle: now - last against the idle timeout
        bss
        st M[2]
        ld M[10]
        ldx M[2]
        jge x, idle_ns
        add #1000000000
        sub x
        st M[3]
        ld #1
        ja idle_s
idle_ns:
        sub x
        st M[3]
        ld #0
idle_s: st M[4]                ; the borrow
        ldx M[6]
        bsp
        ld M[x + 17]
        bss
        st M[2]
        ld M[9]
        ldx M[2]
        sub x
        ldx M[4]
        sub x
        tax                    ; seconds since the last packet
        bsp
        ld M[0]
        jgt x, not_idle
        jlt x, idle
        ld M[1]
        bss
        ldx M[3]
        jgt x, not_idle_s
        ld #1
        st M[15]
        ja expired
idle:   bss
        ld #1
        st M[15]
        ja expired
not_idle:
        bss
not_idle_s:
        ldx M[6]               ; active: now - first against the active timeout
        bsp
        ld M[x + 16]
        bss
        st M[2]
        ld M[10]
        ldx M[2]
        jge x, act_ns
        add #1000000000
        sub x
        st M[3]
        ld #1
        ja act_s
act_ns: sub x
        st M[3]
        ld #0
act_s:  st M[4]
        ldx M[6]
        bsp
        ld M[x + 15]
        bss
        st M[2]
        ld M[9]
        ldx M[2]
        sub x
        ldx M[4]
        sub x
        tax
        bsp
        ld M[2]
        jgt x, not_act
        jlt x, act
        ld M[3]
        bss
        ldx M[3]
        jgt x, inserted
        ld #2
        st M[15]
        ja expired
act:    bss
        ld #2
        st M[15]
expired:
        ld #1
        st M[14]
        ja emit
not_act:
        bss
        ja inserted

; After its record went out, the flow starts again.
reset:  ldx M[6]
        ld #0
        bsp
        st M[x + 11]
        st M[x + 12]
        st M[x + 13]
        st M[x + 14]
        st M[x + 19]
        bss
        ld M[9]
        bsp
        st M[x + 15]
        bss
        ld M[10]
        bsp
        st M[x + 16]
        bss

; Count the packet in slot M[6].
inserted:
        ldx M[6]
        bsp
        ld M[x + 11]
        add #1
        st M[x + 11]
        jneq #0, counted
        ld M[x + 12]
        add #1
        st M[x + 12]
counted:
        bss
        ld M[0]
        st M[2]
        ldx M[6]
        bsp
        ld M[x + 13]
        bss
        ldx M[2]
        add x
        st M[3]
        ldx M[6]
        bsp
        st M[x + 13]
        bss
        ld M[3]
        ldx M[2]
        jge x, summed          ; no carry
        ldx M[6]
        bsp
        ld M[x + 14]
        add #1
        st M[x + 14]
        bss
summed: ldx M[6]
        ld M[9]
        bsp
        st M[x + 17]
        bss
        ld M[10]
        bsp
        st M[x + 18]
        bss
        ld M[1]
        st M[2]
        bsp
        ld M[x + 19]
        bss
        ldx M[2]
        or x
        ldx M[6]
        bsp
        st M[x + 19]
        bss
        ld M[1]                ; FIN or RST (flags are TCP's only)
        jset #0x05, fin
        ja pass
fin:    ld #3
        st M[15]
        ld #2
        st M[14]
        ja emit

; After the record of a FIN or RST: the slot is free again.
delete: ldx M[6]
        ld #2
        bsp
        st M[x + 0]
        ld M[6]
        sub #1
        st M[6]
        bss
pass:   ret #-1
        exc
        bsp
        ld M[10]
        add #1
        st M[10]
        ret #-1
