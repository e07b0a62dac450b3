; xPF: packets per IPv4 source address, in an open-addressing table of 256
; slots [address, packets] (persistent words 0..511) probed linearly: a
; loop, bounded by the budget. Word 512 counts the packets whose probe
; ran over budget (a full table): the exception handler.
;   sluice xpf run programs/xpf/sources.s --words 513 --pcap CAPTURE
        ldh [12]
        jneq #0x800, done
        ld [26]
        st M[0]              ; the key, in scratch
        rsh #16
        tax
        ld M[0]
        xor x
        and #0xff
        lsh #1
        st M[2]              ; the slot's first word
probe:  ldx M[2]
        bsp
        ld M[x + 0]          ; the slot's address
        bss
        ldx M[0]
        jeq x, hit
        jeq #0, claim
        ld M[2]              ; the next slot
        add #2
        and #0x1ff
        st M[2]
        ja probe
claim:  ldx M[2]
        ld M[0]
        bsp
        st M[x + 0]
        bss
hit:    ldx M[2]
        bsp
        ld M[x + 1]
        add #1
        st M[x + 1]
        bss
done:   ret #-1
        exc
        bsp
        ld M[512]
        add #1
        st M[512]
        ret #-1
