#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Prints the folding constants of stack/wire/crc32_clmul.c for the reflected CRC-32
# (zlib/Ethernet polynomial 0x04C11DB7): K_n = reflect32(x^n mod P) << 1.
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


for n in (544, 480, 160, 96, 288, 224, 416, 352, 2080, 2016, 32):
    print("K_%d 0x%09x" % (n, refl(xmod(n), 32) << 1))
# qprod: kq[m][j] = K_(512 m + 64 (7 - j) + 32), qword j of a 512-bit register m blocks
# before the stream's last one (m = 0..7).
print("kq:")
for m in range(8):
    print("\t{ " + ", ".join("0x%09xull" % (refl(xmod(512 * m + 64 * (7 - j) + 32), 32) << 1)
                            for j in range(8)) + " },")
