#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs a test plan (plan.py) the way the article's Python drives perftest: per point it zeroes
the counters (mrstat --reset on both daemons), starts the server first, then the client, each
with a timeout, retries a failed point, keeps every raw log, and collects bandwidth / latency /
message rate from mrperf's --json, counter deltas from mrstat --json and CPU time per process
from /proc. results.py writes results.csv, results.json and the plots; compare.py compares.

Usage (scripts/run-plan.sh sets these up): run_plan.py PLAN.json --build BUILD [--compare DIR]
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
import plan as planlib  # noqa: E402
import results  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TICK = os.sysconf("SC_CLK_TCK")
# Counters kept per point (names as mrstat shows them: rxe / mlx5 / metaroce).
COUNTERS = ("sent_pkts", "rcvd_pkts", "retransmitted_pkts", "retrans_gbn_pkts",
            "retrans_selective_pkts", "retrans_spurious_pkts", "rcvd_seq_err",
            "local_ack_timeout_err", "duplicate_request", "out_of_sequence", "rcvd_rnr_err",
            "np_cnp_sent", "rp_cnp_handled", "np_ecn_marked_roce_packets", "rx_icrc_errors",
            "rx_malformed", "impair_tx_dropped", "impair_rx_dropped",
            "rx_vport_rdma_unicast_packets", "tx_vport_rdma_unicast_packets")


def log(msg):
    print("run-plan: " + msg, file=sys.stderr, flush=True)


