#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Tools test for scripts/roce_check.py (independent, scapy-based ICRC checker).

usage: test_roce_check.py ROCE_CHECK_PY GEN_FRAMES VECTORS_DIR
1. every RoCE frame of the rxe vectors passes (count from this script's own pcap walk);
2. frames built by metaroce (gen_frames: every opcode, IPv4/IPv6, VLAN) pass scapy's ICRC;
3. one flipped byte makes it fail and name the frame. Exit 77 (skip) without python3-scapy.
"""
import glob
import os
import shutil
import struct
import subprocess
import sys
import tempfile

try:
    import scapy.contrib.roce  # noqa: F401
except ImportError:
    print("python3-scapy not importable: skipping")
    sys.exit(77)

FAILS = []


def expect(cond, msg):
    if not cond:
        FAILS.append(msg)
        print("FAIL: " + msg)


def roce_records(path):
    data = open(path, "rb").read()
    out, off, no = [], 24, 0
    while off + 16 <= len(data):
        caplen = struct.unpack_from("<I", data, off + 8)[0]
        fr = data[off + 16:off + 16 + caplen]
        no += 1
        et, l3 = struct.unpack_from("!H", fr, 12)[0], 14
        if et == 0x8100:
            et, l3 = struct.unpack_from("!H", fr, 16)[0], 18
        udp = None
        if et == 0x0800 and fr[l3 + 9] == 17:
            udp = l3 + (fr[l3] & 0xF) * 4
        elif et == 0x86DD and fr[l3 + 6] == 17:
            udp = l3 + 40
        if udp is not None and struct.unpack_from("!H", fr, udp + 2)[0] == 4791:
            out.append((no, off + 16, caplen))
        off += 16 + caplen
    return out


def run(args):
    p = subprocess.run([sys.executable] + args, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    lines = p.stdout.strip().splitlines()
    return p.returncode, p.stdout, lines[-1] if lines else ""


def main():
    checker, gen, vdir = sys.argv[1:4]
    files = sorted(glob.glob(os.path.join(vdir, "*.pcap")))
    total = sum(len(roce_records(f)) for f in files)
    rc, out, last = run([checker] + files)
    expect(rc == 0 and last == "%d passed, 0 failed" % total,
           "vectors: rc %d, %r (expected %d passed)" % (rc, last, total))

    tmp = tempfile.mkdtemp(prefix="roce_check_test_")
    try:
        gpath = os.path.join(tmp, "gen.pcap")
        g = subprocess.run([gen, gpath], stdout=subprocess.PIPE, text=True)
        expect(g.returncode == 0, "gen_frames failed")
        n = int(g.stdout.strip())
        recs = roce_records(gpath)
        expect(n == len(recs) and n > 100, "gen_frames wrote %d, found %d" % (n, len(recs)))
        rc, out, last = run([checker, gpath])
        expect(rc == 0 and last == "%d passed, 0 failed" % n,
               "generated frames: rc %d, %r\n%s" % (rc, last, out[-2000:]))
        # flip one payload byte of an IPv4 and of an IPv6 frame
        blob = bytearray(open(gpath, "rb").read())
        picks = [recs[len(recs) // 8], recs[-5]]
        for no, off, caplen in picks:
            blob[off + caplen - 6] ^= 0x01
        open(gpath, "wb").write(bytes(blob))
        rc, out, last = run([checker, gpath])
        expect(rc != 0 and last == "%d passed, 2 failed" % (n - 2), "flipped: %r" % last)
        for no, _, _ in picks:
            expect(("frame %d: FAIL" % no) in out, "frame %d not named" % no)
    finally:
        shutil.rmtree(tmp)
    print("%d passed, %d failed" % (0 if FAILS else 1, 1 if FAILS else 0))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
