#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Tools test for mrpcap: usage: test_mrpcap.py MRPCAP VECTORS_DIR [GEN_FRAMES].

Frame counts and field values are taken from the captures by this script's own small pcap
parser (not by metaroce's code), then compared with what `mrpcap check` and `mrpcap dump` print.
With GEN_FRAMES (which writes every opcode, MetaRoCE included, with the pcap writer), MetaRoCE
frames are checked too: counts per opcode, MRETH and SACK fields decoded here from the bytes, and
frames edited here (MRETH ver 2, offset + payload > msg_len; ICRC recomputed by this script) fail.
"""
import glob
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

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


def icrc_fix(frame):
    """Rewrite the ICRC of an IPv4 or IPv6 RoCE v2 frame (A17.3.3 pseudo-header), in place."""
    bth = roce_info(frame)
    l3 = 18 if struct.unpack_from("!H", frame, 12)[0] == 0x8100 else 14
    b = bytearray(frame[l3:-4])
    if b[0] >> 4 == 4:
        ihl = (b[0] & 0xF) * 4
        b[1] = b[8] = b[10] = b[11] = 0xFF
    else:
        ihl = 40
        b[0] |= 0x0F
        b[1] = b[2] = b[3] = b[7] = 0xFF
    b[ihl + 6] = b[ihl + 7] = 0xFF
    b[bth - l3 + 4] = 0xFF
    frame[-4:] = struct.pack("<I", zlib.crc32(b"\xff" * 8 + bytes(b)) & 0xFFFFFFFF)


MRC_NAMES = {0x00: "SEND_FIRST", 0x01: "SEND_MIDDLE", 0x02: "SEND_LAST",
             0x03: "SEND_LAST_WITH_IMMEDIATE", 0x04: "SEND_ONLY",
             0x05: "SEND_ONLY_WITH_IMMEDIATE", 0x06: "RDMA_WRITE_FIRST",
             0x07: "RDMA_WRITE_MIDDLE", 0x08: "RDMA_WRITE_LAST",
             0x09: "RDMA_WRITE_LAST_WITH_IMMEDIATE", 0x0A: "RDMA_WRITE_ONLY",
             0x0B: "RDMA_WRITE_ONLY_WITH_IMMEDIATE", 0x0C: "RDMA_READ_REQUEST",
             0x0D: "RDMA_READ_RESPONSE_FIRST", 0x0E: "RDMA_READ_RESPONSE_MIDDLE",
             0x0F: "RDMA_READ_RESPONSE_LAST", 0x10: "RDMA_READ_RESPONSE_ONLY",
             0x11: "ACKNOWLEDGE", 0x12: "ATOMIC_ACKNOWLEDGE", 0x13: "COMPARE_SWAP",
             0x14: "FETCH_ADD", 0x16: "SEND_LAST_WITH_INVALIDATE",
             0x17: "SEND_ONLY_WITH_INVALIDATE"}


def mreth_text(fr, bth):
    """The dump text of an MRETH, decoded from the bytes per docs/metaroce-wire.md."""
    m = bth + 12
    ver, flags, path = fr[m] >> 4, fr[m] & 0xF, fr[m + 1]
    seq, off, mlen, ts = struct.unpack_from("!IIII", fr, m + 4)
    names = [n for bit, n in ((1, "RETX"), (2, "TLP"), (4, "ECE"), (8, "rsvd")) if flags & bit]
    return ver, "mreth=path:%d,msg_seq:%d,off:%d/%d,flags:%s,ts:0x%08x" % (
        path, seq, off, mlen, "|".join(names) or "-", ts)


def sack_text(fr, bth):
    """cum/sack/ce text of a MetaRoCE ACK: BTH PSN, SACKETH after MRETH (20) and AETH (4)."""
    psn = struct.unpack_from("!I", fr, bth + 8)[0] & 0xFFFFFF
    s = bth + 12 + 20 + 4
    base = struct.unpack_from("!I", fr, s)[0] & 0xFFFFFF
    bits = int.from_bytes(fr[s + 4:s + 20], "big")  # bit 0 = MSB of the first byte
    have = [i for i in range(128) if bits >> (127 - i) & 1]
    ranges, i = [], 0
    while i < len(have):
        j = i
        while j + 1 < len(have) and have[j + 1] == have[j] + 1:
            j += 1
        lo, hi = (base + have[i]) & 0xFFFFFF, (base + have[j]) & 0xFFFFFF
        ranges.append("0x%06x" % lo if i == j else "0x%06x-0x%06x" % (lo, hi))
        i = j + 1
    ce = struct.unpack_from("!H", fr, s + 20)[0]
    return "cum 0x%06x sack [%s] ce %d" % (psn, ",".join(ranges), ce)


def test_metaroce(mrpcap, gen, tmp):
    gpath = os.path.join(tmp, "gen.pcap")
    g = subprocess.run([gen, gpath], stdout=subprocess.PIPE, text=True)
    expect(g.returncode == 0, "gen_frames failed")
    recs = [(no, off, fr) for no, off, fr in read_pcap(gpath) if roce_info(fr)]
    mrc = [(no, off, fr) for no, off, fr in recs if fr[roce_info(fr)] & 0xE0 == 0xC0]
    per_op = {}
    for _, _, fr in mrc:
        per_op[fr[roce_info(fr)]] = per_op.get(fr[roce_info(fr)], 0) + 1
    expect(len(per_op) == 23, "gen_frames: %d MetaRoCE opcodes, expected 23" % len(per_op))

    rc, out = run([mrpcap, "check", gpath])
    expect(rc == 0 and last_line(out) == "%d passed, 0 failed" % len(recs),
           "generated: rc %d %r" % (rc, last_line(out)))
    expect(("MetaRoCE frames: %d passed, 0 failed" % len(mrc)) in out,
           "MetaRoCE total %d not reported" % len(mrc))
    for op, cnt in per_op.items():
        pat = r"^\s+MRC_%s\s+%d$" % (MRC_NAMES[op & 0x1F], cnt)
        expect(re.search(pat, out, re.M) is not None, "count of opcode 0x%02x (%d)" % (op, cnt))

    # dump: MRETH on every MetaRoCE line, SACK ranges on every MetaRoCE ACK
    rc, out = run([mrpcap, "dump", gpath])
    lines = {int(l.split()[0]): l for l in out.strip().splitlines()}
    expect(rc == 0 and len(lines) == len(recs), "dump generated: rc %d, %d lines" % (rc, len(lines)))
    nsack = 0
    for no, _, fr in mrc:
        bth = roce_info(fr)
        line = lines.get(no, "")
        ver, txt = mreth_text(fr, bth)
        ok = ver == 1 and (" MRC_%s " % MRC_NAMES[fr[bth] & 0x1F]) in line and (" " + txt + " ") in line
        if fr[bth] & 0x1F in (0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C):  # RETH after MRETH
            va, rkey, dlen = struct.unpack_from("!QII", fr, bth + 32)
            ok = ok and ("reth=va:0x%x,rkey:0x%x,len:%d" % (va, rkey, dlen)) in line
        if fr[bth] == 0xD1:
            ok = ok and (" " + sack_text(fr, bth) + " ") in line and " aeth=ACK(" in line
            nsack += 1
        if not ok:
            expect(False, "dump frame %d: %r (want %r)" % (no, line, txt))
            break
    expect(nsack >= 2, "only %d MetaRoCE ACKs" % nsack)
    # the documented example (the last frame gen_frames writes)
    expect(" cum 0x000123 sack [0x000125-0x000130,0x000133] ce 2 " in lines.get(recs[-1][0], ""),
           "SACK example: %r" % lines.get(recs[-1][0]))
    expect("flags:ECE," in lines.get(recs[-1][0], ""), "ECE flag not shown")

    # edited MetaRoCE frames with a valid ICRC: MRETH ver 2; offset + payload > msg_len
    blob = bytearray(open(gpath, "rb").read())
    datas = [r for r in mrc if r[2][roce_info(r[2])] & 0x1F == 0x02 and len(r[2]) > 100]
    (no1, off1, fr1), (no2, off2, fr2) = mrc[0], datas[0]
    f = bytearray(fr1)
    f[roce_info(f) + 12] = (2 << 4) | (f[roce_info(f) + 12] & 0xF)
    icrc_fix(f)
    blob[off1:off1 + len(f)] = f
    f = bytearray(fr2)
    b = roce_info(f)
    offset = struct.unpack_from("!I", f, b + 20)[0]
    struct.pack_into("!I", f, b + 24, offset)  # msg_len = offset, and the packet has payload
    icrc_fix(f)
    blob[off2:off2 + len(f)] = f
    bad = os.path.join(tmp, "mrc_bad.pcap")
    open(bad, "wb").write(bytes(blob))
    rc, out = run([mrpcap, "check", bad])
    expect(rc == 1 and last_line(out) == "%d passed, 2 failed" % (len(recs) - 2),
           "edited MetaRoCE: rc %d %r" % (rc, last_line(out)))
    expect(re.search(r"frame %d: FAIL: bad BTH transport version or MRETH version \(MRC_" % no1,
                     out) is not None, "ver 2 frame %d not named:\n%s" % (no1, out[:600]))
    expect(re.search(r"frame %d: FAIL: payload length illegal for opcode \(MRC_SEND_LAST" % no2,
                     out) is not None, "offset frame %d not named" % no2)
    expect(("MetaRoCE frames: %d passed, 2 failed" % (len(mrc) - 2)) in out, "MetaRoCE fail count")


def last_line(out):
    lines = out.strip().splitlines()
    return lines[-1] if lines else ""


def run(args):
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.returncode, p.stdout


def main():
    mrpcap, vdir = sys.argv[1], sys.argv[2]
    gen = sys.argv[3] if len(sys.argv) > 3 else None
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
        if gen:
            test_metaroce(mrpcap, gen, tmp)
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
