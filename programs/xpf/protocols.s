; xPF: packets and bytes per IPv4 protocol p, in persistent memory:
; word 2p counts packets, word 2p+1 bytes. Other frames pass uncounted.
;   sluice xpf run programs/xpf/protocols.s --words 512 --pcap CAPTURE
        ldh [12]
        jneq #0x800, done
        ldb [23]
        lsh #1
        st M[1]          ; 2p, in scratch
        tax
        bsp
        ld M[x + 0]
        add #1
        st M[x + 0]      ; packets
        ld M[x + 1]
        bss
        st M[2]          ; bytes so far
        ld #len
        ldx M[2]
        add x
        ldx M[1]
        bsp
        st M[x + 1]      ; bytes
        bss
done:   ret #-1
