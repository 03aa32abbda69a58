#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Sends one ARP request for TARGET_IP out of IFACE (raw AF_PACKET socket, inside a test netns)
# and waits for the reply (RFC 826). Prints the answering MAC; exit 0 on a reply, 1 on timeout.
# Usage: arp_probe.py IFACE TARGET_IP [SENDER_IP] [TIMEOUT_S]
import socket
import struct
import sys
import time


def main():
    iface, target = sys.argv[1], sys.argv[2]
    sender = sys.argv[3] if len(sys.argv) > 3 else "198.18.255.254"
    timeout = float(sys.argv[4]) if len(sys.argv) > 4 else 2.0
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0806))
    s.bind((iface, 0))
    mac = s.getsockname()[4]
    tip, sip = socket.inet_aton(target), socket.inet_aton(sender)
    arp = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, mac, sip, b"\0" * 6, tip)
    frame = b"\xff" * 6 + mac + b"\x08\x06" + arp
    s.send(frame + b"\0" * (60 - len(frame)))
    s.settimeout(0.2)
    end = time.time() + timeout
    while time.time() < end:
        try:
            f = s.recv(2048)
        except socket.timeout:
            continue
        if len(f) < 42 or f[12:14] != b"\x08\x06":
            continue
        op = struct.unpack("!H", f[20:22])[0]
        if op == 2 and f[28:32] == tip and f[0:6] == mac:
            print(":".join("%02x" % b for b in f[22:28]))
            return 0
    print("no ARP reply from %s" % target, file=sys.stderr)
    return 1


sys.exit(main())
