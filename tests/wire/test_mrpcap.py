#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Tools test for mrpcap: usage: test_mrpcap.py MRPCAP VECTORS_DIR.

Frame counts and field values are taken from the captures by this script's own small pcap
parser (not by metaroce's code), then compared with what `mrpcap check` and `mrpcap dump` print.
"""
import glob
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

FAILS = []


def expect(cond, msg):
    if not cond:
        FAILS.append(msg)
        print("FAIL: " + msg)


def read_pcap(path):
    """[(frame_no, offset_of_frame_data_in_file, bytes)] for a little-endian usec/nsec pcap."""
    data = open(path, "rb").read()
    magic = struct.unpack_from("<I", data, 0)[0]
    assert magic in (0xA1B2C3D4, 0xA1B23C4D), "test expects little-endian pcap"
    out, off, no = [], 24, 0
    while off + 16 <= len(data):
        caplen = struct.unpack_from("<I", data, off + 8)[0]
        no += 1
        out.append((no, off + 16, data[off + 16:off + 16 + caplen]))
        off += 16 + caplen
    return out


def roce_info(frame):
    """(bth_offset) if the frame is IPv4 or IPv6 UDP to 4791, else None."""
    if len(frame) < 14:
        return None
    et, l3 = struct.unpack_from("!H", frame, 12)[0], 14
    if et == 0x8100:
        et, l3 = struct.unpack_from("!H", frame, 16)[0], 18
    if et == 0x0800:
        if frame[l3 + 9] != 17:
            return None
        udp = l3 + (frame[l3] & 0xF) * 4
    elif et == 0x86DD:
        if frame[l3 + 6] != 17:
            return None
        udp = l3 + 40
    else:
        return None
    if struct.unpack_from("!H", frame, udp + 2)[0] != 4791:
        return None
    return udp + 8


def to_pcapng(src, dst):
    """Rewrite a classic pcap as big-endian pcapng (SHB, IDB with if_tsresol=9, EPBs)."""
    def block(btype, body):
        body += b"\0" * (-len(body) % 4)
        n = len(body) + 12
        return struct.pack(">II", btype, n) + body + struct.pack(">I", n)
    out = block(0x0A0D0D0A, struct.pack(">IHHq", 0x1A2B3C4D, 1, 0, -1))
    out += block(1, struct.pack(">HHI", 1, 0, 0) + struct.pack(">HHB3x", 9, 1, 9) + b"\0" * 4)
    for i, (_, _, fr) in enumerate(read_pcap(src)):
        ts = 1700000000 * 10**9 + i
        out += block(6, struct.pack(">IIIII", 0, ts >> 32, ts & 0xFFFFFFFF, len(fr), len(fr)) + fr)
    open(dst, "wb").write(out)


def last_line(out):
    lines = out.strip().splitlines()
    return lines[-1] if lines else ""


def run(args):
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.returncode, p.stdout


def main():
    mrpcap, vdir = sys.argv[1], sys.argv[2]
    files = sorted(glob.glob(os.path.join(vdir, "*.pcap")))
    expect(len(files) >= 1, "no vectors in %s" % vdir)
    per_file = {f: [(no, off, fr) for no, off, fr in read_pcap(f) if roce_info(fr)]
                for f in files}
    total = sum(len(v) for v in per_file.values())
    nonroce = sum(len(read_pcap(f)) for f in files) - total

    # 1. all vectors pass, with exactly the RoCE frame count
    rc, out = run([mrpcap, "check"] + files)
    last = last_line(out)
    expect(rc == 0, "check on vectors exit %d" % rc)
    expect(last == "%d passed, 0 failed" % total,
           "closing line %r, expected '%d passed, 0 failed'" % (last, total))
    expect(("skipped %d non-RoCE frames" % nonroce) in out, "skipped count (%d)" % nonroce)

    tmp = tempfile.mkdtemp(prefix="mrpcap_test_")
    try:
        # 2. one byte of one RoCE frame flipped: that frame is named, exit non-zero
        src = [f for f in files if len(per_file[f]) > 20][0]
        no, off, fr = per_file[src][17]
        bad = os.path.join(tmp, "flipped.pcap")
        shutil.copy(src, bad)
        blob = bytearray(open(bad, "rb").read())
        pos = off + len(fr) - 8  # a byte of payload/header before the ICRC
        blob[pos] ^= 0x20
        open(bad, "wb").write(bytes(blob))
        rc, out = run([mrpcap, "check", bad])
        last = last_line(out)
        expect(rc != 0, "flipped capture accepted (exit 0)")
        expect(last == "%d passed, 1 failed" % (len(per_file[src]) - 1), "flipped: %r" % last)
        expect(re.search(r"flipped\.pcap: frame %d: FAIL: bad ICRC" % no, out) is not None,
               "flipped frame %d not named in:\n%s" % (no, out))
        # the same in a second position: the IPv4 header (caught by the IP checksum)
        blob[pos] ^= 0x20
        no2, off2, fr2 = per_file[src][3]
        blob[off2 + 14 + 12] ^= 0x01
        open(bad, "wb").write(bytes(blob))
        rc, out = run([mrpcap, "check", bad])
        expect(rc != 0 and ("frame %d: FAIL: bad IPv4 header checksum" % no2) in out,
               "IP flip at frame %d not reported:\n%s" % (no2, out[-500:]))
        # the same capture as pcapng gives the same verdicts
        ng = os.path.join(tmp, "same.pcapng")
        to_pcapng(src, ng)
        rc, out = run([mrpcap, "check", ng])
        expect(rc == 0 and last_line(out) == "%d passed, 0 failed" % len(per_file[src]),
               "pcapng: rc %d %r" % (rc, last_line(out)))
        # a truncated file is reported and fails
        cut = os.path.join(tmp, "cut.pcap")
        open(cut, "wb").write(open(src, "rb").read()[:-7])
        rc, out = run([mrpcap, "check", cut])
        expect(rc != 0, "truncated pcap accepted")
        # not a pcap / missing file
        rc, out = run([mrpcap, "check", os.path.join(tmp, "missing.pcap")])
        expect(rc != 0, "missing file accepted")
        rc, out = run([mrpcap])
        expect(rc == 2, "no arguments: exit %d" % rc)
    finally:
        shutil.rmtree(tmp)

    # 3. dump: one line per RoCE frame, numbered as in the file, fields as in the bytes
    for f in files:
        rc, out = run([mrpcap, "dump", f])
        lines = out.strip().splitlines() if out.strip() else []
        expect(rc == 0, "dump %s exit %d" % (f, rc))
        expect(len(lines) == len(per_file[f]),
               "dump %s: %d lines for %d RoCE frames" % (f, len(lines), len(per_file[f])))
        for (no, _, fr), line in zip(per_file[f], lines):
            bth = roce_info(fr)
            op = fr[bth]
            qpn = struct.unpack_from("!I", fr, bth + 4)[0] & 0xFFFFFF
            psn = struct.unpack_from("!I", fr, bth + 8)[0] & 0xFFFFFF
            ok = line.startswith("%d " % no) and (" psn=%d " % psn) in line and \
                (" qpn=0x%06x " % qpn) in line
            if op in (0x06, 0x0A, 0x0C):  # RETH
                va, rkey, dlen = struct.unpack_from("!QII", fr, bth + 12)
                ok = ok and ("reth=va:0x%x,rkey:0x%x,len:%d" % (va, rkey, dlen)) in line
            if op == 0x11:  # ACK: AETH syndrome decoded
                syn = fr[bth + 12]
                kind = {0x00: "ACK", 0x20: "RNR_NAK", 0x60: "NAK"}.get(syn & 0x60, "reserved")
                ok = ok and (" aeth=%s(" % kind) in line
            if not ok:
                expect(False, "dump %s frame %d: %r" % (f, no, line))
                break

    print("%d passed, %d failed" % (1 if not FAILS else 0, 1 if FAILS else 0))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
