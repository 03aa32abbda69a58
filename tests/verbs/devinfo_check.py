#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Holds stock `ibv_devinfo -v` output (run on the metaroce verbs library) against the daemon's
port attributes (tests/verbs/mr_port_attr: mrc_query_port over the daemon's socket).

    devinfo_check.py DEVINFO_OUT PORT_ATTR_OUT DEVICE_NAME

Checks: one device, named DEVICE_NAME; transport InfiniBand (0); node_guid = EUI-64 of the
daemon's MAC (RFC 4291 app. A, as rxe); port 1 state PORT_ACTIVE (4), phys_state LINK_UP,
link_layer Ethernet; max_mtu and active_mtu = the daemon's (IB MTU enum, IBA 7.7.9 / verbs
ibv_mtu: 256=1 .. 4096=5); every daemon GID at its index and no other, as RoCE v2; the device
limits ibv_devinfo prints = the daemon's. Prints one line per check; exit 1 on the first
mismatch list, 0 when all agree.
"""
import ipaddress
import re
import sys

MTU_ENUM = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}
# ibv_devinfo -v field -> mr_port_attr key (the daemon's limit it must report unchanged)
LIMITS = {
    "max_qp": "max_qp", "max_qp_wr": "max_qp_wr", "max_cq": "max_cq", "max_cqe": "max_cqe",
    "max_mr": "max_mr", "max_pd": "max_pd", "max_sge": "max_sge",
}


def parse_attr(path):
    attr = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            if k:
                attr[k] = v
    return attr


def gid_bytes(text):
    """A GID as ibv_devinfo prints it (raw 'fe80:0000:...' or inet_ntop '::ffff:1.2.3.4')."""
    return ipaddress.IPv6Address(text.strip()).packed.hex()


def main(argv):
    if len(argv) != 4:
        sys.stderr.write(__doc__)
        return 2
    out = open(argv[1]).read()
    attr = parse_attr(argv[2])
    name = argv[3]
    bad = []
    ok = []

    def check(what, cond, detail):
        (ok if cond else bad).append(f"{what}: {detail}")

    def field(key):
        m = re.findall(r"^\s*" + re.escape(key) + r":\s*(.*?)\s*$", out, re.M)
        return m

    ids = field("hca_id")
    check("device", ids == [name], f"hca_id {ids} (want ['{name}'])")
    t = field("transport")
    check("transport", t[:1] == ["InfiniBand (0)"], f"{t[:1]}")
    mac = bytes.fromhex(attr.get("mac", "00:00:00:00:00:00").replace(":", ""))
    eui = bytes([mac[0] ^ 2, mac[1], mac[2], 0xff, 0xfe, mac[3], mac[4], mac[5]]).hex()
    want_guid = ":".join(eui[i:i + 4] for i in range(0, 16, 4))
    g = field("node_guid")
    check("node_guid", g[:1] == [want_guid], f"{g[:1]} (EUI-64 of {attr.get('mac')}: {want_guid})")
    ports = field("port")
    check("ports", ports == ["1"], f"{ports}")
    st = field("state")
    check("state", int(attr.get("state", 0)) == 4 and st[:1] == ["PORT_ACTIVE (4)"],
          f"{st[:1]} (daemon state {attr.get('state')})")
    ps = field("phys_state")
    check("phys_state", ps[:1] == ["LINK_UP (5)"], f"{ps[:1]}")
    ll = field("link_layer")
    check("link_layer", ll[:1] == ["Ethernet"], f"{ll[:1]}")
    for key in ("max_mtu", "active_mtu"):
        want = int(attr.get(key, 0))
        v = field(key)
        check(key, v[:1] == [f"{want} ({MTU_ENUM.get(want, '?')})"], f"{v[:1]} (daemon {want})")
    for dk, ak in LIMITS.items():
        v = field(dk)
        check(dk, v[:1] == [attr.get(ak)], f"{v[:1]} (daemon {attr.get(ak)})")

    want_gids = {}
    for i in range(int(attr.get("gid_count", 0))):
        want_gids[i] = attr[f"gid{i}"]
    got_gids = {}
    types = {}
    for m in re.finditer(r"^\s*GID\[\s*(\d+)\]:\s*([0-9a-fA-F:.]+)(?:,\s*(.*?))?\s*$", out, re.M):
        got_gids[int(m.group(1))] = gid_bytes(m.group(2))
        types[int(m.group(1))] = m.group(3)
    check("gids", got_gids == want_gids,
          f"ibv_devinfo {got_gids} vs daemon {want_gids}")
    check("gid types", all(t == "RoCE v2" for t in types.values()) and len(types) > 0,
          f"{types}")

    for line in ok:
        print(f"ok   {line}")
    for line in bad:
        print(f"FAIL {line}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
