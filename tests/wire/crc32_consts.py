#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Prints the folding and Barrett constants of stack/wire/crc32_clmul.c for the reflected CRC-32
# (zlib/Ethernet polynomial 0x04C11DB7): K_n = reflect32(x^n mod P) << 1, u = floor(x^64 / P).
P = 0x104C11DB7


def xmod(n):
    r = 1
    for _ in range(n):
        r <<= 1
        if r >> 32 & 1:
            r ^= P
    return r


def refl(v, bits):
    return int(bin(v)[2:].zfill(bits)[::-1], 2)


def floordiv_x(n):
    num, q = 1 << n, 0
    while num.bit_length() >= 33:
        s = num.bit_length() - 33
        q |= 1 << s
        num ^= P << s
    return q


for n in (544, 480, 160, 96, 288, 224, 416, 352, 64, 1056, 992, 1568, 1504, 2080, 2016, 2592, 2528, 3104, 3040, 32, 128,
          192, 256, 320, 384, 448, 512):
    print("K_%d 0x%09x" % (n, refl(xmod(n), 32) << 1))
print("BARRETT_P 0x%09x" % refl(P, 33))
print("BARRETT_U 0x%09x" % refl(floordiv_x(64), 33))
