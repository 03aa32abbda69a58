#!/usr/bin/env python3
"""Goodput vs loss per transport (DIR/goodput_vs_loss.png, DIR/goodput_ratio_vs_loss.png) from
DIR/results.json, and incast goodput/fairness bars (DIR/incast.png) from DIR/incast.json."""
import json
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    out = sys.argv[1]
    rows = json.load(open(f"{out}/results.json"))
    for key, fname, label in (("goodput_gbps", "goodput_vs_loss.png", "goodput (Gb/s)"),
                              ("goodput_ratio", "goodput_ratio_vs_loss.png",
                               "goodput / lossless")):
        fig, ax = plt.subplots(figsize=(6, 4))
        for mode in sorted({r["mode"] for r in rows}):
            for t in sorted({r["transport"] for r in rows if "transport" in r}):
                pts = sorted((r["loss_rate"], r[key]) for r in rows
                             if r["mode"] == mode and r.get("transport") == t
                             and r.get("loss_model") == "random")
                if pts:
                    ax.plot([100 * p[0] for p in pts], [p[1] for p in pts], marker="o",
                            label=f"{t} ({mode}, random)")
                b = [r for r in rows if r["mode"] == mode and r.get("transport") == t
                     and r.get("loss_model") == "bursty"]
                for r in b:
                    ax.scatter([100 * r["loss_rate"]], [r[key]], marker="x", s=60,
                               label=f"{t} ({mode}, bursty mean 4)")
        ax.set_xscale("symlog", linthresh=0.1)
        ax.set_xlabel("packet loss (%)")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(f"{out}/{fname}", dpi=120)
        plt.close(fig)
    try:
        inc = json.load(open(f"{out}/incast.json"))
    except OSError:
        inc = []
    if inc:
        fig, ax = plt.subplots(figsize=(6, 4))
        names = [f"{r.get('incast')}:1 {r.get('transport')}/{r.get('cc')}" for r in inc]
        ax.bar(names, [r.get("goodput_of_bottleneck", 0) for r in inc], label="goodput/bottleneck")
        ax.plot(names, [r.get("jain", 0) for r in inc], "ko", label="Jain")
        ax.set_ylim(0, 1.05)
        ax.tick_params(axis="x", labelrotation=20, labelsize=8)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(f"{out}/incast.png", dpi=120)
        plt.close(fig)


if __name__ == "__main__":
    main()
