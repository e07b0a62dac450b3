# A tight arithmetic loop: 1000 iterations of four instructions.
    mov %r0, 0
    mov %r1, 1000
loop:
    add %r0, %r1
    xor %r0, 0x5a
    sub %r1, 1
    jne %r1, 0, loop
    exit