def cpu_s(pid):
    """utime + stime of a live process in seconds, or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except (OSError, IndexError, ValueError):
        return None


def children_cpu_s():
    t = os.times()
    return t.children_user + t.children_system


class Daemons:
    """Two metaroced over a veth pair between two namespaces (scripts/lib/netns.sh), restarted
    per loss profile with that profile's impairment; or the user's running daemons."""

    def __init__(self, p, build, work):
        self.p, self.build, self.work = p, build, work
        self.procs, self.tag = {}, "rp%d" % os.getpid()
        self.sock = {}

    def sh(self, script):
        return subprocess.run(["bash", "-c", ". '%s/scripts/lib/netns.sh'; %s" % (ROOT, script)],
                              capture_output=True, text=True)

    def start(self, loss):
        if self.p["topology"] == "existing":
            self.sock = {"a": self.p["client_sock"], "b": self.p["server_sock"]}
            return
        self.stop()
        r = self.sh("mr_netns_up %s %d" % (self.tag, self.p["mtu"]))
        if r.returncode != 0:
            raise RuntimeError("network namespaces: %s" % r.stderr.strip())
        for n in ("a", "b"):
            conf, sock = os.path.join(self.work, n + ".conf"), os.path.join(self.work, n + ".sock")
            r = self.sh("mr_daemon_conf '%s' %s '%s'" % (conf, n, sock))
            if r.returncode != 0:
                raise RuntimeError("daemon config: %s" % r.stderr)
            if self.p["mtu"] != 1500:
                txt = open(conf).read().replace("mtu = 1500", "mtu = %d" % self.p["mtu"])
                if self.p["mtu"] > 1500:
                    txt = txt.replace("framecnt=4096", "blocksz=65536,framesz=8192,framecnt=2048")
                open(conf, "w").write(txt)
            args = ["ip", "netns", "exec", "mr-%s-%s" % (self.tag, n),
                    os.path.join(self.build, "apps/metaroced/metaroced"), "-c", conf]
            # The impairment applies to what each daemon sends (both directions of the path).
            if loss["impair_tx"]:
                args += ["--impair-tx", loss["impair_tx"] + ("" if "seed" in loss["impair_tx"]
                                                             else ",seed=%d" % (7 + ord(n)))]
            if loss["impair_rx"]:
                args += ["--impair-rx", loss["impair_rx"]]
            args += ["--", "--file-prefix=mrplan%d%s" % (os.getpid(), n), "--no-huge", "-m", "256"]
            logf = open(os.path.join(self.work, "daemon-%s-%s.log" % (n, loss["name"].replace("/", "_"))), "a")
            self.procs[n] = subprocess.Popen(args, stdout=logf, stderr=subprocess.STDOUT)
            self.sock[n] = sock
        for n in ("a", "b"):
            for _ in range(200):
                if os.path.exists(self.sock[n] + ".stats"):
                    break
                if self.procs[n].poll() is not None:
                    raise RuntimeError("metaroced %s exited during start (see %s)" % (n, self.work))
                time.sleep(0.1)
            else:
                raise RuntimeError("metaroced %s not ready after 20 s" % n)

    def pids(self):
        return {n: p.pid for n, p in self.procs.items()}

    def stop(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = {}
        if self.p["topology"] == "veth":
            self.sh("mr_netns_down %s" % self.tag)


def mrstat(build, sock, *args):
    r = subprocess.run([os.path.join(build, "apps/mrstat/mrstat"), "--sock", sock] + list(args),
                       capture_output=True, text=True, timeout=20)
    if r.returncode != 0:
        raise RuntimeError("mrstat %s: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout


def run_side(cmd, logpath):
    f = open(logpath, "w")
    f.write("$ " + " ".join(cmd) + "\n")
    f.flush()
    return subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT), f


def parse_mrperf_json(path):
    try:
        with open(path) as f:
            j = json.load(f)
        return j["results"][0] if j.get("results") else None
    except (OSError, ValueError, KeyError, IndexError):
        return None


def run_point(p, pt, build, d, rawdir):
    """One try of a point. Returns (record fields, error or None)."""
    mrperf = os.path.join(build, "apps/mrperf/mrperf")
    stem = "%03d_%s_%s_%s_%d_r%d" % (pt["index"], pt["loss"], pt["transport"], pt["operation"],
                                     pt["size"], pt["rep"])
    stem = stem.replace("/", "_").replace("%", "pct").replace("=", "").replace(",", "_")
    js = {r: os.path.join(rawdir, "%s_%s.json" % (stem, r)) for r in ("server", "client")}
    for n in ("a", "b"):
        mrstat(build, d.sock[n], "--reset")
    dpids = d.pids()
    dcpu0 = {n: cpu_s(pid) for n, pid in dpids.items()}
    t0 = time.monotonic()
    srv, fs = run_side([mrperf] + planlib.mrperf_args(p, pt, "server", d.sock["b"], js["server"]),
                       os.path.join(rawdir, stem + "_server.log"))
    # The article's troubleshooting table: the server first, else the client waits for it.
    time.sleep(0.3)
    cli, fc = run_side([mrperf] + planlib.mrperf_args(p, pt, "client", d.sock["a"], js["client"]),
                       os.path.join(rawdir, stem + "_client.log"))
    err = None
    cpu = {}
    deadline = t0 + p["timeout_sec"]
    last = {"server": 0.0, "client": 0.0}
    while True:
        for name, pr in (("server", srv), ("client", cli)):
            c = cpu_s(pr.pid)
            if c is not None:
                last[name] = c
        if srv.poll() is not None and cli.poll() is not None:
            break
        if time.monotonic() > deadline:
            err = "timeout after %d s" % p["timeout_sec"]
            for pr in (srv, cli):
                if pr.poll() is None:
                    pr.kill()
            break
        time.sleep(0.05)
    srv.wait()
    cli.wait()
    fs.close()
    fc.close()
    wall = time.monotonic() - t0
    if err is None and (srv.returncode != 0 or cli.returncode != 0):
        err = "mrperf exited %d (server) / %d (client)" % (srv.returncode, cli.returncode)
    cpu["client_s"], cpu["server_s"] = last["client"], last["server"]
    for n, pid in dpids.items():
        c = cpu_s(pid)
        cpu["daemon_%s_s" % n] = round(c - dcpu0[n], 3) if c is not None and dcpu0[n] is not None else None
    rec = {"wall_s": round(wall, 3), "cpu": cpu,
           "cpu_pct": {k.replace("_s", ""): round(100 * v / wall, 1) for k, v in cpu.items()
                       if v is not None and wall > 0},
           "raw": {k: os.path.relpath(v, os.path.dirname(rawdir)) for k, v in js.items()},
           "logs": {r: os.path.relpath(os.path.join(rawdir, "%s_%s.log" % (stem, r)),
                                       os.path.dirname(rawdir)) for r in ("server", "client")}}
    res = parse_mrperf_json(js["client"])
    if err is None and res is None:
        err = "no result in %s" % js["client"]
    if res is not None:
        rec["iterations"] = res.get("n_iterations")
        if "BW_average" in res:
            unit = 1.0 if res.get("unit") == "Gb/sec" else 1048576 * 8 / 1e9
            rec["bw_avg_gbps"] = round(res["BW_average"] * unit, 6)
            rec["bw_peak_gbps"] = round(res["BW_peak"] * unit, 6)
            rec["msg_rate_mpps"] = res.get("MsgRate")
        else:
            for k_in, k_out in (("t_min", "lat_min_us"), ("t_typical", "lat_p50_us"),
                                ("t_avg", "lat_avg_us"), ("percentile_99", "lat_p99_us"),
                                ("percentile_99_9", "lat_p999_us"), ("t_max", "lat_max_us"),
                                ("t_stdev", "lat_stdev_us")):
                rec[k_out] = res.get(k_in)
            if res.get("t_typical"):
                rec["msg_rate_mpps"] = round(1.0 / res["t_typical"], 6)
    deltas = {}
    for n, side in (("a", "client"), ("b", "server")):
        try:
            port = json.loads(mrstat(build, d.sock[n], "--json"))["port"]
            deltas[side] = {k: port[k] for k in COUNTERS if k in port}
        except (RuntimeError, ValueError, KeyError) as e:
            deltas[side] = {"error": str(e)}
    rec["counters"] = deltas
    return rec, err


def versions(build):
    def cmd(*a):
        try:
            return subprocess.run(list(a), capture_output=True, text=True, timeout=10).stdout.strip()
        except OSError:
            return ""
    rev = cmd("git", "-C", ROOT, "rev-parse", "--short", "HEAD") or "unknown"
    if cmd("git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"):
        rev += "-dirty"
    return {"metaroce": rev, "dpdk": cmd("pkg-config", "--modversion", "libdpdk") or "unknown",
            "perftest": cmd("dpkg-query", "-W", "-f=${Version}", "perftest") or "not installed",
            "mrperf": "perftest 4.5 compatible (apps/mrperf)", "kernel": os.uname().release,
            "python": sys.version.split()[0]}


def fmt_eta(s):
    s = int(s)
    return "%dm%02ds" % (s // 60, s % 60) if s >= 60 else "%ds" % s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("plan")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--compare", metavar="OTHER_RESULTS_DIR")
    ap.add_argument("--output-dir", help="overrides the plan's output_dir")
    a = ap.parse_args()
    try:
        p = planlib.load(a.plan)
    except planlib.PlanError as e:
        log("%s: %s" % (a.plan, e))
        return 2
    if a.output_dir:
        p["output_dir"] = os.path.abspath(a.output_dir)
    for b in ("apps/metaroced/metaroced", "apps/mrperf/mrperf", "apps/mrstat/mrstat"):
        if not os.access(os.path.join(a.build, b), os.X_OK):
            log("%s not built in %s" % (b, a.build))
            return 2
    out = p["output_dir"]
    rawdir = os.path.join(out, "raw")
    os.makedirs(rawdir, exist_ok=True)
    pts = planlib.points(p)
    for i, pt in enumerate(pts):
        pt["index"] = i
    log("plan %s: %d points (%s x %s x %s x %d sizes x %d reps) -> %s" % (
        p["name"], len(pts), "/".join(l["name"] for l in p["loss"]), "/".join(p["transports"]),
        "/".join(p["operations"]), len(p["sizes"]), p["repetitions"], out))
    started = time.time()
    d = Daemons(p, a.build, rawdir)
    records, cur_loss, t_start = [], None, time.monotonic()
    try:
        for i, pt in enumerate(pts):
            if pt["loss"] != cur_loss:
                loss = next(l for l in p["loss"] if l["name"] == pt["loss"])
                log("loss profile %s: starting the daemons (impair tx '%s', rx '%s')" % (
                    loss["name"], loss["impair_tx"] or "off", loss["impair_rx"] or "off"))
                d.start(loss)
                cur_loss = pt["loss"]
            done = time.monotonic() - t_start
            eta = done / i * (len(pts) - i) if i else 0
            log("[%d/%d] %s %s %s %d B rep %d%s" % (i + 1, len(pts), pt["loss"], pt["transport"],
                pt["operation"], pt["size"], pt["rep"] + 1, ", ETA %s" % fmt_eta(eta) if i else ""))
            rec, err = None, None
            for attempt in range(p["retries"] + 1):
                try:
                    rec, err = run_point(p, pt, a.build, d, rawdir)
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    rec, err = {}, str(e)
                if err is None:
                    break
                log("    attempt %d failed: %s%s" % (attempt + 1, err,
                    ", retrying" if attempt < p["retries"] else ""))
            rec = dict(pt, **(rec or {}))
            rec["status"] = "ok" if err is None else "failed"
            rec["attempts"] = attempt + 1
            if err:
                rec["error"] = err
            records.append(rec)
            if err is None:
                v = rec.get("bw_avg_gbps")
                log("    %s" % ("%.3f Gb/s (peak %.3f), retx %s" % (
                    v, rec["bw_peak_gbps"], rec["counters"]["client"].get("retransmitted_pkts"))
                    if v is not None else "%.2f us typical, p99 %.2f us" % (
                    rec.get("lat_p50_us") or 0, rec.get("lat_p99_us") or 0)))
    finally:
        d.stop()
    doc = {"schema": "metaroce-plan-results-1",
           "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
           "duration_s": round(time.time() - started, 1), "versions": versions(a.build),
           "plan": p["raw"], "plan_file": os.path.abspath(a.plan),
           "configuration": {k: v for k, v in p.items() if k != "raw"},
           "host": {"cpus": os.cpu_count(), "hostname": os.uname().nodename},
           "points": records}
    made = results.write(out, doc)
    failed = sum(1 for r in records if r["status"] != "ok")
    log("wrote %s (results.csv, results.json, %s); %d/%d points ok in %s" % (
        out, ", ".join(made) if made else "no plots" if results.HAVE_MPL else
        "no plots: python3-matplotlib missing", len(records) - failed, len(records),
        fmt_eta(time.time() - started)))
    if len(p["transports"]) == 2:
        print(compare.transports(doc))
    if a.compare:
        try:
            other = compare.load(a.compare)
        except (OSError, ValueError) as e:
            log("--compare %s: %s" % (a.compare, e))
            return 2
        print(compare.runs(other, doc, a.compare, out))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
