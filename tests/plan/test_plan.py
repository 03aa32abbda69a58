#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""scripts/plan: the plan parser accepts the article's JSON as it is and names the field of
every error; points and mrperf command lines; results.csv/json; --compare's per-point change
and verdict. No daemon needed."""
import csv
import json
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "plan"))
import compare  # noqa: E402
import plan  # noqa: E402
import results  # noqa: E402

# The article's section 6.3 plan, verbatim.
ARTICLE = {"server_ip": "192.168.10.2", "rdma_device": "mlx5_0", "port_index": 1,
           "message_sizes_kb": [1, 4, 16, 64, 256, 1024], "duration_sec": 10,
           "report_gbits": True, "output_dir": "./rdma_bench_results"}


def err(raw):
    try:
        plan.validate(raw, "/base")
    except plan.PlanError as e:
        return str(e)
    raise AssertionError("accepted: %r" % raw)


class PlanTest(unittest.TestCase):
    def test_article_plan(self):
        p = plan.validate(dict(ARTICLE), "/base")
        self.assertEqual(p["sizes"], [1024, 4096, 16384, 65536, 262144, 1048576])
        self.assertEqual(p["duration_sec"], 10)
        self.assertEqual(p["output_dir"], "/base/rdma_bench_results")
        self.assertEqual(p["operations"], ["write_bw"])
        self.assertEqual(p["transports"], ["roce"])
        pts = plan.points(p)
        self.assertEqual(len(pts), 6)
        pt = dict(pts[2], index=2)
        a = plan.mrperf_args(p, pt, "client", "/s/a.sock", "/o/x.json")
        self.assertEqual(a[:5], ["write_bw", "-d", "mlx5_0", "-i", "1"])
        self.assertIn("16384", a)
        self.assertEqual(a[a.index("-D") + 1], "10")          # duration for write_bw
        self.assertIn("--report_gbits", a)
        self.assertEqual(a[-1], "127.0.0.1")                   # veth: the local exchange
        self.assertNotIn("127.0.0.1", plan.mrperf_args(p, pt, "server", "/s", "/j"))

    def test_errors_name_the_field(self):
        self.assertIn("unknown field(s): sizes", err(dict(ARTICLE, sizes=[1])))
        self.assertIn("transport", err(dict(ARTICLE, transport="tcp")))
        self.assertIn("message_sizes_kb", err(dict(ARTICLE, message_sizes_kb=[0])))
        self.assertIn("message_sizes_kb", err(dict(ARTICLE, message_sizes_kb="64")))
        self.assertIn("operations", err(dict(ARTICLE, operations=["ib_write_bw"])))
        self.assertIn("duration_sec", err(dict(ARTICLE, duration_sec="10")))
        self.assertIn("port_index", err(dict(ARTICLE, port_index=2)))
        self.assertIn("report_gbits", err(dict(ARTICLE, report_gbits="yes")))
        self.assertIn("loss", err(dict(ARTICLE, loss=1.5)))
        self.assertIn("loss[1]", err(dict(ARTICLE, loss=[0, "a b"])))
        self.assertIn("repeat", err(dict(ARTICLE, loss=[0.01, 0.01])))
        self.assertIn("client_sock", err(dict(ARTICLE, topology="existing")))
        self.assertIn("impairment needs topology veth",
                      err(dict(ARTICLE, topology="existing", client_sock="/a", server_sock="/b",
                               loss=0.01)))
        self.assertIn("give one", err(dict(ARTICLE, message_sizes=[64])))

    def test_points_and_transports(self):
        p = plan.validate({"operations": ["write_bw", "atomic_bw", "send_lat"],
                           "message_sizes": [2, 4096], "transport": "both",
                           "loss": [0, 0.01, {"name": "burst", "impair_tx": "loss=0.01,burst=4"}],
                           "repetitions": 2, "iterations": 100})
        pts = plan.points(p)
        # 3 losses x 2 transports x (2 + 1 atomic + 2) sizes x 2 reps
        self.assertEqual(len(pts), 3 * 2 * 5 * 2)
        self.assertEqual([l["name"] for l in p["loss"]], ["none", "loss1%", "burst"])
        self.assertEqual(p["loss"][1]["impair_tx"], "loss=0.01,seed=12")
        self.assertEqual({pt["size"] for pt in pts if pt["operation"] == "atomic_bw"}, {8})
        m = [pt for pt in pts if pt["transport"] == "metaroce"][0]
        a = plan.mrperf_args(p, dict(m, index=0), "client", "/s", "/j")
        self.assertIn("--metaroce", a)
        self.assertEqual(a[a.index("-n") + 1], "100")           # iterations win over -D
        self.assertNotIn("-D", a)
        # loss profiles change slowest: daemons restart once per profile
        order = [pt["loss"] for pt in pts]
        self.assertEqual(sorted(set(order), key=order.index), ["none", "loss1%", "burst"])
        self.assertEqual(sum(1 for i in range(1, len(order)) if order[i] != order[i - 1]), 2)

    def test_shipped_plans(self):
        for name in ("quick.json", "loss.json"):
            p = plan.load(os.path.join(ROOT, "configs", "plans", name), "/x")
            self.assertEqual(p["transports"], ["roce", "metaroce"])
        self.assertEqual(len(plan.load(os.path.join(ROOT, "configs/plans/loss.json"))["loss"]), 3)


def doc(points, rev="abc"):
    return {"schema": "metaroce-plan-results-1", "timestamp": "2026-01-01T00:00:00Z",
            "versions": {"metaroce": rev}, "plan": {"name": "t"}, "points": points}


def pt(tr, op, size, **kw):
    d = {"transport": tr, "operation": op, "size": size, "loss": "none", "rep": 0,
         "status": "ok", "counters": {"client": {"retransmitted_pkts": 3}}}
    d.update(kw)
    return d


class ResultsCompareTest(unittest.TestCase):
    def test_write(self):
        d = doc([pt("roce", "write_bw", 4096, bw_avg_gbps=1.0, cpu_pct={"client": 50.0}),
                 pt("roce", "write_lat", 4096, lat_p50_us=10.0),
                 pt("roce", "write_bw", 65536, status="failed", error="timeout after 5 s")])
        with tempfile.TemporaryDirectory() as t:
            made = results.write(t, d)
            self.assertEqual(json.load(open(os.path.join(t, "results.json")))["points"][0]
                             ["bw_avg_gbps"], 1.0)
            rows = list(csv.DictReader(open(os.path.join(t, "results.csv"))))
            self.assertEqual(len(rows), 3)
            self.assertEqual(rows[0]["client_retransmitted_pkts"], "3")
            self.assertEqual(rows[0]["cpu_client_pct"], "50.0")
            self.assertEqual(rows[2]["error"], "timeout after 5 s")
            if results.HAVE_MPL:
                self.assertEqual(made, list(results.PLOTS))
                for f in made:
                    self.assertEqual(open(os.path.join(t, f), "rb").read(8), b"\x89PNG\r\n\x1a\n")

    def test_compare_runs(self):
        a = doc([pt("roce", "write_bw", 4096, bw_avg_gbps=1.0),
                 pt("roce", "write_bw", 4096, bw_avg_gbps=3.0, rep=1),   # mean 2.0
                 pt("roce", "write_lat", 4096, lat_p50_us=10.0)], "old")
        b = doc([pt("roce", "write_bw", 4096, bw_avg_gbps=1.5),
                 pt("roce", "write_lat", 4096, lat_p50_us=10.2)], "new")
        out = compare.runs(a, b, "A", "B")
        self.assertIn("-25.0% WORSE", out)                   # 2.0 -> 1.5 Gb/s
        self.assertIn("+2.0%", out)                          # latency within 5%
        self.assertIn("verdict: REGRESSION: 0 points better, 1 worse, 1 within", out)
        self.assertIn("verdict: no regression", compare.runs(a, a, "A", "A"))
        c = doc([pt("roce", "write_lat", 4096, lat_p50_us=5.0)])
        self.assertIn("-50.0% better", compare.runs(a, c, "A", "C"))

    def test_compare_transports(self):
        d = doc([pt("roce", "write_bw", 65536, bw_avg_gbps=0.4, loss="loss1%"),
                 pt("metaroce", "write_bw", 65536, bw_avg_gbps=1.0, loss="loss1%"),
                 pt("roce", "write_bw", 4096, bw_avg_gbps=1.0)])
        out = compare.transports(d)
        self.assertIn("+150.0% better", out)
        self.assertIn("bandwidth ratio 2.50x..2.50x", out)
        self.assertIn("1 points better, 0 worse", out)


if __name__ == "__main__":
    unittest.main(verbosity=1)
