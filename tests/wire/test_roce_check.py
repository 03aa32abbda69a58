#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Tools test for scripts/roce_check.py (independent, scapy-based ICRC checker).

usage: test_roce_check.py ROCE_CHECK_PY GEN_FRAMES VECTORS_DIR
1. every RoCE frame of the rxe vectors passes (count from this script's own pcap walk);
2. frames built by metaroce (gen_frames: every opcode, IPv4/IPv6, VLAN) pass scapy's ICRC;
3. one flipped byte makes it fail and name the frame, also in MetaRoCE frames (opcodes 0xC0+,
   ICRC computed by the script from raw bytes), IPv4 and IPv6. Exit 77 (skip) without
   python3-scapy.
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
            out.append((no, off + 16, caplen, (fr[udp + 8] & 0xE0) == 0xC0, et == 0x86DD,
                        udp + 8))
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
        nmrc = sum(1 for r in recs if r[3])
        expect(nmrc > 100 and ("MetaRoCE frames checked: %d" % nmrc) in out,
               "MetaRoCE count %d not reported:\n%s" % (nmrc, out[-300:]))
        # flip one byte before the ICRC of: a standard IPv4 and IPv6 frame, a MetaRoCE IPv4 and
        # IPv6 frame, and a MetaRoCE MRETH byte (msg_seq) in the middle of one
        blob = bytearray(open(gpath, "rb").read())
        std4 = [r for r in recs if not r[3] and not r[4]]
        std6 = [r for r in recs if not r[3] and r[4]]
        mrc4 = [r for r in recs if r[3] and not r[4]]
        mrc6 = [r for r in recs if r[3] and r[4]]
        picks = [std4[len(std4) // 2], std6[-5], mrc4[len(mrc4) // 3], mrc6[-7]]
        for no, off, caplen, _, _, _ in picks:
            blob[off + caplen - 6] ^= 0x01
        mid = mrc4[len(mrc4) // 2]
        blob[mid[1] + mid[5] + 12 + 5] ^= 0x40  # MRETH msg_seq, 2nd byte
        picks.append(mid)
        open(gpath, "wb").write(bytes(blob))
        rc, out, last = run([checker, gpath])
        expect(rc != 0 and last == "%d passed, %d failed" % (n - len(picks), len(picks)),
               "flipped: %r" % last)
        for no, _, _, _, _, _ in picks:
            expect(("frame %d: FAIL" % no) in out, "frame %d not named" % no)
    finally:
        shutil.rmtree(tmp)
    print("%d passed, %d failed" % (0 if FAILS else 1, 1 if FAILS else 0))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
