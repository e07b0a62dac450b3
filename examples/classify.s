# sluice demo: classify an Ethernet frame.
# In: r1 = the frame, r2 = its length.
# Out: r0 = 1 for IPv4 UDP to port 53 (DNS), 2 for other IPv4, 0 for the rest.
    mov %r0, 0
    jlt %r2, 34, done          # Ethernet (14) + minimal IPv4 (20)
    ldxh %r3, [%r1+12]         # EtherType, network order
    be16 %r3
    jne %r3, 0x800, done
    mov %r0, 2                 # IPv4 from here on
    ldxb %r4, [%r1+14]         # version and header length
    and %r4, 0xf
    lsh %r4, 2                 # IPv4 header length in bytes
    jlt %r4, 20, done
    ldxb %r5, [%r1+23]         # protocol
    jne %r5, 17, done          # UDP only
    add %r4, 14                # offset of the UDP header
    mov %r6, %r4
    add %r6, 8
    jgt %r6, %r2, done         # the UDP header must be inside the frame
    add %r1, %r4
    ldxh %r3, [%r1+2]          # UDP destination port
    be16 %r3
    jne %r3, 53, done
    mov %r0, 1
done:
    exit
