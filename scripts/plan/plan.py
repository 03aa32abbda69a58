# SPDX-License-Identifier: MIT
"""A test plan (scripts/run-plan.sh PLAN.json): the article's fields as they are, plus what
metaroce adds. Every error names the field. Pure: unit-tested by tests/plan/test_plan.py.

Article fields: server_ip, rdma_device, port_index, message_sizes_kb, duration_sec,
report_gbits, output_dir. Added: operations, transport (roce|metaroce|both), loss (one
impairment profile or a list), iterations, repetitions, timeout_sec, retries, mtu, qps,
entropies, cc, name, topology (veth: two daemons this script starts over a veth pair;
existing: daemons already running, client_sock/server_sock).
"""
import json
import os

OPERATIONS = ("write_bw", "write_lat", "send_bw", "send_lat", "read_bw", "read_lat",
              "atomic_bw", "atomic_lat")
# mrperf runs -D (duration) for every test, as perftest (apps/mrperf/args.c).
DURATION_OPS = OPERATIONS


class PlanError(ValueError):
    pass


def _num(plan, key, default, lo, hi, integer=True):
    v = plan.get(key, default)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (integer and int(v) != v):
        raise PlanError("%s: %r is not %s" % (key, v, "an integer" if integer else "a number"))
    if v < lo or v > hi:
        raise PlanError("%s: %r is outside [%s, %s]" % (key, v, lo, hi))
    return int(v) if integer else float(v)


def _loss_profiles(v):
    """None/0 -> no impairment; a number -> random loss; a string -> an --impair-tx spec; a
    dict {name, impair_tx, impair_rx}; or a list of those."""
    items = v if isinstance(v, list) else [v]
    out = []
    for i, it in enumerate(items):
        where = "loss[%d]" % i if isinstance(v, list) else "loss"
        if it is None or it == 0 or it == "none":
            out.append({"name": "none", "impair_tx": "", "impair_rx": ""})
        elif isinstance(it, (int, float)) and not isinstance(it, bool):
            if not 0 < it < 1:
                raise PlanError("%s: loss rate %r is outside (0, 1)" % (where, it))
            out.append({"name": "loss%g%%" % (it * 100), "impair_tx": "loss=%g,seed=%d" %
                        (it, 11 + i), "impair_rx": ""})
        elif isinstance(it, str):
            if " " in it or not it:
                raise PlanError("%s: %r is not an impairment spec (e.g. loss=0.01,seed=7)"
                                % (where, it))
            out.append({"name": it, "impair_tx": it, "impair_rx": ""})
        elif isinstance(it, dict):
            bad = set(it) - {"name", "impair_tx", "impair_rx"}
            if bad:
                raise PlanError("%s: unknown field(s) %s" % (where, ", ".join(sorted(bad))))
            tx, rx = it.get("impair_tx", ""), it.get("impair_rx", "")
            for k, s in (("impair_tx", tx), ("impair_rx", rx)):
                if not isinstance(s, str) or " " in s:
                    raise PlanError("%s.%s: %r is not an impairment spec" % (where, k, s))
            out.append({"name": str(it.get("name") or tx or rx or "none"), "impair_tx": tx,
                        "impair_rx": rx})
        else:
            raise PlanError("%s: %r is not a loss rate, spec or profile" % (where, it))
    names = [p["name"] for p in out]
    if len(set(names)) != len(names):
        raise PlanError("loss: profile names repeat (%s)" % ", ".join(names))
    return out


KNOWN = {"name", "server_ip", "rdma_device", "port_index", "message_sizes_kb", "message_sizes",
         "duration_sec", "report_gbits", "output_dir", "operations", "transport", "loss",
         "iterations", "repetitions", "timeout_sec", "retries", "mtu", "qps", "entropies", "cc",
         "topology", "client_sock", "server_sock", "tcp_port", "comment"}


def load(path, base_dir=None):
    try:
        with open(path) as f:
            raw = json.load(f)
    except OSError as e:
        raise PlanError("%s: %s" % (path, e.strerror))
    except json.JSONDecodeError as e:
        raise PlanError("%s: not JSON (line %d: %s)" % (path, e.lineno, e.msg))
    # output_dir is relative to the current directory, as in the article's script.
    return validate(raw, base_dir if base_dir is not None else os.getcwd())


