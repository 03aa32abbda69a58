# SPDX-License-Identifier: MIT
"""A plan's results (run_plan.py): results.json (everything), results.csv (one row per point,
counters flattened) and PNG plots, bandwidth and latency against message size, one line per
transport / operation / loss profile (mean over repetitions)."""
import csv
import json
import os

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    HAVE_MPL = True
except ImportError:  # plots need python3-matplotlib (scripts/lib/deps.sh)
    HAVE_MPL = False

PLOTS = ("bandwidth_vs_size.png", "latency_vs_size.png")
COLUMNS = ("index", "timestamp", "metaroce", "loss", "transport", "operation", "size", "rep",
           "status", "attempts", "iterations", "bw_avg_gbps", "bw_peak_gbps", "msg_rate_mpps",
           "lat_min_us", "lat_p50_us", "lat_avg_us", "lat_p99_us", "lat_p999_us", "lat_max_us",
           "wall_s", "cpu_client_pct", "cpu_server_pct", "cpu_daemon_a_pct", "cpu_daemon_b_pct",
           "error")


def _rows(doc):
    for r in doc["points"]:
        row = {k: r.get(k, "") for k in COLUMNS}
        row["timestamp"] = doc["timestamp"]
        row["metaroce"] = doc["versions"]["metaroce"]
        for k, v in r.get("cpu_pct", {}).items():
            row["cpu_%s_pct" % k] = v
        for side, c in sorted(r.get("counters", {}).items()):
            for k, v in sorted(c.items()):
                row["%s_%s" % (side, k)] = v
        yield row


def series(doc, metric):
    """{(transport, operation, loss): [(size, mean metric)]} over the ok points."""
    acc = {}
    for r in doc["points"]:
        if r.get("status") != "ok" or r.get(metric) in (None, ""):
            continue
        acc.setdefault((r["transport"], r["operation"], r["loss"]), {}).setdefault(
            r["size"], []).append(r[metric])
    return {k: sorted((s, sum(v) / len(v)) for s, v in d.items()) for k, d in acc.items()}


def _plot(doc, metric, ylabel, path, title):
    s = series(doc, metric)
    if not s:
        return False
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (tr, op, loss), pts in sorted(s.items()):
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                label="%s %s%s" % (tr, op, "" if loss == "none" else " @" + loss))
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write(out, doc):
    tmp = os.path.join(out, "results.json.tmp")
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=False)
        f.write("\n")
    os.replace(tmp, os.path.join(out, "results.json"))
    rows = list(_rows(doc))
    extra = sorted({k for r in rows for k in r} - set(COLUMNS))
    with open(os.path.join(out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(COLUMNS) + extra, restval="")
        w.writeheader()
        for r in rows:
            w.writerow(r)
    made = []
    if HAVE_MPL:
        title = "%s (metaroce %s)" % (doc["plan"].get("name", "plan"), doc["versions"]["metaroce"])
        if _plot(doc, "bw_avg_gbps", "bandwidth (Gb/s, average)",
                 os.path.join(out, PLOTS[0]), title):
            made.append(PLOTS[0])
        if _plot(doc, "lat_p50_us", "latency (us, typical)", os.path.join(out, PLOTS[1]), title):
            made.append(PLOTS[1])
    return made
