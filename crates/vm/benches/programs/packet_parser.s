# A packet-parser-like program over a 64-byte Ethernet/IPv4/TCP frame in r1:
# header loads and branches, a flow hash, and the IPv4 header checksum.
    mov %r0, 0
    ldxh %r2, [%r1+12]
    be16 %r2
    jne %r2, 0x800, out
    ldxb %r3, [%r1+14]
    and %r3, 15
    lsh %r3, 2
    ldxb %r4, [%r1+23]
    ldxw %r5, [%r1+26]
    ldxw %r6, [%r1+30]
    mov %r7, %r1
    add %r7, 14
    add %r7, %r3
    ldxh %r8, [%r7]
    ldxh %r9, [%r7+2]
    mov %r0, %r5
    xor %r0, %r6
    lsh %r8, 16
    or %r8, %r9
    xor %r0, %r8
    xor %r0, %r4
    mul %r0, 0x9e3779b1
    rsh %r0, 16
    mov %r2, 0
    mov %r3, 0
sum:
    mov %r4, %r1
    add %r4, %r3
    ldxh %r5, [%r4+14]
    add %r2, %r5
    add %r3, 2
    jlt %r3, 20, sum
    mov %r5, %r2
    rsh %r5, 16
    and %r2, 0xffff
    add %r2, %r5
    xor %r0, %r2
    and %r0, 0xffff
out:
    exit