def validate(raw, base_dir="."):
    if not isinstance(raw, dict):
        raise PlanError("the plan must be a JSON object")
    unknown = set(raw) - KNOWN
    if unknown:
        raise PlanError("unknown field(s): %s (known: %s)" % (", ".join(sorted(unknown)),
                                                              ", ".join(sorted(KNOWN))))
    p = {"name": str(raw.get("name", "plan"))}
    ops = raw.get("operations", ["write_bw"])
    if isinstance(ops, str):
        ops = [ops]
    if not isinstance(ops, list) or not ops:
        raise PlanError("operations: expected a list such as [\"write_bw\", \"write_lat\"]")
    for o in ops:
        if o not in OPERATIONS:
            raise PlanError("operations: %r is not one of %s" % (o, ", ".join(OPERATIONS)))
    p["operations"] = ops
    if "message_sizes" in raw and "message_sizes_kb" in raw:
        raise PlanError("message_sizes and message_sizes_kb: give one of them")
    if "message_sizes" in raw:
        sizes, unit, key = raw["message_sizes"], 1, "message_sizes"
    else:
        sizes, unit, key = raw.get("message_sizes_kb", [64]), 1024, "message_sizes_kb"
    if not isinstance(sizes, list) or not sizes:
        raise PlanError("%s: expected a non-empty list" % key)
    p["sizes"] = []
    for s in sizes:
        if isinstance(s, bool) or not isinstance(s, (int, float)) or s <= 0 or \
                int(s * unit) != s * unit or s * unit > (1 << 30):
            raise PlanError("%s: %r is not a size in (0, 1 GiB]" % (key, s))
        p["sizes"].append(int(s * unit))
    t = raw.get("transport", "roce")
    if t not in ("roce", "metaroce", "both"):
        raise PlanError("transport: %r is not roce, metaroce or both" % (t,))
    p["transports"] = ["roce", "metaroce"] if t == "both" else [t]
    p["duration_sec"] = _num(raw, "duration_sec", None, 1, 3600)
    p["iterations"] = _num(raw, "iterations", None, 5, 10 ** 9)
    p["repetitions"] = _num(raw, "repetitions", 1, 1, 100)
    p["timeout_sec"] = _num(raw, "timeout_sec", 60, 5, 86400)
    p["retries"] = _num(raw, "retries", 1, 0, 10)
    p["port_index"] = _num(raw, "port_index", 1, 1, 1)
    p["mtu"] = _num(raw, "mtu", 1500, 576, 9000)
    p["qps"] = _num(raw, "qps", 1, 1, 64)
    p["entropies"] = _num(raw, "entropies", 16, 1, 256)
    p["tcp_port"] = _num(raw, "tcp_port", 18515, 1024, 65535)
    p["cc"] = raw.get("cc", "none")
    if p["cc"] not in ("none", "dcqcn", "metaroce"):
        raise PlanError("cc: %r is not none, dcqcn or metaroce" % (p["cc"],))
    if not isinstance(raw.get("report_gbits", True), bool):
        raise PlanError("report_gbits: expected true or false")
    p["report_gbits"] = raw.get("report_gbits", True)
    p["rdma_device"] = str(raw.get("rdma_device", "mr0"))
    p["server_ip"] = str(raw.get("server_ip", "127.0.0.1"))
    p["loss"] = _loss_profiles(raw.get("loss", None))
    p["topology"] = raw.get("topology", "veth")
    if p["topology"] not in ("veth", "existing"):
        raise PlanError("topology: %r is not veth or existing" % (p["topology"],))
    if p["topology"] == "existing":
        for k in ("client_sock", "server_sock"):
            if not isinstance(raw.get(k), str) or not raw[k]:
                raise PlanError("%s: needed with topology existing (the daemons' sockets)" % k)
            p[k] = raw[k]
        if any(l["impair_tx"] or l["impair_rx"] for l in p["loss"]):
            raise PlanError("loss: impairment needs topology veth (the daemons are started "
                            "with --impair-tx/--impair-rx)")
    out = raw.get("output_dir", "./rdma_bench_results")
    if not isinstance(out, str) or not out:
        raise PlanError("output_dir: expected a path")
    p["output_dir"] = out if os.path.isabs(out) else os.path.normpath(os.path.join(base_dir, out))
    p["raw"] = raw
    return p


def points(p):
    """Every run, in the order they happen: loss profile (daemons restarted per profile),
    transport, operation, size, repetition."""
    out = []
    for loss in p["loss"]:
        for tr in p["transports"]:
            for op in p["operations"]:
                for size in (p["sizes"] if not op.startswith("atomic") else [8]):
                    for rep in range(p["repetitions"]):
                        out.append({"loss": loss["name"], "transport": tr, "operation": op,
                                    "size": size, "rep": rep})
    # atomics have one size: drop the duplicates the size loop made
    seen, uniq = set(), []
    for pt in out:
        k = (pt["loss"], pt["transport"], pt["operation"], pt["size"], pt["rep"])
        if k not in seen:
            seen.add(k)
            uniq.append(pt)
    return uniq


def mrperf_args(p, pt, role, sock, json_path):
    """The mrperf command line of one side of a point (perftest's flags, as the article)."""
    a = [pt["operation"], "-d", p["rdma_device"], "-i", str(p["port_index"]),
         "-s", str(pt["size"]), "-q", str(p["qps"]), "--sock", sock, "--json", json_path,
         "-p", str(p["tcp_port"] + pt.get("index", 0) % 1000)]
    if p["duration_sec"] and pt["operation"] in DURATION_OPS and not p["iterations"]:
        a += ["-D", str(p["duration_sec"])]
    elif p["iterations"]:
        a += ["-n", str(p["iterations"])]
    if p["report_gbits"]:
        a.append("--report_gbits")
    if pt["transport"] == "metaroce":
        a += ["--metaroce", "--entropies", str(p["entropies"]), "--cc", p["cc"]]
    if role == "client":
        a.append(p["server_ip"] if p["topology"] == "existing" else "127.0.0.1")
    return a
