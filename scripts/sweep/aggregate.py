#!/usr/bin/env python3
"""Turn runs.jsonl (one JSON record per run, from mrsim --fabric or a real-mode runner) into
results.json/csv (loss sweep), incast.json/csv and spray.json. goodput_ratio compares each run
with the lossless run of the same mode, transport and setup."""
import csv
import json
import sys

LOSS_COLS = ["mode", "transport", "loss_model", "loss_rate", "goodput_gbps", "goodput_ratio",
             "retransmits", "sack_retransmits", "spurious_retransmits", "timeouts", "p50_us",
             "p99_us", "verified", "fabric_paths", "entropies", "name", "test"]
INCAST_COLS = ["mode", "transport", "cc", "incast", "goodput_gbps", "bottleneck_gbps",
               "goodput_of_bottleneck", "jain", "peak_queue_bytes", "queue_drops", "ce_marks",
               "timeouts", "retransmits", "p99_us", "verified", "name"]


def load(path):
    runs = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                runs.append(json.loads(line))
    return runs


def write(out, stem, cols, rows):
    with open(f"{out}/{stem}.json", "w") as f:
        json.dump(rows, f, indent=1)
    with open(f"{out}/{stem}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (str(r.get(k, "")).lower() if isinstance(r.get(k), bool)
                            else r.get(k, "")) for k in cols})


def main():
    runs, out = load(sys.argv[1]), sys.argv[2]
    loss = [r for r in runs if r.get("experiment") == "loss"]
    base = {}
    for r in loss:
        if r.get("loss_rate") == 0 and r.get("verified"):
            # "test" (real runs: write_bw / send_bw) keeps each test's baseline its own.
            base[(r["mode"], r.get("transport"), r.get("fabric_paths"), r.get("test"))] = \
                r["goodput_gbps"]
    for r in loss:
        b = base.get((r["mode"], r.get("transport"), r.get("fabric_paths"), r.get("test")))
        ok = r.get("verified") is True
        r["verified"] = ok
        r["goodput_ratio"] = round(r["goodput_gbps"] / b, 4) if ok and b else 0.0
        if not ok:
            r["goodput_gbps"] = 0.0  # only verified bytes count
    write(out, "results", LOSS_COLS, loss)
    inc = [r for r in runs if r.get("experiment") == "incast"]
    for r in inc:
        r["verified"] = r.get("verified") is True
    write(out, "incast", INCAST_COLS, inc)
    with open(f"{out}/spray.json", "w") as f:
        json.dump([r for r in runs if r.get("experiment") == "spray"], f, indent=1)
    w = max([len(c) for c in LOSS_COLS[:13]])
    print(" ".join(c[:12].rjust(12) for c in LOSS_COLS[:13]))
    for r in loss:
        print(" ".join(str(r.get(c, ""))[:12].rjust(12) for c in LOSS_COLS[:13]))
    for r in inc:
        print(f"incast {r.get('incast')}:1 {r.get('transport')}/{r.get('cc')}: "
              f"{r.get('goodput_gbps', 0):.2f} Gb/s ({r.get('goodput_of_bottleneck', 0):.3f} of "
              f"bottleneck), Jain {r.get('jain', 0):.3f}, peak queue "
              f"{r.get('peak_queue_bytes', 0)} B, drops {r.get('queue_drops', 0)}, timeouts "
              f"{r.get('timeouts', 0)}, verified {r.get('verified')}")
    for r in runs:
        if r.get("experiment") == "spray":
            print(f"spray {r.get('fabric_paths')} paths: spurious retransmits "
                  f"{r.get('spurious_retransmits')} of {r.get('data_pkts')} data packets "
                  f"({100 * r.get('spurious_frac', 0):.3f}%), verified {r.get('verified')}")
    del w


if __name__ == "__main__":
    main()
