# SPDX-License-Identifier: MIT
"""Comparing result sets (run_plan.py --compare, and RoCE vs MetaRoCE within one run): the
change in percent per point (mean over repetitions) and a verdict line. Bandwidth: higher is
better; latency: lower is better. A change beyond THRESHOLD_PCT counts."""
import json
import os

import results

THRESHOLD_PCT = 5.0


def load(d):
    p = d if d.endswith(".json") else os.path.join(d, "results.json")
    with open(p) as f:
        doc = json.load(f)
    if doc.get("schema") != "metaroce-plan-results-1":
        raise ValueError("%s is not a run-plan results.json" % p)
    return doc


def _points(doc):
    """{(operation, transport, loss, size): (metric name, mean value, higher is better)}"""
    out = {}
    for metric, better_high in (("bw_avg_gbps", True), ("lat_p50_us", False)):
        for (tr, op, loss), pts in results.series(doc, metric).items():
            for size, v in pts:
                out[(op, tr, loss, size)] = (metric, v, better_high)
    return out


def _table(pairs, head_a, head_b):
    lines = ["%-10s %-9s %-14s %9s %-11s %12s %12s %8s" % ("operation", "transport", "loss",
             "size", "metric", head_a[:12], head_b[:12], "change")]
    better = worse = same = 0
    for label, (metric, va, hb), (_, vb, _) in pairs:
        op, tr, loss, size = label
        ch = (vb - va) / va * 100 if va else float("inf")
        good = ch > THRESHOLD_PCT if hb else ch < -THRESHOLD_PCT
        bad = ch < -THRESHOLD_PCT if hb else ch > THRESHOLD_PCT
        better += good
        worse += bad
        same += not good and not bad
        lines.append("%-10s %-9s %-14s %9d %-11s %12.3f %12.3f %+7.1f%%%s" % (
            op, tr, loss, size, "Gb/s" if hb else "us (p50)", va, vb, ch,
            " better" if good else " WORSE" if bad else ""))
    return lines, better, worse, same


def runs(a, b, name_a, name_b):
    """Before (a) vs after (b), point by point."""
    pa, pb = _points(a), _points(b)
    common = sorted(set(pa) & set(pb))
    pairs = [(k, pa[k], pb[k]) for k in common]
    lines, better, worse, same = _table(pairs, "before", "after")
    head = ["compare: before %s (metaroce %s, %s) vs after %s (metaroce %s, %s)" % (
        name_a, a["versions"]["metaroce"], a["timestamp"], name_b, b["versions"]["metaroce"],
        b["timestamp"])]
    only = len(set(pa) ^ set(pb))
    verdict = ("verdict: %s: %d points better, %d worse, %d within +-%.0f%% (of %d compared%s)"
               % ("REGRESSION" if worse else "no regression", better, worse, same,
                  THRESHOLD_PCT, len(common), ", %d only in one run" % only if only else ""))
    return "\n".join(head + lines + [verdict])


def transports(doc):
    """RoCE (go-back-N) vs MetaRoCE in one run: the same operation, loss and size."""
    p = _points(doc)
    pairs = []
    for (op, tr, loss, size), v in sorted(p.items()):
        if tr == "roce" and (op, "metaroce", loss, size) in p:
            pairs.append(((op, "both", loss, size), v, p[(op, "metaroce", loss, size)]))
    if not pairs:
        return "compare: no point ran with both transports"
    lines, better, worse, same = _table(pairs, "roce", "metaroce")
    ratios = [b[1] / a[1] for _, a, b in pairs if a[1] and a[2]]
    verdict = "verdict: MetaRoCE vs RoCE: %d points better, %d worse, %d within +-%.0f%%%s" % (
        better, worse, same, THRESHOLD_PCT,
        "; bandwidth ratio %.2fx..%.2fx" % (min(ratios), max(ratios)) if ratios else "")
    return "\n".join(["compare: RoCE v2 (go-back-N) vs MetaRoCE, same plan"] + lines + [verdict])
