#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Regenerate the seed corpora of tests/fuzz/corpus/ (committed; rerun only to refresh them).

  gen_corpus.py GEN_FRAMES_PCAP OUTDIR

Seeds: frames of the rxe captures in tests/vectors (a few per opcode and size class) and of
tests/wire/gen_frames (every opcode, IPv4/IPv6, VLAN); for the transport targets, programs in
the fz_transport.c encoding that wrap those frames and craft each opcode with in-window and
hostile fields; for shm, ring contents with valid and broken entries; for config, the example
config and variations. Output names are content hashes, so reruns are stable.
"""
import hashlib
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def pcap_frames(path):
    with open(path, 'rb') as f:
        data = f.read()
    magic = struct.unpack('<I', data[:4])[0]
    end = '<' if magic in (0xa1b2c3d4, 0xa1b23c4d) else '>'
    off = 24
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(end + 'IIII', data[off:off + 16])
        off += 16
        yield data[off:off + incl]
        off += incl


def bth_off(fr):
    off = 14
    et = struct.unpack('>H', fr[12:14])[0]
    if et == 0x8100:
        et = struct.unpack('>H', fr[16:18])[0]
        off = 18
    if et == 0x0800:
        return off + (fr[off] & 15) * 4 + 8
    if et == 0x86dd:
        return off + 48
    return None


def pick_frames(frames, per_class=1, max_len=1200):
    seen = {}
    out = []
    for fr in frames:
        b = bth_off(fr)
        if b is None or b >= len(fr) or len(fr) > max_len:
            continue
        key = (fr[b], len(fr) // 1024, fr[12:14])
        if seen.get(key, 0) >= per_class:
            continue
        seen[key] = seen.get(key, 0) + 1
        out.append(fr)
    return out


def save(outdir, data):
    os.makedirs(outdir, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(outdir, name), 'wb') as f:
        f.write(data)


# ---- fz_transport.c program encoding ----
OP_RAW, OP_HDR, OP_TX, OP_PEER, OP_TIMER, OP_APP = range(6)
RC_OPS = [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b,
          0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17, 0x81]


def u8(v):
    return struct.pack('<B', v & 0xff)


def u16(v):
    return struct.pack('<H', v & 0xffff)


def u32(v):
    return struct.pack('<I', v & 0xffffffff)


def u64(v):
    return struct.pack('<Q', v & 0xffffffffffffffff)


def raw(frame, fl=7, psnsel=0, delta=0):
    b = u8(OP_RAW) + u8(fl) + u16(len(frame)) + frame
    if fl & 4:
        b += u8(psnsel) + u8(delta)
    return b


def hdr(op, psn=(0, 0), key=0, va=(0, 0), dlen=(2, 0), swap=0, cmp=0, syn=0, msn=0, imm=0,
        ieth=0, fl=1, paylen=0, fill=0x41, mflags=0, path=0, mseq=0, moff=0, mlen=0, ts=0,
        sack=(1, 0), bitmap=None, ce=0, metaroce_flip=False):
    """op: an RC opcode (index into RC_OPS) or ('raw', byte)."""
    if isinstance(op, tuple):
        b = u8(0x80) + u8(op[1])
    else:
        b = u8(RC_OPS.index(op) | (0x40 if metaroce_flip else 0))
    b = u8(OP_HDR) + b
    b += u8(psn[0]) + u8(psn[1])
    if psn[0] & 3 == 3:
        b += u32(psn[2])
    b += u8(key)
    if key % 6 == 5:
        b += u32(0xdead00)
    b += u8(va[0])
    b += {0: u16, 1: u8, 2: u64, 3: u16}[va[0] & 3](va[1])
    b += u8(dlen[0])
    if dlen[0] & 3 != 3:
        b += {0: u16, 1: u32, 2: u8}[dlen[0] & 3](dlen[1])
    b += u64(swap) + u64(cmp) + u8(syn) + u32(msn) + u32(imm) + u32(ieth) + u8(fl)
    b += u16(paylen) + u8(fill) + u8(mflags) + u8(path)
    b += u8(mseq) if mseq < 0x80 else u8(0x80) + u32(mseq)
    b += u8(moff)
    b += u8(mlen)
    if mlen & 3 == 2:
        b += u32(0)
    b += u32(ts)
    b += u8(sack[0] | (2 if bitmap else 0))
    b += u8(sack[1]) if sack[0] & 1 else u32(sack[1])
    if bitmap:
        b += bytes(bitmap)
    b += u16(ce)
    return b


def tx(n=8, to_a=True):
    return u8(OP_TX) + u8((n - 1) | (0x80 if to_a else 0))


def peer(i=0, dup=False, drop=False):
    return u8(OP_PEER) + u8((i & 0x3f) | (0x40 if dup else 0) | (0x80 if drop else 0))


def timer(shift=20):
    return u8(OP_TIMER) + u8(shift)


def app(sub, *args):
    b = u8(OP_APP) + u8(sub)
    for kind, v in args:
        b += {8: u8, 16: u16}[kind](v)
    return b


SETTLE = b''.join(peer(0) for _ in range(12)) + tx(32) + b''.join(peer(0) for _ in range(8))


def settled(progs):
    """Each program as is (B has a WRITE open) and after the held traffic was delivered."""
    return progs + [p[:1] + SETTLE + p[1:] for p in progs]


def transport_programs(frames, cfg):
    progs = []
    for fr in frames[:25]:
        progs.append(u8(cfg) + raw(fr, 7, 0, 0) + tx(8))
    # every opcode at ePSN, sensible fields
    for op in RC_OPS:
        progs.append(u8(cfg) + hdr(op, paylen=64 if op in (0x04, 0x0a, 0x0b) else 0,
                                   dlen=(2, 64), mlen=0) + tx(8))
    # requester side: ACK/NAK variants against B's outstanding requests
    for syn in (0x1f, 0x00, 0x20, 0x31, 0x60, 0x61, 0x62, 0x63, 0x64, 0x80):
        for ps in ((2, 0), (1, 0), (1, 5), (2, 0xff)):
            progs.append(u8(cfg) + hdr(0x11, psn=ps, syn=syn, sack=(1, 0)) + tx(4))
    # legit held packets in order, shuffled, duplicated
    progs.append(u8(cfg) + b''.join(peer(0) for _ in range(12)) + tx(32) + timer(22))
    progs.append(u8(cfg) + b''.join(peer(i * 3) for i in range(12)) + tx(32))
    progs.append(u8(cfg) + b''.join(peer(0, dup=True) for _ in range(8)) + tx(32))
    # hostile memory accesses
    for key in range(6):
        for va in ((0, 100), (1, 8), (2, 0xfffffffffffffff0), (3, 0xffff)):
            progs.append(u8(cfg) + hdr(0x0a, key=key, va=va, dlen=(2, 32), paylen=32) + tx(4))
            progs.append(u8(cfg) + hdr(0x0c, key=key, va=va, dlen=(3, 0)) + tx(8))
            progs.append(u8(cfg) + hdr(0x14, key=key, va=va, swap=1) + tx(4))
    # app churn and timers
    progs.append(u8(cfg) + app(0, (8, 1), (16, 512)) + app(1, (8, 0), (16, 100), (16, 0)) +
                 tx(8) + peer(0) + timer(24) + app(2) + timer(26))
    return progs


def mrt_programs(cfg):
    progs = []
    # defect 1's scenario and its zero-length WRITE_ONLY_IMM variant (one receive posted)
    progs.append(u8(cfg) + hdr(0x04, psn=(0, 1), mseq=0, paylen=16, mlen=0) +
                 hdr(0x04, psn=(0, 0), mseq=0, paylen=16, mlen=0) + tx(8))
    progs.append(u8(cfg) + hdr(0x0b, psn=(0, 1), mseq=0, dlen=(2, 0), mlen=1) +
                 hdr(0x0b, psn=(0, 0), mseq=0, dlen=(2, 0), mlen=1) + tx(8))
    for mseq in (0, 1, 3, 15, 0x7f, 0x8000_0000):
        for moff in (0, 1, 0x81):
            progs.append(u8(cfg) + hdr(0x04, mseq=mseq, moff=moff, paylen=8, mlen=3) + tx(4))
    for bm in ([0xff] * 16, [0x80] + [0] * 15, [0x55] * 16):
        progs.append(u8(cfg) + hdr(0x11, psn=(2, 0), syn=0x1f, sack=(1, 0), bitmap=bm) + tx(4))
    for p in (0, 3, 255):
        progs.append(u8(cfg) + hdr(0x06, path=p, dlen=(2, 200), mlen=1, paylen=0) + tx(4))
    return progs


def shm_seeds():
    seeds = []
    # valid SEND with one SGE in MR 0 (lkey 0x107), published one entry; RECV likewise
    sqe = u64(1) + u32(2) + u32(2) + u32(1) + u32(0) * 3 + u64(0) * 3 + u32(0) * 2
    sqe += u64(0x10000000) + u32(64) + u32(0x107)
    sqe = sqe.ljust(96, b'\0')
    rqe = (u64(2) + u32(1) + b'\0' * 52 + u64(0x10000010) + u32(32) + u32(0x107)).ljust(96, b'\0')
    caps = u8(3) + u8(3) + u8(0) + u8(0) + u32(0) + u8(3) + u8(3) + u8(1) + u8(40) + u32(0xfffffffe)
    body = u8(0x3) + sqe * 4 + rqe * 4 + u8(1) + u8(1) + u8(0) + u8(1) + u8(0)
    body += u8(0x3) + sqe * 4 + rqe * 4 + u8(2) + u8(2) + u8(0) + u8(0) + u8(0)
    seeds.append(caps + body + bytes([0, 1, 2, 3]) * 8)
    # inline SEND, atomic, READ into the read-only MR, PD1's lkey on QP0
    for op, flags, lk, ln in ((2, 0xa, 0x107, 40), (6, 2, 0x107, 8), (4, 2, 0x207, 64),
                              (2, 2, 0x307, 16), (0, 2, 0x107, 0xffffffff)):
        e = (u64(3) + u32(op) + u32(flags) + u32(1) + u32(0) * 3 + u64(0x8) + u64(0) * 2 +
             u32(ln if flags & 8 else 0) + u32(0))
        e += u64(0x10000000) + u32(ln) + u32(lk) if not flags & 8 else b'A' * 32
        e = e.ljust(96, b'\0')
        seeds.append(caps + u8(0x1) + e * 4 + u8(1) + u8(0) + u8(0) + u8(1) + u8(1) + b'\x00' * 64)
    return seeds


def config_seeds():
    seeds = []
    with open(os.path.join(ROOT, 'configs', 'metaroced.conf'), 'rb') as f:
        example = f.read()
    seeds.append(example)
    seeds.append(b'[port]\nipv4 = 198.18.0.1\nmtu = 9000\n[engine]\nlcores = 0-3\n')
    seeds.append(b'[port]\nipv6 = 2001:2::1\nmac = 02:00:00:00:00:01\nmtu = 1500\n'
                 b'[limits]\nmax_qp = 16\nmax_mr = 32\n')
    seeds.append(b'[port]\nipv4 = 198.18.0.1\n[impair]\nrx = loss=0.01,dup=0.001\n')
    seeds.append(b'loss=0.5,reorder=0.1,delay=10us\n')
    seeds.append(b'[port\nipv4 198.18.0.1\n= \n[port]\nipv4 = 1.2.3.4\nipv4 = 5.6.7.8\n')
    return seeds


def main():
    gen_pcap, outdir = sys.argv[1], sys.argv[2]
    vec = os.path.join(ROOT, 'tests', 'vectors')
    vframes = []
    for name in sorted(os.listdir(vec)):
        if name.endswith('.pcap'):
            vframes += pick_frames(pcap_frames(os.path.join(vec, name)), per_class=1)
    gframes = pick_frames(pcap_frames(gen_pcap), per_class=1)
    for fr in vframes + gframes:
        save(os.path.join(outdir, 'frame'), fr)
    rc_frames = [f for f in vframes + gframes if f[bth_off(f)] < 0x20]
    mrt_frames = [f for f in gframes if 0xc0 <= f[bth_off(f)] < 0xe0]
    for p in settled(transport_programs(rc_frames, 26)):
        save(os.path.join(outdir, 'rc'), p)
    for p in settled(transport_programs(mrt_frames, 122) + mrt_programs(122)):
        save(os.path.join(outdir, 'mrt'), p)
    for s in shm_seeds():
        save(os.path.join(outdir, 'shm'), s)
    for s in config_seeds():
        save(os.path.join(outdir, 'config'), s)


if __name__ == '__main__':
    main()
